//! The example CI gate's wall time: `lockpick compare --matrix examples/lockpick.toml` (the file
//! as built in), run to the time limit and then with its known-unsafe cells decided at their
//! first proven violation (`--until decided`, compare's default under a matrix), each in a
//! child process with its own store. The verdicts and the exit code must be the same both ways;
//! the figure is the wall time.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;

const MATRIX: &str = include_str!("../../../examples/lockpick.toml");

#[derive(Debug, Serialize)]
pub struct GateRow {
    pub until: &'static str,
    pub cells: usize,
    pub parallel: usize,
    pub wall_seconds: f64,
    pub exit_code: i32,
    /// Each cell's verdict, in the matrix's order.
    pub verdicts: Vec<String>,
}

fn once(dir: &Path, until: &'static str, time_limit: Option<&str>) -> Result<GateRow> {
    let store = dir.join(format!("gate-{until}"));
    let matrix = dir.join("lockpick.toml");
    std::fs::write(&matrix, MATRIX)?;
    let mut command = Command::new(std::env::current_exe()?);
    command
        .args(["compare", "--matrix"])
        .arg(&matrix)
        .args(["--until", until, "--store"])
        .arg(&store)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(limit) = time_limit {
        command.args(["--time-limit", limit]);
    }
    let started = Instant::now();
    let output = command.output()?;
    let status = output.status;
    let wall_seconds = started.elapsed().as_secs_f64();
    // A gate that stopped before writing its comparison says why on its standard error.
    let why = || {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        format!("the gate (--until {until}) wrote no comparison ({status}); it said:\n{tail}")
    };
    let compare = std::fs::read_dir(store.join("compare"))
        .ok()
        .and_then(|dir| dir.flatten().next())
        .with_context(why)?
        .path();
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        compare.join(crate::store::COMPARE_JSON),
    )?)?;
    let cells = json["cells"].as_array().cloned().unwrap_or_default();
    let parallel = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(GateRow {
        until,
        cells: cells.len(),
        parallel: parallel.min(16),
        wall_seconds,
        exit_code: status.code().unwrap_or(-1),
        verdicts: cells
            .iter()
            .map(|c| c["verdict"].as_str().unwrap_or("n/a").to_string())
            .collect(),
    })
}

/// Both ways; `quick` shortens every cell to 4 s.
pub fn measure(dir: &Path, quick: bool) -> Result<Vec<GateRow>> {
    let limit = quick.then_some("4s");
    let full = once(dir, "time-limit", limit)?;
    let decided = once(dir, "decided", limit)?;
    if full.verdicts != decided.verdicts || full.exit_code != decided.exit_code {
        bail!(
            "the gate decided early gave other verdicts: {:?} (exit {}) against {:?} (exit {})",
            decided.verdicts,
            decided.exit_code,
            full.verdicts,
            full.exit_code
        );
    }
    Ok(vec![full, decided])
}
