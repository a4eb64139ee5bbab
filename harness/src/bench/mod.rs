//! `lockpick bench`: the figures behind the book's performance page (docs/performance.md). Checker throughput
//! and peak memory against the parsing limit, report size and time, the controller's CPU per
//! recorded line, service start-up per lock, and time to first violation on real runs. Prints
//! one table per part, then the whole as one line of JSON (the last line of the output).
//! Figures are printed, never asserted: speed depends on the machine.

mod checker;
mod clock_shift;
mod clock_shift_etcd;
mod clock_shift_row;
mod gate;
mod generate;
mod pipeline;
mod stability;
mod startup;
mod tables;
mod violations;

use std::path::Path;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::cli::{BenchArgs, BenchKind};
use crate::config::bad;
use generate::Shape;

#[derive(Debug, Default, Serialize)]
struct Figures {
    quick: bool,
    checker: Option<Vec<checker::CheckerRow>>,
    report: Option<Vec<pipeline::ReportRow>>,
    controller: Option<pipeline::ControllerRow>,
    startup: Option<Vec<startup::StartupRow>>,
    violations: Option<Vec<violations::ViolationRow>>,
    stability: Option<Vec<stability::StabilityRow>>,
    gate: Option<Vec<gate::GateRow>>,
    clock_shift: Option<Vec<clock_shift_row::ClockShiftRow>>,
}

/// Runs the benchmarks asked for; the exit code is 0, or 1 when a stability run was off its
/// expectation.
pub fn bench(args: &BenchArgs) -> Result<u8> {
    if measure_as_child(args)? {
        return Ok(0);
    }
    refuse_real_runs_without_root(args)?;
    let rounds = args.rounds.unwrap_or(if args.quick { 1 } else { 3 });
    if rounds == 0 || rounds > 100 {
        return Err(bad("--rounds must be between 1 and 100"));
    }
    let seeds = args.seeds.unwrap_or(if args.quick { 2 } else { 10 });
    let scratch = scratch_folder()?;
    let dir = scratch.path();
    let mut figures = Figures {
        quick: args.quick,
        ..Figures::default()
    };
    measure_files(args, dir, &mut figures)?;
    measure_real_runs(args, dir, rounds, seeds, &mut figures)?;
    let code = measure_only_when_named(args, dir, &mut figures)?;
    let json = serde_json::to_string(&figures)?;
    if let Some(path) = &args.json {
        crate::files::safe_write::replace(path, format!("{json}\n"))?;
    }
    crate::say!("\n{json}");
    Ok(code)
}

