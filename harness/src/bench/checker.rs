//! Checker throughput and peak memory: each measurement runs in a child process of its own
//! (`lockpick bench measure-check|measure-parse --history FILE`), so its peak resident memory is
//! its own. The parsing limit (every line decoded into a borrowed typed record, value included,
//! nothing kept) is measured on the same file in the same run, as the yardstick.
//!
//! The ratio to the limit is taken on CPU time (the child's own, read around the work): the
//! check is one thread, and on a shared machine its wall time measures the other tenants as
//! much as the checker (three times the CPU time under a load of 15 on 2 cores). Parsing and
//! checking take turns, so both see the same load, and each keeps the fastest of its turns.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::generate::{self, Shape};

/// The warm-up history's length: enough for every kind of line a generated history has (its
/// first fault is at its first hold), too little to weigh (a few kB).
const WARM_UP_LINES: u64 = 120;

/// What a measuring child reports.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Measured {
    pub lines: u64,
    /// Wall time.
    pub seconds: f64,
    /// The child's CPU time (user and system) over the same span.
    pub cpu_seconds: f64,
    /// The child's peak resident memory (VmHWM), bytes.
    pub peak_bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct CheckerRow {
    pub shape: &'static str,
    pub lines: u64,
    pub check: Measured,
    pub parse_limit: Measured,
    /// check CPU time / parsing-limit CPU time.
    pub times_limit: f64,
    /// Lines per second of the check's CPU time.
    pub lines_per_second: f64,
    /// Peak memory above that of checking an empty history, per line.
    pub bytes_per_line: f64,
    pub verdict: String,
}

/// Runs in the child: checks (or only parses) the history and prints a [`Measured`] line.
/// A short history is checked (or parsed) first, so that the code a check runs is in memory
/// before the peak is counted from, in the empty history's child as in every other: the
/// binary's pages a check touches (a few hundred kB) are no line's cost, and at 10k lines they
/// read as 20 to 50 bytes a line.
pub fn measure_in_child(history: &Path, parse_only: bool) -> Result<()> {
    let warm_up = generate::in_memory(WARM_UP_LINES, Shape::Correct)?;
    if parse_only {
        lockpick_checkers::parse_only(&warm_up[..]).map_err(|e| anyhow::anyhow!("{e}"))?;
    } else {
        lockpick_checkers::check_reader(&warm_up[..]);
    }
    let file = std::fs::File::open(history).with_context(|| format!("cannot open {history:?}"))?;
    let reader = std::io::BufReader::with_capacity(1 << 16, file);
    let started = Instant::now();
    let cpu_before = cpu_now();
    let (lines, verdict) = if parse_only {
        let lines = lockpick_checkers::parse_only(reader).map_err(|e| anyhow::anyhow!("{e}"))?;
        (lines, String::new())
    } else {
        let results = lockpick_checkers::check_reader(reader);
        (results.operations as u64, results.valid.to_string())
    };
    let cpu_seconds = cpu_now() - cpu_before;
    let seconds = started.elapsed().as_secs_f64();
    let measured = Measured {
        lines,
        seconds,
        cpu_seconds,
        peak_bytes: peak_resident_bytes(),
    };
    crate::say!("{}", serde_json::to_string(&measured)?);
    crate::say!("{verdict}");
    Ok(())
}

/// This process's CPU time so far, seconds.
fn cpu_now() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(0.0)
}

fn peak_resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn child(history: &Path, parse_only: bool) -> Result<(Measured, String)> {
    let what = if parse_only {
        "measure-parse"
    } else {
        "measure-check"
    };
    let output = Command::new(std::env::current_exe()?)
        .args(["bench", what, "--history"])
        .arg(history)
        .output()?;
    if !output.status.success() {
        bail!(
            "the measuring child failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    let measured = serde_json::from_str(lines.next().unwrap_or_default())?;
    Ok((measured, lines.next().unwrap_or_default().to_string()))
}

/// Measures the checker on a generated history of each size: `repeats` turns of parsing then
/// checking, each keeping its fastest (by CPU time). Memory is the least peak of the check's
/// turns above the least of three checks of an empty history (the same estimate on both sides:
/// one process's peak varies by tens of kB from run to run).
pub fn measure(dir: &Path, sizes: &[(u64, Shape)], repeats: u32) -> Result<Vec<CheckerRow>> {
    let empty = dir.join("empty.jsonl");
    crate::files::safe_write::write_new(&empty, "")?;
    let mut baseline = u64::MAX;
    for _ in 0..3 {
        baseline = baseline.min(child(&empty, false)?.0.peak_bytes);
    }
    let mut rows = Vec::new();
    for &(size, shape) in sizes {
        let path = dir.join(format!("history-{size}.jsonl"));
        let lines = generate::write(&path, size, shape)?;
        let mut parses: Option<(Measured, String)> = None;
        let mut checks: Option<(Measured, String)> = None;
        let mut least_peak = u64::MAX;
        for _ in 0..repeats.max(1) {
            for (parse_only, best) in [(true, &mut parses), (false, &mut checks)] {
                let run = child(&path, parse_only)?;
                if !parse_only {
                    least_peak = least_peak.min(run.0.peak_bytes);
                }
                if best
                    .as_ref()
                    .is_none_or(|b| run.0.cpu_seconds < b.0.cpu_seconds)
                {
                    *best = Some(run);
                }
            }
        }
        let (parse_limit, _) = parses.expect("at least one turn");
        let (check, verdict) = checks.expect("at least one turn");
        std::fs::remove_file(&path)?;
        rows.push(CheckerRow {
            shape: match shape {
                Shape::Correct => "correct",
                Shape::Overlapping => "overlapping",
            },
            lines,
            times_limit: check.cpu_seconds / parse_limit.cpu_seconds.max(1e-9),
            lines_per_second: lines as f64 / check.cpu_seconds.max(1e-9),
            bytes_per_line: least_peak.saturating_sub(baseline) as f64 / lines as f64,
            check,
            parse_limit,
            verdict,
        });
    }
    Ok(rows)
}
