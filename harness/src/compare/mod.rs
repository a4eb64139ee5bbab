//! `lockpick compare`: runs a matrix of locks × nemeses × fencing modes with the same seed and
//! knobs per cell, judges each cell against what it was expected to show, and writes what CI
//! systems read. The matrix comes from the flags or from a matrix file (`matrix`); planning
//! (`plan`) builds each cell's configuration as `lockpick run` would, a refused cell being
//! n/a; each finished cell is judged (`cell`); the outputs (`outputs`) are the table, the
//! grid page, JUnit, JSON and `summary.md`.
//!
//! The exit code is the gate: 1 when a cell broke its expectation, 2 when one could not prove
//! it (or the comparison was interrupted), 0 when every expectation held. Without a matrix file
//! every cell is expected valid, so a comparison exits as a run does.

pub mod cell;
pub mod matrix;
mod outputs;
mod plan;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use lockpick_checkers::model;

use crate::cli::CompareArgs;
use crate::config::RunConfig;
use crate::report;
use crate::run;
use crate::summary_md::{self, Counts};
use cell::{Cell, Figures, Judgement, Outcome};
pub use outputs::{GRID, JSON, TABLE};
use plan::PlannedCell;

/// Runs the comparison and returns its exit code (see the module's doc).
pub fn compare(args: &CompareArgs, interrupt: Arc<AtomicBool>) -> Result<u8> {
    let plan = plan::plan(args)?;
    summary_md::runs_publish_step_summary(false);
    let runnable = plan.cells.iter().filter(|c| c.config.is_ok()).count();
    eprintln!(
        "lockpick compare: {} cells ({} n/a), seed {}, {} at a time",
        plan.cells.len(),
        plan.cells.len() - runnable,
        plan.seed,
        plan.parallel
    );
    let finished: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    let queue = Mutex::new(plan.cells.iter().enumerate());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..plan.parallel {
            scope.spawn(|| loop {
                let Some((index, planned)) = queue.lock().unwrap().next() else {
                    return;
                };
                let config = match &planned.config {
                    Ok(config) => config,
                    Err(reason) => {
                        let reason = reason.clone();
                        let outcome = Outcome::NotApplicable { reason };
                        finished.lock().unwrap().push((index, outcome));
                        continue;
                    }
                };
                if interrupt.load(Ordering::SeqCst) {
                    return;
                }
                match run_cell(config, Arc::clone(&interrupt)) {
                    Ok(Some(figures)) => {
                        let mut done = finished.lock().unwrap();
                        let ran = done.iter().filter(|(_, o)| matches!(o, Outcome::Ran(_)));
                        let judged = Cell::new(
                            planned.name.clone(),
                            &planned.expected,
                            Outcome::Ran(Box::new(figures.clone())),
                        );
                        eprintln!(
                            "[{}/{runnable}] {}: {} (expected {}: {})",
                            ran.count() + 1,
                            planned.name,
                            figures.verdict,
                            planned.expected.words(),
                            match &judged.judgement {
                                Judgement::Holds => "as expected",
                                Judgement::Broken(_) => "NOT as expected",
                                _ => "unproven",
                            }
                        );
                        done.push((index, Outcome::Ran(Box::new(figures))));
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
    outcomes.sort_by_key(|(index, _)| *index);
    let cells: Vec<Cell> = outcomes
        .into_iter()
        .map(|(index, outcome)| {
            let planned: &PlannedCell = &plan.cells[index];
            Cell::new(planned.name.clone(), &planned.expected, outcome)
        })
        .collect();
    let interrupted = interrupt.load(Ordering::SeqCst);
    let ran = cells.iter().filter(|c| c.figures().is_some()).count();
    let code = exit_code(&cells, interrupted);
    write_outputs(&plan, &cells, interrupted, ran, runnable, code)?;
    Ok(code)
}

/// 2 when interrupted; else 1 if any expectation broke, 2 if any is unproven, 0 otherwise.
fn exit_code(cells: &[Cell], interrupted: bool) -> u8 {
    let any = |f: fn(&Judgement) -> bool| cells.iter().any(|c| f(&c.judgement));
    if interrupted {
        2
    } else if any(|j| matches!(j, Judgement::Broken(_))) {
        1
    } else if any(|j| matches!(j, Judgement::Unproven(_))) {
        2
    } else {
        0
    }
}

fn write_outputs(
    plan: &plan::Plan,
    cells: &[Cell],
    interrupted: bool,
    ran: usize,
    runnable: usize,
    code: u8,
) -> Result<()> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let dir = plan.store.join("compare").join(stamp);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {dir:?}"))?;
    let mut notes = Vec::new();
    if let Some(matrix) = &plan.from_matrix {
        notes.push(format!("Expectations from {}.", matrix.display()));
    }
    if interrupted {
        notes.push(format!(
            "interrupted: {ran} of {runnable} cells ran to their end"
        ));
    }
    let seed = plan.seed;
    let mut table = outputs::table_markdown(cells, seed);
    for note in &notes {
        table.push_str(&format!("\n{note}\n"));
    }
    std::fs::write(dir.join(TABLE), &table)?;
    std::fs::write(dir.join(GRID), outputs::page(cells, seed, &dir, &notes))?;
    let xml = outputs::junit(cells, seed, &dir).context("cannot render junit.xml")?;
    std::fs::write(dir.join(report::JUNIT), xml)?;
    let stored = outputs::Stored {
        seed,
        matrix: plan.from_matrix.as_deref(),
        interrupted,
        exit_code: code,
        cells,
    };
    std::fs::write(
        dir.join(JSON),
        serde_json::to_string_pretty(&stored)? + "\n",
    )?;
    let title = format!(
        "lockpick compare: {} (seed {seed})",
        match code {
            0 => "every expectation met",
            1 => "an expectation was NOT met",
            _ => "not proven",
        }
    );
    let summary = summary_md::render(&title, &outputs::summary_cells(cells, &dir), &notes);
    summary_md::publish(&dir, &summary)?;
    report::write_index(&plan.store)?;
    print!("{table}");
    for c in cells {
        match &c.judgement {
            Judgement::Broken(why) => println!("NOT AS EXPECTED: {}: {why}", c.name),
            Judgement::Unproven(why) => println!("UNPROVEN: {}: {why}", c.name),
            _ => {}
        }
        if let Some(f) = (c.figures()).filter(|f| f.verdict == lockpick_checkers::Validity::Invalid)
        {
            println!(
                "smallest failing schedule of {}: lockpick shrink {}",
                c.name,
                f.dir.display()
            );
        }
    }
    println!("\nwritten to {}", dir.display());
    Ok(())
}

/// Runs one cell; `None` if it was interrupted before its end.
fn run_cell(config: &RunConfig, interrupt: Arc<AtomicBool>) -> Result<Option<Figures>> {
    let started = Instant::now();
    let finished = run::run(config, interrupt)?;
    if finished.interrupted {
        return Ok(None);
    }
    let model = &finished.model;
    let r = &finished.results;
    let ms = |q| {
        let latency = finished.history.acquire_latency_percentile(q);
        latency.map(|ns| ns as f64 / 1e6)
    };
    Ok(Some(Figures {
        verdict: r.valid,
        counts: Counts::of(r),
        acquisitions: model.holds.len(),
        p50_ms: ms(0.5),
        p99_ms: ms(0.99),
        unavailability: unavailability(model, config.time_limit.as_nanos() as u64),
        unknown_reasons: r.unknown_reasons.clone(),
        undecidable: r.overlapping_holders.as_ref().map_or(0, |o| o.undecidable),
        first_story: r.stories.first().map(|s| s.one_line()),
        first_stale_write: Figures::story_of(r, &["stale-write"]),
        first_grant_under_live_lease: Figures::first_grant_story(r),
        servers: Figures::servers_line(&finished.history.setup, !config.server_bins.is_empty()),
        dir: finished.dir,
        seed: config.seed,
        took: started.elapsed(),
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
