//! Time to first violation: real runs (`lockpick run` in child processes, each on its own
//! nodes and in its own store) of `pause-holder`, which pauses the holder of the lock, against
//! `pause-node`, which pauses a random server, on Redis and Redlock, over several seeds. The
//! time is the run clock's at the start of the first violation the checkers found.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;

use anyhow::{Context, Result};
use lockpick_checkers::Results;
use serde::Serialize;

pub const LOCKS: [&str; 2] = ["redis", "redlock"];
pub const NEMESES: [&str; 2] = ["pause-holder", "pause-node"];

#[derive(Debug, Serialize)]
pub struct ViolationRow {
    pub lock: &'static str,
    pub nemesis: &'static str,
    pub seeds: usize,
    /// How many runs found a violation.
    pub found: usize,
    pub fraction_found: f64,
    /// Over the runs that found one, seconds since the run began.
    pub median_seconds: Option<f64>,
    pub max_seconds: Option<f64>,
}

/// When the first violation began, in ns on the run clock.
pub fn first_violation(results: &Results) -> Option<u64> {
    let overlaps = results.overlapping_holders.iter().flat_map(|o| &o.overlaps);
    let stale = results.stale_accesses.iter().flat_map(|s| &s.violations);
    let stale = stale.filter(|v| v.access.kind == lockpick_checkers::model::AccessKind::Write);
    let tokens = results.token_violations.iter().flat_map(|t| &t.violations);
    overlaps
        .map(|o| o.from)
        .chain(stale.map(|v| v.access.time))
        .chain(tokens.map(|v| v.later.start))
        .min()
}

/// One run; the time of its first violation, if any.
fn run_once(
    store: &Path,
    lock: &str,
    nemesis: &str,
    seed: u64,
    limit: &str,
) -> Result<Option<u64>> {
    let status = Command::new(std::env::current_exe()?)
        .args([
            "run",
            "--lock",
            lock,
            "--nemesis",
            nemesis,
            "--time-limit",
            limit,
        ])
        .args(["--seed", &seed.to_string(), "--store"])
        .arg(store)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    // The verdict is in the exit code too; the history says when.
    let history = find_history(store)
        .with_context(|| format!("{lock} {nemesis} seed {seed} left no history ({status})"))?;
    let file = std::fs::File::open(history)?;
    let results = lockpick_checkers::check_reader(std::io::BufReader::new(file));
    Ok(first_violation(&results))
}

pub fn find_history(store: &Path) -> Option<PathBuf> {
    for group in std::fs::read_dir(store).ok()?.flatten() {
        let Ok(runs) = std::fs::read_dir(group.path()) else {
            continue; // the store's index page
        };
        for run in runs.flatten() {
            let history = run.path().join(crate::store::HISTORY);
            if run.file_name() != "latest" && history.exists() {
                return Some(history);
            }
        }
    }
    None
}

/// Runs every lock against every nemesis over `seeds` seeds, `parallel` runs at a time.
pub fn measure(dir: &Path, seeds: u64, limit: &str, parallel: usize) -> Result<Vec<ViolationRow>> {
    let mut cells = Vec::new();
    for lock in LOCKS {
        for nemesis in NEMESES {
            for seed in 1..=seeds {
                cells.push((lock, nemesis, seed));
            }
        }
    }
    let mut times: Vec<Option<u64>> = Vec::new();
    for chunk in cells.chunks(parallel.max(1)) {
        let handles: Vec<_> = chunk
            .iter()
            .map(|&(lock, nemesis, seed)| {
                let store = dir.join(format!("runs-{lock}-{nemesis}-{seed}"));
                let limit = limit.to_string();
                thread::spawn(move || run_once(&store, lock, nemesis, seed, &limit))
            })
            .collect();
        for handle in handles {
            times.push(handle.join().expect("a bench run thread panicked")?);
        }
    }
    let mut rows = Vec::new();
    for (i, chunk) in times.chunks(seeds as usize).enumerate() {
        let (lock, nemesis, _) = cells[i * seeds as usize];
        let mut found: Vec<f64> = chunk.iter().flatten().map(|ns| *ns as f64 / 1e9).collect();
        found.sort_by(f64::total_cmp);
        rows.push(ViolationRow {
            lock,
            nemesis,
            seeds: chunk.len(),
            found: found.len(),
            fraction_found: found.len() as f64 / chunk.len().max(1) as f64,
            median_seconds: found.get(found.len() / 2).copied(),
            max_seconds: found.last().copied(),
        });
    }
    Ok(rows)
}
