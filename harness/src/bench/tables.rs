//! The tables `lockpick bench` prints, one per part, in the order the parts run: kept apart
//! from the measuring so that each part reads as what it measures.

use super::{checker, clock_shift_row, gate, pipeline, stability, startup, violations};

/// Streaming check time against the parsing limit, per history.
pub fn print_checker(rows: &[checker::CheckerRow]) {
    crate::say!(
        "checker (streaming check against the parsing limit on the same file; CPU seconds)\n{:<12} {:>10} {:>9} {:>9} {:>7} {:>12} {:>10} {:>9}",
        "history", "lines", "check s", "limit s", "x limit", "lines/s", "peak MB", "B/line"
    );
    for r in rows {
        crate::say!(
            "{:<12} {:>10} {:>9.3} {:>9.3} {:>7.2} {:>12.0} {:>10.1} {:>9.1}",
            r.shape,
            r.lines,
            r.check.cpu_seconds,
            r.parse_limit.cpu_seconds,
            r.times_limit,
            r.lines_per_second,
            r.check.peak_bytes as f64 / 1e6,
            r.bytes_per_line
        );
    }
}

/// Report time and size, per history length.
pub fn print_report(rows: &[pipeline::ReportRow]) {
    crate::say!(
        "\nreport\n{:>10} {:>9} {:>12}",
        "lines",
        "seconds",
        "report.html"
    );
    for r in rows {
        crate::say!(
            "{:>10} {:>9.3} {:>10} B",
            r.lines,
            r.seconds,
            r.report_bytes
        );
    }
}

/// The controller's CPU per recorded line.
pub fn print_controller(row: &pipeline::ControllerRow) {
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
}

/// Start-up, per service: its phases from a run's start to its first contended acquire.
pub fn print_startup(rows: &[startup::StartupRow]) {
    let load = rows.first().and_then(|r| r.load_average);
    crate::say!(
        "\nservice start-up to the first contended acquire (median over the rounds, seconds \
         from the run's start; load {})\n{:<20} {:>5} \
         {:>6} {:>14} {:>10} {:>11} {:>15}",
        load.map_or("?".to_string(), |l| format!("{l:.1}")),
        "service",
        "nodes",
        "nodes",
        "service start",
        "(max)",
        "clock at",
        "first contended"
    );
    let s = |t: Option<f64>| t.map_or("-".to_string(), |t| format!("{t:.2}"));
    for r in rows {
        crate::say!(
            "{:<20} {:>5} {:>6.2} {:>14.2} {:>10.2} {:>11.2} {:>15}",
            r.service,
            r.nodes,
            r.nodes_median_seconds,
            r.median_seconds,
            r.max_seconds,
            r.clock_started_median_seconds,
            s(r.first_contended_median_seconds)
        );
    }
}

/// Time to first violation, per lock and nemesis.
pub fn print_violations(rows: &[violations::ViolationRow], seeds: u64, limit: &str) {
    crate::say!(
        "\ntime to first violation ({seeds} seeds, time limit {limit})\n{:<8} {:<13} {:>6} {:>9} {:>9}",
        "lock", "nemesis", "found", "median s", "max s"
    );
    let s = |t: Option<f64>| t.map_or("-".to_string(), |t| format!("{t:.2}"));
    for r in rows {
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
}

/// The clock shift's overhead, per measured call.
pub fn print_clock_shift(rows: &[clock_shift_row::ClockShiftRow], rounds: u32) {
    crate::say!(
        "\nclock shift (vDSO redirected, wall clock +30 s; best of {rounds} rounds; paired: \
         the median of each round's own overhead)\n{:<46} {:>12} {:>12} {:>10} {:>8}",
        "what",
        "plain",
        "shifted",
        "overhead",
        "paired"
    );
    for r in rows {
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
}

/// The stability table and its one-line total; 1 when a run was off its expectation.
pub fn print_stability(rows: &[stability::StabilityRow], seeds: u64, limit: &str) -> u8 {
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

/// The example gate's wall time one at a time and at the automatic parallelism, and whether
/// its verdicts agree.
pub fn print_gate(rows: &[gate::GateRow], identical: u32, rounds: u32) {
    println!(
        "\nthe example gate (examples/lockpick.toml)\n{:<13} {:>6} {:>8} {:>7} {:>5} {:>12}",
        "parallel", "cells", "at once", "wall s", "exit", "load"
    );
    let load = |l: Option<f64>| l.map_or("?".to_string(), |l| format!("{l:.1}"));
    for r in rows {
        println!(
            "{:<13} {:>6} {:>8} {:>7.1} {:>5} {:>12}",
            r.parallel,
            r.cells,
            if r.at_end == r.at_once {
                r.at_once.to_string()
            } else {
                format!("{}→{}", r.at_once, r.at_end)
            },
            r.wall_seconds,
            r.exit_code,
            format!("{}→{}", load(r.load_before), load(r.load_after))
        );
    }
    if let Some(r) = rows.last() {
        println!("chosen: {}", r.reason);
        println!(
            "same verdicts, judgements and exit code both ways in {identical} of {rounds} \
             round(s): {:?}",
            r.verdicts
        );
    }
}
