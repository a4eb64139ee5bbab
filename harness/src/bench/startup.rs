//! Service start-up: how long each lock service takes to come up on fresh nodes, from the first
//! server spawned until every server answers its readiness check.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::processes::children::Children;
use serde::Serialize;

use crate::locks::{Lock, LOCKS};
use crate::run_prefix::RunPrefix;
use crate::runtime::netns::NetnsRuntime;
use crate::runtime::{Node, Runtime};
use crate::scratch::Scratch;
use crate::service::ServiceSetup;

#[derive(Debug, Serialize)]
pub struct StartupRow {
    pub service: &'static str,
    pub nodes: usize,
    pub min_seconds: f64,
    pub median_seconds: f64,
    pub max_seconds: f64,
}

/// Starts each kind of service `rounds` times.
pub fn startup(rounds: u32, logs: &std::path::Path) -> Result<Vec<StartupRow>> {
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
        for _ in 0..rounds.max(1) {
            times.push(start_once(lock, logs)?);
        }
        times.sort();
        let s = Duration::as_secs_f64;
        rows.push(StartupRow {
            service: service_name(lock),
            nodes: lock.capabilities().servers,
            min_seconds: s(&times[0]),
            median_seconds: s(&times[times.len() / 2]),
            max_seconds: s(&times[times.len() - 1]),
        });
    }
    Ok(rows)
}

/// The program a lock's service runs, which names the service in the table.
fn service_name(lock: &dyn Lock) -> &'static str {
    lock.service()
        .requirements()
        .first()
        .map_or("?", |r| r.program)
}

fn start_once(lock: &dyn Lock, logs: &std::path::Path) -> Result<Duration> {
    let prefix = RunPrefix::claim()?;
    crate::run_prefix::record_made(&prefix.name, "scratch")?;
    let scratch = Scratch::create(&prefix.name)?;
    let mut runtime = NetnsRuntime::create(&prefix.name, prefix.subnet())?;
    let mut children = Children::default();
    let mut service = lock.service();
    let nodes: Vec<Node> = (1..=service.node_count())
        .map(|i| runtime.add_node(&format!("n{i}")))
        .collect::<Result<_>>()?;
    let started = Instant::now();
    service.start(&mut ServiceSetup {
        runtime: &runtime,
        nodes: &nodes,
        logs,
        scratch: &scratch.path,
        children: &mut children,
        server_clock: false,
        faketime: false,
        launches: &mut std::collections::BTreeMap::new(),
        server_bin: None,
        persistence: Default::default(),
        // The run's default lease.
        ttl: Duration::from_secs(1),
    })?;
    let elapsed = started.elapsed();
    children.stop_all(Duration::from_secs(3));
    drop(scratch);
    for problem in runtime.teardown() {
        crate::tell!("lockpick: teardown: {problem}");
    }
    Ok(elapsed)
}
