//! `lockpick bench startup`: how long each lock service takes to come up on fresh nodes, from
//! the first server spawned until every server answers its readiness check. Prints figures;
//! asserts nothing (the acceptance bar, well under 5 s, is for a person to read).

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::children::Children;
use crate::cli::{BenchArgs, LockKind};
use crate::config::bad;
use crate::run::{lock_service, Scratch};
use crate::run_prefix::RunPrefix;
use crate::runtime::netns::NetnsRuntime;
use crate::runtime::{Node, Runtime};
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
    for lock in [LockKind::Redlock, LockKind::Etcd, LockKind::Zookeeper] {
        let mut times = Vec::new();
        for _ in 0..args.rounds {
            times.push(start_once(lock, &logs)?);
        }
        times.sort();
        let nodes = lock_service(lock).node_count();
        let name = match lock {
            LockKind::Redlock => "redis",
            other => other.name(),
        };
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

fn start_once(lock: LockKind, logs: &std::path::Path) -> Result<Duration> {
    let prefix = RunPrefix::claim()?;
    let scratch = Scratch::create(&prefix.name)?;
    let mut runtime = NetnsRuntime::create(&prefix.name, prefix.subnet())?;
    let mut children = Children::default();
    let mut service = lock_service(lock);
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
