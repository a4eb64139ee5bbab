//! Start-up per service: real short runs (`lockpick run`, no faults, in a child process each,
//! on its own nodes and store), from the run's start to its first contended acquire, phase by
//! phase as `results.json` records them (`run::startup_times`): the nodes, the wait at the
//! start-up gate (none in a lone run), the service's start until every server answers, and
//! the clients' first acquire made while another client held or wanted the lock.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::locks::{Lock, LOCKS};
use crate::run::startup_times::StartupTimes;

#[derive(Debug, Serialize)]
pub struct StartupRow {
    pub service: &'static str,
    /// The lock whose runs measured it.
    pub lock: &'static str,
    pub nodes: usize,
    /// The service's start, from its first server launched until every server answers.
    pub min_seconds: f64,
    pub median_seconds: f64,
    pub max_seconds: f64,
    /// Medians of the other phases, from the run's start.
    pub nodes_median_seconds: f64,
    pub clock_started_median_seconds: f64,
    /// From the run's start to its first contended acquire: median and max.
    pub first_contended_median_seconds: Option<f64>,
    pub first_contended_max_seconds: Option<f64>,
    /// The machine's load average (1 min) when the rows were measured.
    pub load_average: Option<f64>,
}

/// Runs one lock of each kind of service `rounds` times.
pub fn startup(rounds: u32, dir: &Path) -> Result<Vec<StartupRow>> {
    // One lock per kind of service, the one with the most servers (redis and redlock share
    // redis-server: five nodes show more than one).
    let mut chosen: Vec<&dyn Lock> = Vec::new();
    for lock in LOCKS.iter().copied() {
        let kind = service_name(lock);
        match chosen.iter_mut().find(|c| service_name(**c) == kind) {
            Some(c) if c.capabilities().servers < lock.capabilities().servers => *c = lock,
            Some(_) => {}
            None => chosen.push(lock),
        }
    }
    let mut rows = Vec::new();
    for lock in chosen {
        let mut times = Vec::new();
        for round in 0..rounds.max(1) {
            times.push(run_once(lock, dir, round)?);
        }
        rows.push(row(lock, &times));
    }
    Ok(rows)
}

/// The median and the extremes of each phase over the rounds.
fn row(lock: &dyn Lock, times: &[StartupTimes]) -> StartupRow {
    let sorted = |f: fn(&StartupTimes) -> f64| {
        let mut v: Vec<f64> = times.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let median = |v: &[f64]| v[v.len() / 2];
    let service = sorted(|t| t.service_seconds);
    let mut contended: Vec<f64> = times
        .iter()
        .filter_map(|t| t.first_contended_seconds)
        .collect();
    contended.sort_by(f64::total_cmp);
    StartupRow {
        service: service_name(lock),
        lock: lock.name(),
        nodes: lock.capabilities().servers,
        min_seconds: service[0],
        median_seconds: median(&service),
        max_seconds: service[service.len() - 1],
        nodes_median_seconds: median(&sorted(|t| t.nodes_seconds)),
        clock_started_median_seconds: median(&sorted(|t| t.clock_started_seconds)),
        first_contended_median_seconds: contended.get(contended.len() / 2).copied(),
        first_contended_max_seconds: contended.last().copied(),
        load_average: load_average(),
    }
}

/// The machine's 1-minute load average (/proc/loadavg): figures taken on a busy machine say so.
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The program a lock's service runs, which names the service in the table.
fn service_name(lock: &dyn Lock) -> &'static str {
    lock.service()
        .requirements()
        .first()
        .map_or("?", |r| r.program)
}

/// One short run of `lock` without faults; its start-up times from its `results.json`.
fn run_once(lock: &dyn Lock, dir: &Path, round: u32) -> Result<StartupTimes> {
    let store = dir.join(format!("startup-{}-{round}", lock.name()));
    let status = Command::new(std::env::current_exe()?)
        .args(["run", "--lock", lock.name(), "--time-limit", "3s"])
        .args(["--seed", &(round + 1).to_string(), "--store"])
        .arg(&store)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    let results = super::violations::find_history(&store)
        .map(|history| history.with_file_name(crate::store::RESULTS))
        .with_context(|| format!("the {} start-up run left no run ({status})", lock.name()))?;
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&results)?)?;
    serde_json::from_value(json["run"]["startup"].clone())
        .with_context(|| format!("{} has no start-up times", results.display()))
}
