//! Stability: does every built-in lock give the answer it should, seed after seed? One
//! `lockpick compare` (a child process, in the bench's own store) of every built-in lock without
//! faults (expected valid) and under `pause-holder` (the Redis family expected invalid; fenced
//! etcd and ZooKeeper expected to accept no stale write and never grant under a live lease),
//! repeated over several seeds. Prints how many runs were off their expectation, and why; a
//! gate someone relies on must print 0, also on a busy machine.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

/// What every lock is expected to show, as a matrix file.
const MATRIX: &str = r#"
locks = ["redis", "redlock", "rslock", "etcd", "zookeeper"]
nemeses = ["none", "pause-holder"]
fencing = ["on"]

[[expect]]
locks = ["redis", "redlock", "rslock"]
nemeses = ["pause-holder"]
expect = "invalid"
why = "no token: a paused holder's late write is accepted"

[[expect]]
locks = ["etcd", "zookeeper"]
nemeses = ["pause-holder"]
expect = ["no stale write accepted", "no grant under a live lease"]
why = "tokens and a fence; the service never broke mutual exclusion"
"#;

#[derive(Debug, Serialize)]
pub struct StabilityRow {
    pub lock: String,
    pub nemesis: String,
    pub expected: String,
    pub runs: usize,
    /// Runs whose own result did not meet the expectation.
    pub off: usize,
    /// Why each of them was off, with its seed.
    pub why: Vec<String>,
    /// How the verdicts added up (`invalid 5/5`).
    pub verdicts: String,
}

/// Runs the comparison over `seeds` seeds (each `limit` long, `parallel` at once) and reads back
/// every repeat's own judgement.
pub fn measure(dir: &Path, seeds: u64, limit: &str, parallel: usize) -> Result<Vec<StabilityRow>> {
    let matrix = dir.join("stability.toml");
    std::fs::write(&matrix, MATRIX)?;
    let store = dir.join("stability-store");
    let status = Command::new(std::env::current_exe()?)
        .arg("compare")
        .arg("--matrix")
        .arg(&matrix)
        .args([
            "--repeat",
            &seeds.to_string(),
            "--parallel",
            &parallel.to_string(),
        ])
        .args(["--time-limit", limit, "--seed", "1", "--store"])
        .arg(&store)
        .stdout(Stdio::null())
        .status()?;
    let folder = std::fs::read_dir(store.join("compare"))
        .ok()
        .and_then(|mut entries| entries.next())
        .and_then(|entry| entry.ok())
        .with_context(|| format!("the comparison wrote nothing ({status})"))?;
    let text = std::fs::read_to_string(folder.path().join(crate::store::COMPARE_JSON))?;
    let json: Value = serde_json::from_str(&text)?;
    if json["interrupted"] == true {
        bail!("the comparison was interrupted");
    }
    let cells = json["cells"].as_array().cloned().unwrap_or_default();
    Ok(cells.iter().map(row).collect())
}

fn row(cell: &Value) -> StabilityRow {
    let word = |v: &Value| v.as_str().unwrap_or("?").to_string();
    // One repeat stores no list: the cell is its only run.
    let repeats = match cell["repeats"].as_array() {
        Some(list) => list.clone(),
        None => vec![cell.clone()],
    };
    let off: Vec<&Value> = repeats
        .iter()
        .filter(|r| r["judgement"] != "holds")
        .collect();
    let why = off
        .iter()
        .map(|r| {
            let seed = r["seed"]
                .as_u64()
                .map_or("?".to_string(), |s| s.to_string());
            let said = r["why"].as_str().unwrap_or("did not run");
            format!("seed {seed}: {said}")
        })
        .collect();
    let count = |v: &str| repeats.iter().filter(|r| r["verdict"] == v).count();
    let verdicts: Vec<String> = ["invalid", "unknown", "valid"]
        .into_iter()
        .filter(|v| count(v) > 0)
        .map(|v| format!("{v} {}/{}", count(v), repeats.len()))
        .collect();
    StabilityRow {
        lock: word(&cell["lock"]),
        nemesis: word(&cell["nemesis"]),
        expected: word(&cell["expected"]),
        runs: repeats.len(),
        off: off.len(),
        why,
        verdicts: verdicts.join(", "),
    }
}
