//! `lockpick compare`: runs a matrix of locks × nemeses × fencing modes with the same seed and
//! time limit per cell, and writes the comparison table users put in their CI summaries: per
//! cell, overlapping holders, stale writes accepted, acquisitions, acquire latency p50/p99 and
//! unavailability (the share of the run in which no client held the lock). Printed, and written
//! as `compare.md` and `compare.html` (linking each cell's report) under `<store>/compare/`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use lockpick_checkers::model;
use maud::{html, PreEscaped, DOCTYPE};

use crate::cli::{CompareArgs, Fencing, RunArgs};
use crate::config::{bad, RunConfig};
use crate::report;
use crate::run;

/// Parses the flags of one cell exactly as `lockpick run` would.
#[derive(Parser)]
struct CellCommand {
    #[command(flatten)]
    run: RunArgs,
}

/// One cell's figures.
struct Cell {
    lock: String,
    nemesis: String,
    fencing: String,
    verdict: String,
    overlaps: usize,
    stale_writes: u64,
    acquisitions: usize,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    unavailability: f64,
    dir: PathBuf,
}

/// Runs the matrix. Returns the exit code: 0 when every cell ran, 2 when interrupted (the
/// cells that finished are still tabulated).
pub fn compare(args: &CompareArgs, interrupt: Arc<AtomicBool>) -> Result<u8> {
    let seed = args.seed.unwrap_or_else(rand::random);
    let cells = plan_cells(args, seed)?;
    let total = cells.len();
    eprintln!(
        "lockpick compare: {total} cells, seed {seed}, {} at a time",
        args.parallel
    );
    let results: Mutex<Vec<Cell>> = Mutex::new(Vec::new());
    let queue = Mutex::new(cells.into_iter());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..args.parallel {
            scope.spawn(|| loop {
                let Some((lock, nemesis, fencing, config)) = queue.lock().unwrap().next() else {
                    return;
                };
                if interrupt.load(Ordering::SeqCst) {
                    return;
                }
                match run_cell(&lock, &nemesis, &fencing, &config, Arc::clone(&interrupt)) {
                    Ok(Some(cell)) => {
                        let mut done = results.lock().unwrap();
                        eprintln!(
                            "[{}/{total}] {lock} × {nemesis} (fencing {fencing}): {}",
                            done.len() + 1,
                            cell.verdict
                        );
                        done.push(cell);
                    }
                    Ok(None) => return, // interrupted: the flag is already set
                    Err(e) => {
                        failure.lock().unwrap().get_or_insert(e);
                        interrupt.store(true, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(e.context("a cell of the comparison failed"));
    }
    let mut cells = results.into_inner().unwrap();
    cells.sort_by(|a, b| (&a.lock, &a.nemesis, &a.fencing).cmp(&(&b.lock, &b.nemesis, &b.fencing)));
    let interrupted = interrupt.load(Ordering::SeqCst);
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let dir = args.store.join("compare").join(stamp);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {dir:?}"))?;
    let mut markdown = table_markdown(&cells, seed);
    if interrupted {
        let _ = writeln!(
            markdown,
            "\ninterrupted: {} of {total} cells ran to their end",
            cells.len()
        );
    }
    std::fs::write(dir.join("compare.md"), &markdown)?;
    std::fs::write(dir.join("compare.html"), table_html(&cells, seed, &dir))?;
    print!("{markdown}");
    println!("\nwritten to {}", dir.display());
    Ok(if interrupted { 2 } else { 0 })
}

/// Most cells at once: each runs its own servers, clients and namespaces.
const MAX_PARALLEL: usize = 16;

/// Checks every list item against the known names and builds each cell's configuration exactly
/// as `lockpick run` would, before any cell runs. Values go to the cell's parser as whole words,
/// so nothing in a list or a value can smuggle a flag into a cell.
fn plan_cells(args: &CompareArgs, seed: u64) -> Result<Vec<(String, String, String, RunConfig)>> {
    if args.parallel == 0 || args.parallel > MAX_PARALLEL {
        return Err(bad(format!(
            "--parallel {} must be between 1 and {MAX_PARALLEL}",
            args.parallel
        )));
    }
    let locks = known("--locks", &args.locks, ',', &crate::locks::names())?;
    let fencing_names: Vec<&str> = Fencing::value_variants().iter().map(|f| f.name()).collect();
    let fencings = known("--fencing", &args.fencing, ',', &fencing_names)?;
    let nemeses = list("--nemeses", &args.nemeses, ',')?;
    let mut nemesis_names = crate::nemesis::names();
    nemesis_names.push(crate::nemesis::NONE);
    for nemesis in &nemeses {
        known("--nemeses", nemesis, '+', &nemesis_names)?;
    }
    let store = std::path::absolute(&args.store)
        .map_err(|e| bad(format!("--store {}: {e}", args.store.display())))?;
    crate::store::check_writable(&store, "compare")?;
    let mut cells = Vec::new();
    for lock in &locks {
        for nemesis in &nemeses {
            for fencing in &fencings {
                let words: Vec<String> = [
                    "lockpick",
                    "--lock",
                    lock,
                    "--nemesis",
                    &nemesis.replace('+', ","),
                    "--fencing",
                    fencing,
                    "--time-limit",
                    &args.time_limit,
                    "--clients",
                    &args.clients.to_string(),
                    "--ttl",
                    &args.ttl,
                    "--seed",
                    &seed.to_string(),
                    "--store",
                    &store.display().to_string(),
                ]
                .iter()
                .map(|w| w.to_string())
                .collect();
                let parsed = CellCommand::try_parse_from(&words)
                    .map_err(|e| bad(format!("bad cell {lock} × {nemesis}: {}", e.kind())))?;
                let mut command = vec!["lockpick".to_string(), "run".to_string()];
                command.extend(words[1..].iter().cloned());
                let config = RunConfig::from_args(&parsed.run, command)?;
                run::preflight(&config)?;
                cells.push((
                    lock.to_string(),
                    nemesis.to_string(),
                    fencing.to_string(),
                    config,
                ));
            }
        }
    }
    Ok(cells)
}

/// The items of a `separator`-separated list; none may be empty.
fn list<'a>(flag: &str, text: &'a str, separator: char) -> Result<Vec<&'a str>> {
    let items: Vec<&str> = text.split(separator).collect();
    if items.iter().any(|item| item.is_empty()) {
        return Err(bad(format!(
            "{flag} {text:?} has an empty item: separate names with {separator:?}"
        )));
    }
    Ok(items)
}

/// The items of a list, each of which must be one of `names` exactly.
fn known<'a>(flag: &str, text: &'a str, separator: char, names: &[&str]) -> Result<Vec<&'a str>> {
    let items = list(flag, text, separator)?;
    for item in &items {
        if !names.contains(item) {
            return Err(bad(format!(
                "{flag}: {item:?} is not one of {}",
                names.join(", ")
            )));
        }
    }
    Ok(items)
}

/// Runs one cell; `None` if it was interrupted before its end.
fn run_cell(
    lock: &str,
    nemesis: &str,
    fencing: &str,
    config: &RunConfig,
    interrupt: Arc<AtomicBool>,
) -> Result<Option<Cell>> {
    let finished = run::run(config, interrupt)?;
    if finished.interrupted {
        return Ok(None);
    }
    let ops = &finished.ops;
    let model = model::build(ops).unwrap_or_default();
    let r = &finished.results;
    let ms = |q| report::acquire_latency_percentile(ops, q).map(|ns| ns as f64 / 1e6);
    Ok(Some(Cell {
        lock: lock.to_string(),
        nemesis: nemesis.to_string(),
        fencing: fencing.to_string(),
        verdict: r.valid.to_string(),
        overlaps: r
            .overlapping_holders
            .as_ref()
            .map_or(0, |o| o.overlaps.len()),
        stale_writes: r
            .stale_accesses
            .as_ref()
            .map_or(0, |s| s.stale_writes as u64),
        acquisitions: model.holds.len(),
        p50_ms: ms(0.5),
        p99_ms: ms(0.99),
        unavailability: unavailability(&model, config.time_limit.as_nanos() as u64),
        dir: finished.dir,
    }))
}

/// The share of `[0, limit]` in which no client believed it held the lock.
fn unavailability(model: &model::Model, limit: u64) -> f64 {
    let mut spans: Vec<(u64, u64)> = model
        .holds
        .iter()
        .map(|h| (h.start.min(limit), h.end.min(limit)))
        .collect();
    spans.sort_unstable();
    let (mut covered, mut reach) = (0u64, 0u64);
    for (start, end) in spans {
        let start = start.max(reach);
        if end > start {
            covered += end - start;
            reach = end;
        }
    }
    1.0 - covered as f64 / limit.max(1) as f64
}

fn latency(ms: Option<f64>) -> String {
    ms.map_or("-".to_string(), |v| format!("{v:.1}"))
}

fn table_markdown(cells: &[Cell], seed: u64) -> String {
    let mut out = format!(
        "# lockpick compare (seed {seed})\n\n| lock | nemesis | fencing | verdict | overlapping holders | stale writes accepted | acquisitions | acquire p50 ms | acquire p99 ms | unavailability |\n|---|---|---|---|---|---|---|---|---|---|\n"
    );
    for c in cells {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0}% |",
            c.lock,
            c.nemesis,
            c.fencing,
            c.verdict,
            c.overlaps,
            c.stale_writes,
            c.acquisitions,
            latency(c.p50_ms),
            latency(c.p99_ms),
            c.unavailability * 100.0
        );
    }
    out
}

fn table_html(cells: &[Cell], seed: u64, dir: &Path) -> String {
    let title = format!("lockpick compare (seed {seed})");
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) }
                style { (PreEscaped(report::STYLE)) }
            }
            body {
                h1 { (title) }
                table {
                    tr {
                        th { "lock" } th { "nemesis" } th { "fencing" } th { "verdict" }
                        th { "overlapping holders" } th { "stale writes accepted" }
                        th { "acquisitions" } th { "acquire p50 ms" } th { "acquire p99 ms" }
                        th { "unavailability" }
                    }
                    @for c in cells {
                        tr {
                            td { (c.lock) } td { (c.nemesis) } td { (c.fencing) }
                            td class=(c.verdict) {
                                a href=(relative(dir, &c.dir.join(report::REPORT))) { (c.verdict) }
                            }
                            td { (c.overlaps) } td { (c.stale_writes) } td { (c.acquisitions) }
                            td { (latency(c.p50_ms)) } td { (latency(c.p99_ms)) }
                            td { (format!("{:.0}%", c.unavailability * 100.0)) }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}

/// `target` as seen from the folder `from` (both under the same store).
fn relative(from: &Path, target: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = target.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for c in &to[common..] {
        path.push(c);
    }
    path.display().to_string()
}
