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
mod violations;

use anyhow::Result;
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
    match args.what {
        Some(BenchKind::MeasureCheck | BenchKind::MeasureParse) => {
            let history = args
                .history
                .as_deref()
                .ok_or_else(|| bad("--history is needed"))?;
            checker::measure_in_child(history, args.what == Some(BenchKind::MeasureParse))?;
            return Ok(0);
        }
        Some(BenchKind::MeasureClock) => {
            clock_shift::measure_in_child()?;
            return Ok(0);
        }
        Some(
            BenchKind::Startup
            | BenchKind::Violations
            | BenchKind::Stability
            | BenchKind::Gate
            | BenchKind::ClockShift,
        )
        | None
            if !nix::unistd::geteuid().is_root() =>
        {
            return Err(bad(
                "lockpick bench needs root for its real runs: they create network namespaces",
            ));
        }
        _ => {}
    }
    let rounds = args.rounds.unwrap_or(if args.quick { 1 } else { 3 });
    if rounds == 0 || rounds > 100 {
        return Err(bad("--rounds must be between 1 and 100"));
    }
    let seeds = args.seeds.unwrap_or(if args.quick { 2 } else { 10 });
    // A folder of its own, created exclusively under a random name with mode 0700 (a
    // predictable one could be made beforehand by anyone, with links planted in it), removed
    // when the bench ends.
    let scratch = tempfile::Builder::new()
        .prefix("lockpick-bench-")
        .tempdir()
        .map_err(|e| {
            bad(format!(
                "cannot create a folder in {}: {e}",
                std::env::temp_dir().display()
            ))
        })?;
    let dir = scratch.path();
    let wanted = |kind| args.what.is_none() || args.what == Some(kind);
    let mut figures = Figures {
        quick: args.quick,
        ..Figures::default()
    };
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
        let rows = checker::measure(dir, &sizes, 3)?;
        print_checker(&rows);
        figures.checker = Some(rows);
    }
    if wanted(BenchKind::Report) {
        let sizes: &[u64] = if args.quick {
            &[10_000]
        } else {
            &[100_000, 1_000_000]
        };
        let rows = pipeline::report(dir, sizes)?;
        crate::say!(
            "\nreport\n{:>10} {:>9} {:>12}",
            "lines",
            "seconds",
            "report.html"
        );
        for r in &rows {
            crate::say!(
                "{:>10} {:>9.3} {:>10} B",
                r.lines,
                r.seconds,
                r.report_bytes
            );
        }
        figures.report = Some(rows);
    }
    if wanted(BenchKind::Controller) {
        let row = pipeline::controller(dir, if args.quick { 200_000 } else { 2_000_000 })?;
        crate::say!(
            "\ncontroller (record path fed from a pipe)\n{:>10} {:>9} {:>9} {:>12} {:>14}",
            "lines",
            "cpu s",
            "wall s",
            "cpu us/line",
            "lines/cpu-s"
        );
        crate::say!(
            "{:>10} {:>9.3} {:>9.3} {:>12.3} {:>14.0}",
            row.lines,
            row.cpu_seconds,
            row.wall_seconds,
            row.cpu_us_per_line,
            row.lines_per_cpu_second
        );
        figures.controller = Some(row);
    }
    if wanted(BenchKind::Startup) {
        let rows = startup::startup(rounds, dir)?;
        crate::say!(
            "\nservice start-up\n{:<10} {:>6} {:>9} {:>9} {:>9}",
            "service",
            "nodes",
            "min s",
            "median s",
            "max s"
        );
        for r in &rows {
            crate::say!(
                "{:<10} {:>6} {:>9.3} {:>9.3} {:>9.3}",
                r.service,
                r.nodes,
                r.min_seconds,
                r.median_seconds,
                r.max_seconds
            );
        }
        figures.startup = Some(rows);
    }
    if wanted(BenchKind::Violations) {
        let (limit, parallel) = if args.quick { ("4s", 4) } else { ("10s", 2) };
        let rows = violations::measure(dir, seeds, limit, parallel)?;
        crate::say!(
            "\ntime to first violation ({seeds} seeds, time limit {limit})\n{:<8} {:<13} {:>6} {:>9} {:>9}",
            "lock", "nemesis", "found", "median s", "max s"
        );
        let s = |t: Option<f64>| t.map_or("-".to_string(), |t| format!("{t:.2}"));
        for r in &rows {
            crate::say!(
                "{:<8} {:<13} {:>3}/{:<2} {:>9} {:>9}",
                r.lock,
                r.nemesis,
                r.found,
                r.seeds,
                s(r.median_seconds),
                s(r.max_seconds)
            );
        }
        figures.violations = Some(rows);
    }
    if wanted(BenchKind::ClockShift) {
        let requests = if args.quick { 50_000 } else { 200_000 };
        let rows = clock_shift::measure(dir, rounds, requests)?;
        crate::say!(
            "\nclock shift (vDSO redirected, wall clock +30 s; best of {rounds} rounds; paired: \
             the median of each round's own overhead)\n{:<46} {:>12} {:>12} {:>10} {:>8}",
            "what",
            "plain",
            "shifted",
            "overhead",
            "paired"
        );
        for r in &rows {
            crate::say!(
                "{:<46} {:>12.1} {:>12.1} {:>9.1}% {:>7.1}%  {}",
                r.what,
                r.plain,
                r.shifted,
                r.overhead_percent,
                r.median_paired_overhead_percent,
                r.unit
            );
        }
        if let Some(r) = rows.first() {
            crate::say!(
                "replacements reading the clock in user space: {} (the others make a system call)",
                r.fast_paths.join(", ")
            );
        }
        figures.clock_shift = Some(rows);
    }
    let mut code = 0;
    if args.what == Some(BenchKind::Stability) {
        let seeds = args.seeds.unwrap_or(if args.quick { 2 } else { 5 });
        let limit = if args.quick { "8s" } else { "10s" };
        let rows = stability::measure(dir, seeds, limit, 2)?;
        code = print_stability(&rows, seeds, limit);
        figures.stability = Some(rows);
    }
    // Only when asked for: it runs the example gate twice (two minutes on 2 cores).
    if args.what == Some(BenchKind::Gate) {
        let rows = gate::measure(dir, args.quick)?;
        println!(
            "\nthe example gate (examples/lockpick.toml)\n{:<11} {:>6} {:>9} {:>7} {:>5}",
            "until", "cells", "parallel", "wall s", "exit"
        );
        for r in &rows {
            println!(
                "{:<11} {:>6} {:>9} {:>7.1} {:>5}",
                r.until, r.cells, r.parallel, r.wall_seconds, r.exit_code
            );
        }
        println!("same verdicts both ways: {:?}", rows[0].verdicts);
        figures.gate = Some(rows);
    }
    let json = serde_json::to_string(&figures)?;
    if let Some(path) = &args.json {
        crate::files::safe_write::replace(path, format!("{json}\n"))?;
    }
    crate::say!("\n{json}");
    Ok(code)
}

