//! `redis-sentinel` on real servers: a primary, two replicas and three Sentinels started and
//! ready, a failover when the primary's node is hit and a client that follows it, the careful
//! variant's knob refused where it means nothing, nothing left after a controller killed
//! mid-failover, a partitioned primary whose lock is lost in the failover, and the same service
//! in containers.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::engine::Engine;
use common::{history_lines, lockpick, namespaces_with, wait_for, Run};
use nix::sys::signal::{kill, Signal};
use serde_json::{json, Value};

/// The primaries that granted the lock, in the order they first did.
fn granting_primaries(run: &Run) -> Vec<String> {
    let mut seen = Vec::new();
    for op in run.history() {
        if op["f"] == "acquire" && op["type"] == "ok" {
            for node in op["value"]["nodes"].as_array().into_iter().flatten() {
                let node = node.as_str().unwrap().to_string();
                if !seen.contains(&node) {
                    seen.push(node);
                }
            }
        }
    }
    seen
}

/// A schedule that hits the first node (the primary at the start) with `nemesis` from 1 s on,
/// for `duration_ms`: longer than the Sentinels' down-after, so they fail it over.
fn schedule_hitting_the_primary(dir: &Path, nemesis: &str, duration_ms: u64) -> String {
    let path = dir.join("schedule.json");
    let schedule = json!({
        "seed": 1,
        "lock": "redis-sentinel",
        "windows": [{
            "nemesis": nemesis, "start_ms": 1000, "duration_ms": duration_ms, "targets": ["n1"]
        }]
    });
    std::fs::write(&path, schedule.to_string()).unwrap();
    path.display().to_string()
}

/// What a Sentinel logged, for the node `name` of the run.
fn sentinel_log(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join("logs").join(format!("sentinel-{name}.log")))
        .unwrap_or_default()
}

#[test]
fn a_run_without_faults_is_never_invalid_and_records_the_failover_timeouts() {
    let r = common::run_line("--lock redis-sentinel --time-limit 4s");
    assert_ne!(r.valid(), "invalid", "{}\n{}", r.stdout, r.stderr);
    assert!([0, 2].contains(&r.code), "{}\n{}", r.stdout, r.stderr);
    assert!(r.holds() > 0, "no one ever held the lock: {}", r.stdout);
    // The setup line and results.json say how fast the Sentinels fail over.
    let facts = json!({"down_after_ms": 1000, "failover_timeout_ms": 3000, "quorum": 2});
    let setup = &r.history()[0];
    assert_eq!(setup["value"]["service_facts"], facts);
    assert_eq!(r.results["run"]["service_facts"], facts);
    // And so does the line that tells the service is ready.
    let told = format!("{}{}", r.stdout, r.stderr);
    assert!(
        told.contains("ready on 3 node(s)")
            && told.contains("(down_after_ms 1000, failover_timeout_ms 3000, quorum 2)"),
        "{told}"
    );
    // Every grant came from the primary, the first node.
    let servers = setup["value"]["servers"].as_array().unwrap().clone();
    assert_eq!(granting_primaries(&r), [servers[0].as_str().unwrap()]);
    common::assert_nothing_left(&r);
}