/// The hidden kinds a bench runs in a child of its own (to measure one process alone); true
/// when `args` named one and it was done.
fn measure_as_child(args: &BenchArgs) -> Result<bool> {
    match args.what {
        Some(BenchKind::MeasureCheck | BenchKind::MeasureParse) => {
            let history = args
                .history
                .as_deref()
                .ok_or_else(|| bad("--history is needed"))?;
            checker::measure_in_child(history, args.what == Some(BenchKind::MeasureParse))?;
            Ok(true)
        }
        Some(BenchKind::MeasureClock) => {
            clock_shift::measure_in_child()?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Refused before anything is made: the real runs create network namespaces.
fn refuse_real_runs_without_root(args: &BenchArgs) -> Result<()> {
    let real_runs = matches!(
        args.what,
        Some(
            BenchKind::Startup
                | BenchKind::Violations
                | BenchKind::Stability
                | BenchKind::Gate
                | BenchKind::ClockShift,
        ) | None
    );
    if real_runs && !nix::unistd::geteuid().is_root() {
        return Err(bad(
            "lockpick bench needs root for its real runs: they create network namespaces",
        ));
    }
    Ok(())
}

/// A folder of its own, created exclusively under a random name with mode 0700 (a predictable
/// one could be made beforehand by anyone, with links planted in it), removed when the bench
/// ends.
fn scratch_folder() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("lockpick-bench-")
        .tempdir()
        .map_err(|e| {
            bad(format!(
                "cannot create a folder in {}: {e}",
                std::env::temp_dir().display()
            ))
        })
}

/// The parts measured on synthetic histories in `dir`: no server, no root.
fn measure_files(args: &BenchArgs, dir: &Path, figures: &mut Figures) -> Result<()> {
    let wanted = |kind| args.what.is_none() || args.what == Some(kind);
    if wanted(BenchKind::Checker) {
        let mut sizes: Vec<(u64, Shape)> = if args.quick {
            vec![(10_000, Shape::Correct), (100_000, Shape::Correct)]
        } else {
            [10_000, 100_000, 1_000_000, 10_000_000]
                .map(|n| (n, Shape::Correct))
                .to_vec()
        };
        sizes.push((
            if args.quick { 100_000 } else { 1_000_000 },
            Shape::Overlapping,
        ));
        // Turns of parsing and checking, the fastest of each kept: on a shared machine one turn
        // in three still meets another tenant's burst (a 1M row moved from 1.13 to 1.29 between
        // runs at three), and more turns find each side's unhurried time.
        let turns = if args.quick { 3 } else { 5 };
        let rows = checker::measure(dir, &sizes, turns)?;
        tables::print_checker(&rows);
        figures.checker = Some(rows);
    }
    if wanted(BenchKind::Report) {
        let sizes: &[u64] = if args.quick {
            &[10_000]
        } else {
            &[100_000, 1_000_000]
        };
        let rows = pipeline::report(dir, sizes)?;
        tables::print_report(&rows);
        figures.report = Some(rows);
    }
    if wanted(BenchKind::Controller) {
        let row = pipeline::controller(dir, if args.quick { 200_000 } else { 2_000_000 })?;
        tables::print_controller(&row);
        figures.controller = Some(row);
    }
    Ok(())
}

/// The parts that start real services and runs, part of a whole bench.
fn measure_real_runs(
    args: &BenchArgs,
    dir: &Path,
    rounds: u32,
    seeds: u64,
    figures: &mut Figures,
) -> Result<()> {
    let wanted = |kind| args.what.is_none() || args.what == Some(kind);
    if wanted(BenchKind::Startup) {
        let rows = startup::startup(rounds, dir)?;
        tables::print_startup(&rows);
        figures.startup = Some(rows);
    }
    if wanted(BenchKind::Violations) {
        let (limit, parallel) = if args.quick { ("4s", 4) } else { ("10s", 2) };
        let rows = violations::measure(dir, seeds, limit, parallel)?;
        tables::print_violations(&rows, seeds, limit);
        figures.violations = Some(rows);
    }
    if wanted(BenchKind::ClockShift) {
        let requests = if args.quick { 50_000 } else { 200_000 };
        let rows = clock_shift::measure(dir, rounds, requests)?;
        tables::print_clock_shift(&rows, rounds);
        figures.clock_shift = Some(rows);
    }
    Ok(())
}

/// The parts too long for a whole bench, run only when named; the exit code, 1 when a
/// stability run was off its expectation.
fn measure_only_when_named(args: &BenchArgs, dir: &Path, figures: &mut Figures) -> Result<u8> {
    let mut code = 0;
    if args.what == Some(BenchKind::Stability) {
        let seeds = args.seeds.unwrap_or(if args.quick { 2 } else { 5 });
        let limit = if args.quick { "8s" } else { "10s" };
        let rows = stability::measure(dir, seeds, limit, 2)?;
        code = tables::print_stability(&rows, seeds, limit);
        figures.stability = Some(rows);
    }
    // Only when asked for: it runs the example gate twice a round (about two minutes a round
    // on 2 cores), one round unless --rounds says more.
    if args.what == Some(BenchKind::Gate) {
        let rounds = args.rounds.unwrap_or(1);
        let (rows, identical) = gate::measure(dir, args.quick, rounds)?;
        tables::print_gate(&rows, identical, rounds);
        figures.gate = Some(rows);
        if identical < rounds {
            bail!(
                "the example gate gave other verdicts in {} of {rounds} round(s) (above)",
                rounds - identical
            );
        }
    }
    Ok(code)
}
