//! `lockpick bench`: the figures behind the README's performance section. Checker throughput
//! and peak memory against the parsing limit, report size and time, the controller's CPU per
//! recorded line, service start-up per lock, and time to first violation on real runs. Prints
//! one table per part, then the whole as one line of JSON (the last line of the output).
//! Figures are printed, never asserted: speed depends on the machine.

mod checker;
mod gate;
mod generate;
mod pipeline;
mod startup;
mod violations;

use std::path::PathBuf;

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
    gate: Option<Vec<gate::GateRow>>,
}

/// The scratch folder of one bench, removed when it ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn bench(args: &BenchArgs) -> Result<()> {
    match args.what {
        Some(BenchKind::MeasureCheck | BenchKind::MeasureParse) => {
            let history = args
                .history
                .as_deref()
                .ok_or_else(|| bad("--history is needed"))?;
            return checker::measure_in_child(history, args.what == Some(BenchKind::MeasureParse));
        }
        Some(BenchKind::Startup | BenchKind::Violations | BenchKind::Gate) | None
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
    let scratch =
        Scratch(std::env::temp_dir().join(format!("lockpick-bench-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0)?;
    let dir = scratch.0.as_path();
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
        println!(
            "\nreport\n{:>10} {:>9} {:>12}",
            "lines", "seconds", "report.html"
        );
        for r in &rows {
            println!(
                "{:>10} {:>9.3} {:>10} B",
                r.lines, r.seconds, r.report_bytes
            );
        }
        figures.report = Some(rows);
    }
    if wanted(BenchKind::Controller) {
        let row = pipeline::controller(dir, if args.quick { 200_000 } else { 2_000_000 })?;
        println!(
            "\ncontroller (record path fed from a pipe)\n{:>10} {:>9} {:>9} {:>12} {:>14}",
            "lines", "cpu s", "wall s", "cpu us/line", "lines/cpu-s"
        );
        println!(
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
        println!(
            "\nservice start-up\n{:<10} {:>6} {:>9} {:>9} {:>9}",
            "service", "nodes", "min s", "median s", "max s"
        );
        for r in &rows {
            println!(
                "{:<10} {:>6} {:>9.3} {:>9.3} {:>9.3}",
                r.service, r.nodes, r.min_seconds, r.median_seconds, r.max_seconds
            );
        }
        figures.startup = Some(rows);
    }
    if wanted(BenchKind::Violations) {
        let (limit, parallel) = if args.quick { ("4s", 4) } else { ("10s", 2) };
        let rows = violations::measure(dir, seeds, limit, parallel)?;
        println!(
            "\ntime to first violation ({seeds} seeds, time limit {limit})\n{:<8} {:<13} {:>6} {:>9} {:>9}",
            "lock", "nemesis", "found", "median s", "max s"
        );
        let s = |t: Option<f64>| t.map_or("-".to_string(), |t| format!("{t:.2}"));
        for r in &rows {
            println!(
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
        std::fs::write(path, format!("{json}\n"))?;
    }
    println!("\n{json}");
    Ok(())
}

fn print_checker(rows: &[checker::CheckerRow]) {
    println!(
        "checker (streaming check against the parsing limit on the same file)\n{:<12} {:>10} {:>9} {:>9} {:>7} {:>12} {:>10} {:>9}",
        "history", "lines", "check s", "limit s", "x limit", "lines/s", "peak MB", "B/line"
    );
    for r in rows {
        println!(
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
