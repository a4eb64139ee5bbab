//! `lockpick bench startup`: how long each lock service takes to come up on fresh nodes, from
//! the first server spawned until every server answers its readiness check. Prints figures;
//! asserts nothing (the acceptance bar, well under 5 s, is for a person to read).

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::children::Children;
use crate::cli::BenchArgs;
use crate::config::bad;
use crate::locks::{Lock, LOCKS};
use crate::run_prefix::RunPrefix;
use crate::runtime::netns::NetnsRuntime;
use crate::runtime::{Node, Runtime};
use crate::scratch::Scratch;
use crate::service::ServiceSetup;

pub fn startup(args: &BenchArgs) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        return Err(bad(
            "lockpick bench needs root: it creates network namespaces",
        ));
    }
    if args.rounds == 0 || args.rounds > 100 {
        return Err(bad("--rounds must be between 1 and 100"));
    }
    let logs = tempfile_dir()?;
    println!(
        "{:<10} {:>6} {:>9} {:>9} {:>9}",
        "service", "nodes", "min", "median", "max"
    );
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
    for lock in chosen {
        let mut times = Vec::new();
        for _ in 0..args.rounds {
            times.push(start_once(lock, &logs)?);
        }
        times.sort();
        let nodes = lock.capabilities().servers;
        let name = service_name(lock);
        let s = |d: Duration| format!("{:.3} s", d.as_secs_f64());
        println!(
            "{name:<10} {nodes:>6} {:>9} {:>9} {:>9}",
            s(times[0]),
            s(times[times.len() / 2]),
            s(times[times.len() - 1])
        );
    }
    let _ = std::fs::remove_dir_all(&logs);
    Ok(())
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
        faketime: false,
        launches: &mut std::collections::BTreeMap::new(),
    })?;
    let elapsed = started.elapsed();
    children.stop_all(Duration::from_secs(3));
    drop(scratch);
    runtime.teardown();
    Ok(elapsed)
}

fn tempfile_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("lockpick-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
