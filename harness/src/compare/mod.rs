//! `lockpick compare`: runs a matrix of locks × nemeses × fencing modes with the same seed and
//! knobs per cell, judges each cell against what it was expected to show, and writes what CI
//! systems read. Its rooms, in the order a comparison goes through them:
//!
//! - `plan/`: the matrix (from the flags or a matrix file), checked against the catalogues,
//!   each cell's configuration built as `lockpick run` would (a refused cell is n/a);
//! - running the planned cells is here, in this file (and `shrink_cells` after them);
//! - `judge/`: each finished cell against its expectation, over its repeats;
//! - `outputs/`: the table, the grid page, JUnit, JSON and `summary.md`, published into a new
//!   folder (the same for `compare` and `merge`);
//! - `shards/`: `--shard K/N` runs only its cells of the plan and keeps what `merge` needs to
//!   judge them again and join the shards into the outputs of one comparison.
//!
//! The exit code is the gate: 1 when a cell broke its expectation, 2 when one could not prove
//! it (or the comparison was interrupted), 0 when every expectation held. Without a matrix file
//! every cell is expected valid, so a comparison exits as a run does.

// The rooms (the module doc above says what each holds).
pub mod judge;
pub mod outputs;
pub mod plan;
pub mod shards;
mod shrink_cells;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;

use crate::cli::CompareArgs;
use crate::config::RunConfig;
use crate::report::links::Links;
use crate::report::summary_md;
use crate::run;
use judge::cell::{Cell, Figures, Judgement, Outcome};
use judge::judgement::Measured;
pub use outputs::{GRID, JSON, TABLE};
use plan::PlannedCell;
pub use shards::merge::merge;
use shards::record::{CellResult, RepeatRecord, ShardPart};

/// Runs the comparison and returns its exit code (see the module's doc). With `--report-to`,
/// what stopped it is written there too.
pub fn compare(args: &CompareArgs, interrupt: Arc<AtomicBool>) -> Result<u8> {
    let result = compare_planned(args, interrupt);
    if let (Err(error), Some(to)) = (&result, &args.report_to) {
        if let Err(e) = outputs::report_to::failed(to, args.matrix.as_deref(), error) {
            eprintln!("lockpick: {e:#}");
        }
    }
    result
}

