//! The example CI gate (`lockpick compare --matrix examples/lockpick.toml`, the file as built
//! in, each cell decided at its first proven violation where it can be) run one cell at a
//! time and at the automatic parallelism, each in a child process with its own store: the wall
//! time of each, the parallelism chosen and why, and whether every cell's verdict and judgement
//! and the exit code are the same both ways (the bench fails when they are not). The machine's
//! load average is recorded with each row: figures on a busy machine say so.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use super::startup::load_average;

const MATRIX: &str = include_str!("../../../examples/lockpick.toml");

#[derive(Debug, Serialize)]
pub struct GateRow {
    /// `--parallel 1`, or `automatic`.
    pub parallel: String,
    pub cells: usize,
    /// Cells at once as the gate began, and as it ended (lowered when its cells slowed down).
    pub at_once: u64,
    pub at_end: u64,
    pub reason: String,
    pub wall_seconds: f64,
    pub exit_code: i32,
    /// The 1-minute load average before and after.
    pub load_before: Option<f64>,
    pub load_after: Option<f64>,
    /// Each cell's verdict and judgement, in the matrix's order.
    pub verdicts: Vec<String>,
    /// Whether every verdict, judgement and the exit code equal the first row's.
    pub identical: bool,
}

fn once(dir: &Path, round: u32, parallel: Option<&str>, quick: bool) -> Result<GateRow> {
    let label = parallel.map_or("automatic".to_string(), |n| format!("--parallel {n}"));
    let store = dir.join(format!("gate-{round}-{}", parallel.unwrap_or("automatic")));
    let matrix = dir.join("lockpick.toml");
    if !matrix.exists() {
        crate::files::safe_write::write_new(&matrix, MATRIX)?;
    }
    let mut command = Command::new(std::env::current_exe()?);
    command
        .args(["compare", "--matrix"])
        .arg(&matrix)
        .arg("--store")
        .arg(&store)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(n) = parallel {
        command.args(["--parallel", n]);
    }
    if quick {
        command.args(["--time-limit", "6s"]);
    }
    let load_before = load_average();
    let started = Instant::now();
    let output = command.output()?;
    let status = output.status;
    let wall_seconds = started.elapsed().as_secs_f64();
    // A gate that stopped before writing its comparison says why on its standard error.
    let why = || {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        format!("the gate ({label}) wrote no comparison ({status}); it said:\n{tail}")
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
    let chosen = &json["parallelism"];
    Ok(GateRow {
        parallel: label,
        cells: cells.len(),
        at_once: chosen["at_once"].as_u64().unwrap_or(0),
        at_end: chosen["at_end"].as_u64().unwrap_or(0),
        reason: chosen["reason"].as_str().unwrap_or("").to_string(),
        wall_seconds,
        exit_code: status.code().unwrap_or(-1),
        load_before,
        load_after: load_average(),
        verdicts: cells
            .iter()
            .map(|c| {
                let word = |key: &str| c[key].as_str().map_or(c[key].to_string(), str::to_string);
                format!("{} ({})", word("verdict"), word("judgement"))
            })
            .collect(),
        identical: true,
    })
}

/// `rounds` times: one cell at a time, then at the automatic parallelism; `quick` shortens
/// every cell to 6 s. Every row is held to the first one's verdicts, judgements and exit code;
/// the rows are returned with how many rounds were identical, and the bench fails (once the
/// table is printed) unless all were.
pub fn measure(dir: &Path, quick: bool, rounds: u32) -> Result<(Vec<GateRow>, u32)> {
    let mut rows: Vec<GateRow> = Vec::new();
    let mut identical_rounds = 0;
    for round in 1..=rounds.max(1) {
        let mut one = once(dir, round, Some("1"), quick)?;
        let mut automatic = once(dir, round, None, quick)?;
        let first = rows.first().unwrap_or(&one);
        let (verdicts, exit_code) = (first.verdicts.clone(), first.exit_code);
        let same = |row: &GateRow| row.verdicts == verdicts && row.exit_code == exit_code;
        one.identical = same(&one);
        automatic.identical = same(&automatic);
        if one.identical && automatic.identical {
            identical_rounds += 1;
        } else {
            crate::tell!(
                "lockpick bench: round {round}: other verdicts: {:?} (exit {}) one at a time, \
                 {:?} (exit {}) at the automatic parallelism, against {:?} (exit {})",
                one.verdicts,
                one.exit_code,
                automatic.verdicts,
                automatic.exit_code,
                verdicts,
                exit_code
            );
        }
        rows.push(one);
        rows.push(automatic);
    }
    Ok((rows, identical_rounds))
}