#[test]
fn killing_the_primary_fails_over_and_the_client_follows_the_new_one() {
    let r =
        common::run_line("--lock redis-sentinel --nemesis kill-leader --seed 1 --time-limit 10s");
    assert!([0, 1, 2].contains(&r.code), "{}\n{}", r.stdout, r.stderr);
    let servers: Vec<String> = r.history()[0]["value"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    // The Sentinels named the first node's server as the leader when the fault opened...
    let kills = common::fault_starts(&r, "kill");
    assert_eq!(kills.len(), 1, "{kills:?}");
    let leader = &kills[0]["value"]["leader"];
    assert_eq!(leader["node"], "n1", "{leader}");
    assert_eq!(leader["address"], servers[0].as_str());
    assert_eq!(kills[0]["value"]["targets"], json!(["n1"]));
    // ...and another, in a later epoch, before it healed.
    let id = &kills[0]["value"]["id"];
    let stop = r
        .history()
        .into_iter()
        .find(|op| op["process"] == "nemesis" && op["f"] == "stop" && op["value"]["id"] == *id)
        .expect("the kill ended");
    let after = &stop["value"]["leader_after"];
    assert_ne!(after["node"], "n1", "{after}");
    assert!(after["term"].as_u64() > leader["term"].as_u64(), "{after}");
    assert_eq!(stop["value"]["leadership_moved"], true);
    // The Sentinels' logs say so too.
    let old_ip = servers[0].split(':').next().unwrap();
    let switched = format!("+switch-master lockpick {old_ip} 6379 ");
    assert!(
        ["n2", "n3"]
            .iter()
            .any(|n| sentinel_log(&r.dir, n).contains(&switched)),
        "no Sentinel switched the primary"
    );
    // And the clients followed: grants from the old primary, then from the promoted one.
    let primaries = granting_primaries(&r);
    assert!(primaries.len() >= 2, "grants only from {primaries:?}");
    assert_eq!(primaries[0], servers[0]);
    assert_eq!(primaries[1], after["address"].as_str().unwrap());
    common::assert_nothing_left(&r);
}

#[test]
fn wait_replicas_is_refused_on_a_lock_without_replicas_and_beyond_the_replicas() {
    let stderr = common::refused("--lock redis --wait-replicas 1 --time-limit 2s");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--lock redis:"), "{stderr}");
    assert!(stderr.contains("redis-sentinel"), "{stderr}");
    let stderr = common::refused("--lock redis-sentinel --wait-replicas 3 --time-limit 2s");
    assert!(stderr.contains("between 1 and 2"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// The delay proxies carry each server's own port, not the Sentinels' beside it: a run whose
/// clients could not find the Sentinels would prove nothing, so it is refused with the reason.
#[test]
fn delaying_a_clients_server_links_is_refused_with_the_reason() {
    let stderr = common::refused("--lock redis-sentinel --nemesis delay-client --time-limit 2s");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--nemesis delay-client"), "{stderr}");
    assert!(stderr.contains("Sentinels"), "{stderr}");
}

#[test]
fn a_controller_killed_mid_failover_leaves_nothing_clean_cannot_remove() {
    let store = tempfile::tempdir().unwrap();
    let schedule = schedule_hitting_the_primary(store.path(), "pause-node", 60_000);
    let runs = store.path().join("runs");
    let mut command = lockpick();
    command.args(["run", "--lock", "redis-sentinel", "--schedule", &schedule]);
    command.args(["--time-limit", "120s", "--wait-replicas", "1"]);
    let mut run = common::start_in(command, &runs);
    wait_for("the run's history", Duration::from_secs(60), || {
        history_lines(&runs) > 0
    });
    let dir = runs.join("latest").canonicalize().unwrap();
    let (prefix, subnet) = common::run_identity(&dir);
    run.prefix = Some(prefix.clone());
    // Mid-failover: the primary is frozen and the Sentinels have agreed it is down.
    wait_for("a failover", Duration::from_secs(60), || {
        ["n2", "n3"]
            .iter()
            .any(|n| sentinel_log(&dir, n).contains("+odown master lockpick"))
    });
    let sentinels = common::processes_mentioning(&[&subnet])
        .into_iter()
        .filter(|p| p.contains("[sentinel]"))
        .count();
    assert_eq!(sentinels, 3, "three Sentinels run before the kill");
    kill(run.pid(), Signal::SIGKILL).unwrap();
    run.wait();
    assert!(
        !namespaces_with(&prefix).is_empty(),
        "a killed controller cannot clean up"
    );
    common::clean_prefix(lockpick(), &prefix);
    common::assert_prefix_gone(&prefix);
    let left = common::processes_mentioning(&[&subnet]);
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn the_sentinel_service_runs_in_containers() {
    let engine = Engine::with_images(&[("bookworm", &["node", "redis-sentinel"])]);
    let store = tempfile::tempdir().unwrap();
    let r = engine.run(store.path(), "--lock redis-sentinel --time-limit 4s");
    assert!([0, 2].contains(&r.code), "{}\n{}", r.stdout, r.stderr);
    let setup: Value = r.history()[0].clone();
    assert_eq!(setup["value"]["runtime"], "docker");
    assert_eq!(
        setup["value"]["runtime_facts"]["server_image"],
        "lockpick/redis-sentinel:bookworm"
    );
    assert!(r.holds() > 0, "no one ever held the lock: {}", r.stdout);
    let servers = setup["value"]["servers"].as_array().unwrap().clone();
    assert_eq!(granting_primaries(&r), [servers[0].as_str().unwrap()]);
    common::assert_nothing_left(&r);
}

/// The split brain: the primary cut off from the other servers keeps granting to the clients
/// that still reach it, the Sentinels promote a replica, and once the partition heals a client
/// that asks them again is granted by the new primary, which never had the old one's grant,
/// while that lease is live. Told as the lock lost in a failover, from the leader evidence.
/// Long holds (work 1.5 s of a 2 s lease) keep a holder on the old primary when it is demoted,
/// and up to 40 s of partitions, ended at the first proven violation, give a loaded machine
/// more than one chance (4 of 4 loaded runs were decided by the first, at 12 s).
#[test]
fn a_partitioned_primary_loses_the_lock_in_the_failover() {
    let r = common::run_line(
        "--lock redis-sentinel --nemesis partition-leader --seed 1 --time-limit 40s --quiet 8s \
         --ttl 2s --work 1500ms --until decided",
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let lost = r.results["overlapping_holders"]["lost_in_failover"]
        .as_u64()
        .unwrap();
    assert!(lost >= 1, "{}", r.stdout);
    assert!(r.stdout.contains("lost in a failover"), "{}", r.stdout);
    // The grants of the lost lock came from two primaries: the deposed one and the new one.
    assert!(granting_primaries(&r).len() >= 2, "{}", r.stdout);
    common::assert_nothing_left(&r);
}