fn compare_planned(args: &CompareArgs, interrupt: Arc<AtomicBool>) -> Result<u8> {
    if args.check || args.list {
        let mut plan = plan::plan(args, plan::Checks::MatrixOnly)?;
        if let Some(shard) = args.shard {
            let (records, _) = shards::record::planned(&plan);
            let mut members = shards::record::members(&records, shard).into_iter();
            plan.cells.retain(|_| members.next().unwrap_or(false));
        }
        if args.json {
            println!("{}", plan::listing::json(&plan));
        } else {
            for line in plan::listing::lines(&plan) {
                println!("{line}");
            }
            if args.check {
                println!("{}", plan::listing::checked(&plan));
            }
        }
        return Ok(0);
    }
    let shrink_settings = shrink_cells::Settings::of(args)?;
    let plan = plan::plan(args, plan::Checks::MatrixAndMachine)?;
    // A shard runs its own cells of the whole plan (every cell, without --shard).
    let (records, fingerprint) = shards::record::planned(&plan);
    let in_shard = match args.shard {
        Some(shard) => shards::record::members(&records, shard),
        None => vec![true; plan.cells.len()],
    };
    let mine = || plan.cells.iter().zip(&in_shard).filter(|(_, &m)| m);
    let runnable = mine().filter(|(c, _)| c.configs.is_ok()).count();
    let repeats = plan.seeds.len();
    if let Some(shard) = args.shard {
        crate::tell!(
            "lockpick compare: shard {shard}: {} of the matrix's {} cells",
            mine().count(),
            plan.cells.len()
        );
    }
    crate::tell!(
        "lockpick compare: {} cells ({} n/a), seed {}, {} at a time",
        mine().count(),
        mine().count() - runnable,
        plan.seed,
        plan.parallel
    );
    if repeats > 1 {
        let seeds: Vec<String> = plan.seeds.iter().map(|s| s.to_string()).collect();
        crate::tell!(
            "lockpick compare: {repeats} repeats of every cell, seeds {}",
            seeds.join(", ")
        );
    }
    // One job per cell and repeat; an n/a cell is one job that runs nothing.
    let jobs: Vec<(usize, usize)> = plan
        .cells
        .iter()
        .enumerate()
        .filter(|(i, _)| in_shard[*i])
        .flat_map(|(i, c)| {
            let n = c.configs.as_ref().map_or(1, |configs| configs.len());
            (0..n).map(move |r| (i, r))
        })
        .collect();
    let total = runnable * repeats;
    let finished: Mutex<Vec<(usize, usize, Outcome)>> = Mutex::new(Vec::new());
    let queue = Mutex::new(jobs.into_iter());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..plan.parallel {
            scope.spawn(|| loop {
                let Some((index, repeat)) = queue.lock().unwrap().next() else {
                    return;
                };
                let planned = &plan.cells[index];
                let config = match &planned.configs {
                    Ok(configs) => &configs[repeat],
                    Err(reason) => {
                        let reason = reason.clone();
                        let outcome = Outcome::NotApplicable { reason };
                        finished.lock().unwrap().push((index, repeat, outcome));
                        continue;
                    }
                };
                if interrupt.load(Ordering::SeqCst) {
                    return;
                }
                match run_cell(config, Arc::clone(&interrupt)) {
                    Ok(Some(figures)) => {
                        let mut done = finished.lock().unwrap();
                        let ran = done.iter().filter(|(_, _, o)| matches!(o, Outcome::Ran(_)));
                        let judged = Cell::new(
                            planned.name.clone(),
                            &planned.expected,
                            vec![Outcome::Ran(Box::new(figures.clone()))],
                        );
                        let which = if repeats > 1 {
                            format!(" repeat {}/{repeats} (seed {})", repeat + 1, config.seed)
                        } else {
                            String::new()
                        };
                        let decided = figures
                            .decided_at
                            .map_or(String::new(), |s| format!(", decided at {s:.1} s"));
                        crate::tell!(
                            "[{}/{total}] {}{which}: {} (expected {}: {}{decided})",
                            ran.count() + 1,
                            crate::text::terminal::field(&planned.name.to_string()),
                            figures.verdict,
                            planned.expected.words(),
                            match &judged.judgement {
                                Judgement::Holds => "as expected",
                                Judgement::Broken(_) => "NOT as expected",
                                _ => "unproven",
                            }
                        );
                        done.push((index, repeat, Outcome::Ran(Box::new(figures))));
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
    let mut outcomes = finished.into_inner().unwrap();
    outcomes.sort_by_key(|(index, repeat, _)| (*index, *repeat));
    let interrupted = interrupt.load(Ordering::SeqCst);
    let shard = args.shard.map(|shard| ShardPart {
        k: shard.k,
        n: shard.n,
        fingerprint: fingerprint.clone(),
        seed: plan.seed,
        seeds: plan.seeds.clone(),
        matrix: plan.from_matrix.clone(),
        interrupted,
        plan: records.clone(),
        results: (0..plan.cells.len())
            .filter(|i| in_shard[*i])
            .map(|index| CellResult {
                index,
                repeats: (outcomes.iter())
                    .filter(|(i, _, _)| *i == index)
                    .map(|(_, _, o)| RepeatRecord::of(o))
                    .collect(),
            })
            .collect(),
    });
    // Every planned cell is listed: one the interruption kept from its end as not run.
    let cells: Vec<Cell> = plan
        .cells
        .iter()
        .enumerate()
        .filter(|(index, _)| in_shard[*index])
        .map(|(index, planned): (usize, &PlannedCell)| {
            let mut of_cell: Vec<Outcome> = outcomes
                .iter()
                .filter(|(i, _, _)| *i == index)
                .map(|(_, _, o)| o.clone())
                .collect();
            if of_cell.is_empty() {
                of_cell.push(Outcome::NotRun);
            }
            Cell::new(planned.name.clone(), &planned.expected, of_cell)
        })
        .collect();
    let ran = cells.iter().filter(|c| c.figures().is_some()).count();
    let code = outputs::publish::exit_code(&cells, interrupted);
    let links = Links::new(args.link_base.as_deref(), &plan.store, |key| {
        std::env::var(key).ok()
    });
    let comparison = outputs::publish::Comparison {
        store: &plan.store,
        seed: plan.seed,
        seeds: &plan.seeds,
        from_matrix: plan.from_matrix.as_deref(),
        interrupted,
        ran,
        runnable,
        exit_code: code,
        shard: shard.as_ref(),
    };
    // With --shrink, the summary is published once, with the shrinks; the files written
    // before them stay if the shrinks are interrupted.
    let dir = outputs::publish::folder(&plan.store)?;
    outputs::publish::write(&comparison, &cells, &links, &dir, shrink_settings.is_none())?;
    if args.shard.is_some() {
        // What `merge` judges the shard's cells by: their own histories.
        for (index, repeat, outcome) in &outcomes {
            if let Outcome::Ran(f) = outcome {
                shards::runs::keep(&f.dir, &dir, &shards::runs::name(*index, *repeat))?;
            }
        }
    }
    if let Some(settings) = &shrink_settings {
        // The gate is decided: a shrink adds what it finds, and changes no verdict or code.
        let shrinks = shrink_cells::shrink_broken(&plan, &cells, settings, Arc::clone(&interrupt))?;
        shrink_cells::tell(&shrinks);
        let summary = outputs::publish::summary(&comparison, &cells, &links, &dir, &shrinks);
        summary_md::publish(&dir, &summary)?;
        crate::say!(
            "\nsummary with the shrinks: {}",
            crate::text::terminal::field(&dir.join(summary_md::SUMMARY).display().to_string())
        );
    }
    if let Some(to) = &args.report_to {
        outputs::report_to::copy(&dir, to)?;
    }
    Ok(code)
}

/// Runs one cell; `None` if it was interrupted before its end.
fn run_cell(config: &RunConfig, interrupt: Arc<AtomicBool>) -> Result<Option<Figures>> {
    let started = Instant::now();
    let finished = run::run(config, interrupt, summary_md::RunSummary::FolderOnly)?;
    finished.left_nothing_behind()?;
    if finished.interrupted {
        return Ok(None);
    }
    Ok(Some(Figures::measure(
        Measured {
            results: &finished.results,
            model: &finished.model,
            history: &finished.history,
            time_limit: config.time_limit,
            show_programs: !config.server_bins.is_empty(),
        },
        finished.dir,
        config.command.clone(),
        config.seed,
        started.elapsed(),
    )))
}
