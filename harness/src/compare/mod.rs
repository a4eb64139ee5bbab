//! `lockpick compare`: runs a matrix of locks × nemeses × fencing modes with the same seed and
//! knobs per cell, judges each cell against what it was expected to show, and writes what CI
//! systems read. Its rooms, in the order a comparison goes through them:
//!
//! - `plan/`: the matrix (from the flags or a matrix file), checked against the catalogues,
//!   each cell's configuration built as `lockpick run` would (a refused cell is n/a);
//! - `run_cells`: running the planned cells (and `shrink_cells` after them), `pace` lowering
//!   how many run at once when they slow down;
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
pub mod pace;
pub mod plan;
pub(crate) mod run_cells;
pub mod shards;
mod shrink_cells;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;

use crate::cli::CompareArgs;
use crate::report::links::Links;
use crate::report::summary_md;
use judge::cell::{Cell, Outcome};
pub use outputs::{GRID, JSON, TABLE};
use plan::{Plan, PlannedCell};
use run_cells::Finished;
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

/// The stages of a comparison in their order: plan, run, judge, publish (and shrink).
fn compare_planned(args: &CompareArgs, interrupt: Arc<AtomicBool>) -> Result<u8> {
    if args.check || args.list {
        return list_plan(args);
    }
    let shrink_settings = shrink_cells::Settings::of(args)?;
    let plan = plan::plan(args, plan::Checks::MatrixAndMachine)?;
    // A shard runs its own cells of the whole plan (every cell, without --shard).
    let (records, fingerprint) = shards::record::planned(&plan);
    let in_shard = match args.shard {
        Some(shard) => shards::record::members(&records, shard),
        None => vec![true; plan.cells.len()],
    };
    let runnable = announce(args, &plan, &in_shard);
    let (outcomes, parallelism) = run_cells::run_all(&plan, &in_shard, runnable, &interrupt)?;
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
        results: shard_results(&plan, &in_shard, &outcomes),
    });
    let cells = cells_of(&plan, &in_shard, &outcomes);
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
        parallelism: Some(&parallelism),
    };
    // With --shrink, the summary is published once, with the shrinks; the files written
    // before them stay if the shrinks are interrupted.
    let dir = outputs::publish::folder(&plan.store)?;
    outputs::publish::write(&comparison, &cells, &links, &dir, shrink_settings.is_none())?;
    if args.shard.is_some() {
        keep_shard_runs(&outcomes, &dir)?;
    }
    if let Some(settings) = &shrink_settings {
        let written = Written {
            comparison: &comparison,
            cells: &cells,
            links: &links,
            dir: &dir,
        };
        shrink_broken(&plan, &written, settings, &interrupt)?;
    }
    if let Some(to) = &args.report_to {
        outputs::report_to::copy(&dir, to)?;
    }
    Ok(code)
}

/// `--check` and `--list`: its own step because it plans without the machine, prints the plan
/// (a shard's cells only) and runs nothing.
fn list_plan(args: &CompareArgs) -> Result<u8> {
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
    Ok(0)
}

/// Tells what is about to run and returns how many of the shard's cells can run: its own step
/// because it is said once, before any cell starts.
fn announce(args: &CompareArgs, plan: &Plan, in_shard: &[bool]) -> usize {
    let mine = || plan.cells.iter().zip(in_shard).filter(|(_, &m)| m);
    let runnable = mine().filter(|(c, _)| c.configs.is_ok()).count();
    let repeats = plan.seeds.len();
    // The first line: what runs, and how many at once and why.
    crate::tell!(
        "lockpick compare: {} cells ({} n/a), seed {}, {} at a time ({})",
        mine().count(),
        mine().count() - runnable,
        plan.seed,
        plan.parallel,
        plan.parallelism.reason
    );
    if let Some(shard) = args.shard {
        crate::tell!(
            "lockpick compare: shard {shard}: {} of the matrix's {} cells",
            mine().count(),
            plan.cells.len()
        );
    }
    if repeats > 1 {
        let seeds: Vec<String> = plan.seeds.iter().map(|s| s.to_string()).collect();
        crate::tell!(
            "lockpick compare: {repeats} repeats of every cell, seeds {}",
            seeds.join(", ")
        );
    }
    runnable
}

/// The shard's cells as `merge` reads them: their own step because a shard's record keeps
/// every repeat's outcome apart, where a judged cell joins them.
fn shard_results(plan: &Plan, in_shard: &[bool], outcomes: &[Finished]) -> Vec<CellResult> {
    (0..plan.cells.len())
        .filter(|i| in_shard[*i])
        .map(|index| CellResult {
            index,
            repeats: (outcomes.iter())
                .filter(|(i, _, _)| *i == index)
                .map(|(_, _, o)| RepeatRecord::of(o))
                .collect(),
        })
        .collect()
}

/// The shard's cells judged over their repeats: their own step because every planned cell is
/// listed, one the interruption kept from its end as not run.
fn cells_of(plan: &Plan, in_shard: &[bool], outcomes: &[Finished]) -> Vec<Cell> {
    plan.cells
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
        .collect()
}

/// What `merge` judges the shard's cells by, kept in its folder: their own histories. Its own
/// step because only a shard keeps them.
fn keep_shard_runs(outcomes: &[Finished], dir: &Path) -> Result<()> {
    for (index, repeat, outcome) in outcomes {
        if let Outcome::Ran(f) = outcome {
            shards::runs::keep(&f.dir, dir, &shards::runs::name(*index, *repeat))?;
        }
    }
    Ok(())
}

/// A comparison as its outputs were written: what the summary with the shrinks is made of.
struct Written<'a> {
    comparison: &'a outputs::publish::Comparison<'a>,
    cells: &'a [Cell],
    links: &'a Links,
    dir: &'a Path,
}

/// `--shrink`: shrinks the broken cells and publishes the summary with what it found. Its own
/// step because the gate is decided before it: a shrink adds what it finds, and changes no
/// verdict or code.
fn shrink_broken(
    plan: &Plan,
    written: &Written<'_>,
    settings: &shrink_cells::Settings,
    interrupt: &Arc<AtomicBool>,
) -> Result<()> {
    let Written {
        comparison,
        cells,
        links,
        dir,
    } = *written;
    let shrinks = shrink_cells::shrink_broken(plan, cells, settings, Arc::clone(interrupt))?;
    shrink_cells::tell(&shrinks);
    let summary = outputs::publish::summary(comparison, cells, links, dir, &shrinks);
    summary_md::publish(dir, &summary)?;
    crate::say!(
        "\nsummary with the shrinks: {}",
        crate::text::terminal::field(&dir.join(summary_md::SUMMARY).display().to_string())
    );
    Ok(())
}
