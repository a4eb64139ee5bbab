//! Restarts with what a server kept: `--persistence` (an append-only file for each
//! redis-server) and `--restart-after` (how long a killed server stays down), against real
//! servers. The remedies Redlock's author gives for kill-node's hole close it: a server that
//! comes back with its keys, or comes back only after every lease it granted has ended.
//!
//! The Docker run uses the engine DOCKER_HOST names if one answers there, else one of its own
//! (see `common::engine`), and builds the images it needs; nothing is skipped.

use crate::common;

use common::engine::Engine;
use common::{fault_starts, lockpick, refused, run_line, Run};
use serde_json::Value;

/// The history's setup line.
fn setup_of(r: &Run) -> Value {
    r.history().remove(0)["value"].clone()
}

fn config_of(r: &Run) -> Value {
    let text = std::fs::read_to_string(r.dir.join("config.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The kill faults' stops: each names the restarted server's pid and its measured downtime.
fn restarts_of(history: &[Value]) -> Vec<Value> {
    history
        .iter()
        .filter(|op| op["process"] == "nemesis" && op["f"] == "stop")
        .filter(|op| op["value"]["fault"] == "kill")
        .cloned()
        .collect()
}

/// Every kill took hold, and every one was restarted: a new pid, down at least as long as
/// the kill's `downtime_ms` said.
fn every_kill_restarted(r: &Run) -> Vec<(Value, Value)> {
    let history = r.history();
    let kills = fault_starts(r, "kill");
    let restarts = restarts_of(&history);
    assert!(!kills.is_empty(), "no kill:\n{}", r.stdout);
    assert_eq!(
        kills.len(),
        restarts.len(),
        "a killed server was not restarted"
    );
    kills
        .into_iter()
        .map(|kill| {
            let restart = restarts
                .iter()
                .find(|s| s["value"]["id"] == kill["value"]["id"])
                .unwrap_or_else(|| panic!("no restart for {kill}"))
                .clone();
            assert_eq!(kill["value"]["effective"], true, "{kill}");
            assert_ne!(restart["value"]["restarted_pid"], kill["value"]["pid"]);
            assert!(restart["value"]["restarted_pid"].is_u64(), "{restart}");
            let planned = kill["value"]["downtime_ms"].as_u64().unwrap();
            let measured = restart["value"]["down_ms"].as_u64().unwrap();
            assert!(measured >= planned, "{kill}\n{restart}");
            (kill, restart)
        })
        .collect()
}

/// The leases live when a killed server came back: acquisitions granted before the kill whose
/// `live_until` had not yet passed at the restart.
fn leases_live_across_a_restart(r: &Run, restarts: &[(Value, Value)]) -> usize {
    let history = r.history();
    let granted: Vec<(u64, u64)> = history
        .iter()
        .filter(|op| op["f"] == "acquire" && op["type"] == "ok")
        .filter_map(|op| {
            Some((
                op["time"].as_u64()?,
                op["value"]["lease"]["live_until"].as_u64()?,
            ))
        })
        .collect();
    restarts
        .iter()
        .map(|(kill, restart)| {
            let (killed, back) = (
                kill["time"].as_u64().unwrap(),
                restart["time"].as_u64().unwrap(),
            );
            granted
                .iter()
                .filter(|(at, live_until)| *at < killed && *live_until > back)
                .count()
        })
        .sum()
}

/// The same fault schedule as `nemeses.rs`'s `killing_a_redis_without_persistence_gives_two_
/// holders` (same seed and timings), which breaks a Redis that forgets: with an append-only
/// file fsynced before every reply the restarted server still holds the key, and nobody else
/// gets the lock while its lease lives.
#[test]
fn a_redis_with_aof_always_keeps_the_key_across_a_restart() {
    let r = run_line(
        "--lock redis --nemesis kill-node --persistence aof-always --work 1s --ttl 5s \
         --fault-duration 200ms --fault-interval 1s --time-limit 10s --seed 35",
    );
    // Never INVALID. A loaded machine once left too few grants to prove contention (only
    // client 0 held the lock, twice): UNKNOWN for that reason is honest, the rest still holds.
    assert!(
        r.code == 0 || (r.code == 2 && r.stdout.contains("ever held the lock")),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(r.overlaps(), 0, "{}", r.stdout);
    assert!(r.holds() > 0, "{}", r.stdout);
    assert_eq!(setup_of(&r)["persistence"], "aof-always");
    assert_eq!(config_of(&r)["persistence"], "aof-always");
    assert_eq!(r.results["run"]["config"]["persistence"], "aof-always");
    let restarts = every_kill_restarted(&r);
    // A lease was live when its server came back: the key it kept is what refused the others.
    assert!(
        leases_live_across_a_restart(&r, &restarts) > 0,
        "no lease outlived a restart: the run proves nothing about what was kept\n{}",
        r.stdout
    );
    // Each restarted server read its own file back.
    let log = std::fs::read_to_string(r.dir.join("logs/redis-n1.log")).unwrap();
    let loaded = log.matches("DB loaded from append only file").count();
    assert_eq!(loaded, restarts.len(), "{log}");
}

/// Redlock's other remedy: a killed server that stays down for the TTL comes back only after
/// every lease it granted has ended, so its empty keyspace grants nothing twice.
#[test]
fn redlock_restarted_after_the_ttl_grants_no_lock_twice() {
    let r = run_line(
        "--lock redlock --nemesis kill-node --restart-after 1s --ttl 1s --time-limit 10s \
         --seed 12",
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.overlaps(), 0, "{}", r.stdout);
    assert!(r.holds() > 0, "{}", r.stdout);
    let config = config_of(&r);
    assert_eq!(config["restart_after"], 1000);
    // Redlock's servers are redis-server: the knob is there, at its default.
    assert_eq!(config["persistence"], "none");
    for (kill, _) in every_kill_restarted(&r) {
        assert_eq!(kill["value"]["downtime_ms"], 1000, "{kill}");
    }
}

#[test]
fn a_knob_that_means_nothing_to_the_run_is_refused_in_one_line() {
    let why = refused("--lock etcd --persistence aof-always");
    assert!(
        why.contains("--persistence aof-always does not apply to --lock etcd"),
        "{why}"
    );
    assert_eq!(why.trim_end().lines().count(), 1, "{why}");
    let why = refused("--lock zookeeper --nemesis kill-node --persistence none");
    assert!(why.contains("--lock zookeeper"), "{why}");
    let why = refused("--lock redis --nemesis pause-holder --restart-after 2s");
    assert!(
        why.contains("--nemesis pause-holder kills no server"),
        "{why}"
    );
    assert!(why.contains("kill-node"), "{why}");
    assert_eq!(why.trim_end().lines().count(), 1, "{why}");
    let why = refused("--lock redis --restart-after 2s");
    assert!(why.contains("--nemesis none kills no server"), "{why}");
    let why = refused("--lock redis --persistence fsync-sometimes");
    assert!(why.contains("aof-always"), "{why}");

    // In a comparison, a cell the knob means nothing to is n/a with the same reason, and the
    // rest of the matrix runs.
    let store = tempfile::tempdir().unwrap();
    let out = lockpick()
        .args([
            "compare",
            "--locks",
            "redis,etcd",
            "--nemeses",
            "none,kill-node",
        ])
        .args([
            "--persistence",
            "aof-always",
            "--restart-after",
            "2s",
            "--check",
        ])
        .arg("--store")
        .arg(store.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let line = |cell: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(cell))
            .unwrap_or_else(|| panic!("no {cell}:\n{stdout}"))
            .to_string()
    };
    assert!(
        line("redis × kill-node").contains("expected valid"),
        "{stdout}"
    );
    assert!(
        line("redis × none").contains("n/a: --restart-after 2s"),
        "{stdout}"
    );
    for cell in ["etcd × none", "etcd × kill-node"] {
        assert!(
            line(cell).contains("n/a: --persistence aof-always does not apply to --lock etcd"),
            "{stdout}"
        );
    }
}

/// In containers too, each of Redlock's five servers keeps its own file in its own folder
/// (under the run's scratch, mounted at the same path), reads it back when restarted, and the
/// folders go with the run.
#[test]
fn redlock_in_containers_keeps_its_keys_across_restarts() {
    let engine = Engine::with_images(&[("bookworm", &["node", "redis"])]);
    let store = tempfile::tempdir().unwrap();
    let r = engine.run(
        store.path(),
        "--lock redlock --nemesis kill-node --persistence aof-always --time-limit 10s --seed 5",
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.overlaps(), 0, "{}", r.stdout);
    let setup = setup_of(&r);
    assert_eq!(setup["runtime"], "docker");
    assert_eq!(setup["persistence"], "aof-always");
    let restarts = every_kill_restarted(&r);
    for (kill, _) in &restarts {
        let node = kill["value"]["targets"][0].as_str().unwrap();
        let log = std::fs::read_to_string(r.dir.join(format!("logs/redis-{node}.log"))).unwrap();
        assert!(log.contains("DB loaded from append only file"), "{log}");
    }
}