/// The stability table and its one-line total; 1 when a run was off its expectation.
fn print_stability(rows: &[stability::StabilityRow], seeds: u64, limit: &str) -> u8 {
    crate::say!(
        "\nstability ({seeds} seeds, time limit {limit}, fencing on)\n{:<10} {:<13} {:<48} {:>5} {:>4}  verdicts",
        "lock", "nemesis", "expected", "runs", "off"
    );
    for r in rows {
        crate::say!(
            "{:<10} {:<13} {:<48} {:>5} {:>4}  {}",
            r.lock,
            r.nemesis,
            r.expected,
            r.runs,
            r.off,
            r.verdicts
        );
        for why in &r.why {
            crate::say!("    off: {why}");
        }
    }
    let runs: usize = rows.iter().map(|r| r.runs).sum();
    let off: usize = rows.iter().map(|r| r.off).sum();
    crate::say!("off their expectation: {off} of {runs} runs");
    u8::from(off > 0)
}

fn print_checker(rows: &[checker::CheckerRow]) {
    crate::say!(
        "checker (streaming check against the parsing limit on the same file)\n{:<12} {:>10} {:>9} {:>9} {:>7} {:>12} {:>10} {:>9}",
        "history", "lines", "check s", "limit s", "x limit", "lines/s", "peak MB", "B/line"
    );
    for r in rows {
        crate::say!(
            "{:<12} {:>10} {:>9.3} {:>9.3} {:>7.2} {:>12.0} {:>10.1} {:>9.1}",
            r.shape,
            r.lines,
            r.check.seconds,
            r.parse_limit.seconds,
            r.times_limit,
            r.lines_per_second,
            r.check.peak_bytes as f64 / 1e6,
            r.bytes_per_line
        );
    }
}
