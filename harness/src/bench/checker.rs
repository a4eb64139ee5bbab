//! Checker throughput and peak memory: each measurement runs in a child process of its own
//! (`lockpick bench measure-check|measure-parse --history FILE`), so its peak resident memory is
//! its own. The parsing limit (every line decoded into a borrowed typed record, value included,
//! nothing kept) is measured on the same file in the same run, as the yardstick.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::generate::{self, Shape};

/// What a measuring child reports.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Measured {
    pub lines: u64,
    pub seconds: f64,
    /// The child's peak resident memory (VmHWM), bytes.
    pub peak_bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct CheckerRow {
    pub shape: &'static str,
    pub lines: u64,
    pub check: Measured,
    pub parse_limit: Measured,
    /// check time / parsing-limit time.
    pub times_limit: f64,
    pub lines_per_second: f64,
    /// Peak memory above that of checking an empty history, per line.
    pub bytes_per_line: f64,
    pub verdict: String,
}

/// Runs in the child: checks (or only parses) the history and prints a [`Measured`] line.
pub fn measure_in_child(history: &Path, parse_only: bool) -> Result<()> {
    let file = std::fs::File::open(history).with_context(|| format!("cannot open {history:?}"))?;
    let reader = std::io::BufReader::with_capacity(1 << 16, file);
    let started = Instant::now();
    let (lines, verdict) = if parse_only {
        let lines = lockpick_checkers::parse_only(reader).map_err(|e| anyhow::anyhow!("{e}"))?;
        (lines, String::new())
    } else {
        let results = lockpick_checkers::check_reader(reader);
        (results.operations as u64, results.valid.to_string())
    };
    let seconds = started.elapsed().as_secs_f64();
    let measured = Measured {
        lines,
        seconds,
        peak_bytes: peak_resident_bytes(),
    };
    crate::say!("{}", serde_json::to_string(&measured)?);
    crate::say!("{verdict}");
    Ok(())
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

/// Measures the checker on a generated history of each size, the faster of `repeats` runs.
pub fn measure(dir: &Path, sizes: &[(u64, Shape)], repeats: u32) -> Result<Vec<CheckerRow>> {
    let empty = dir.join("empty.jsonl");
    crate::files::safe_write::write_new(&empty, "")?;
    let baseline = child(&empty, false)?.0.peak_bytes;
    let mut rows = Vec::new();
    for &(size, shape) in sizes {
        let path = dir.join(format!("history-{size}.jsonl"));
        let lines = generate::write(&path, size, shape)?;
        let fastest = |parse_only| -> Result<(Measured, String)> {
            let mut best: Option<(Measured, String)> = None;
            for _ in 0..repeats.max(1) {
                let run = child(&path, parse_only)?;
                if best.as_ref().is_none_or(|b| run.0.seconds < b.0.seconds) {
                    best = Some(run);
                }
            }
            Ok(best.expect("at least one repeat"))
        };
        let (parse_limit, _) = fastest(true)?;
        let (check, verdict) = fastest(false)?;
        std::fs::remove_file(&path)?;
        rows.push(CheckerRow {
            shape: match shape {
                Shape::Correct => "correct",
                Shape::Overlapping => "overlapping",
            },
            lines,
            times_limit: check.seconds / parse_limit.seconds.max(1e-9),
            lines_per_second: lines as f64 / check.seconds.max(1e-9),
            bytes_per_line: check.peak_bytes.saturating_sub(baseline) as f64 / lines as f64,
            check,
            parse_limit,
            verdict,
        });
    }
    Ok(rows)
}
