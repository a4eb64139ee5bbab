//! The leader nemeses on real servers: each fault hits the server the service names as leader
//! when it opens, its start names that server (node, client address, term), its stop says who
//! led before it healed and whether leadership moved; a fenced consensus lock accepts no stale
//! write through a failover; a lock whose servers lead nothing refuses them (exit 254 in `run`,
//! n/a in a matrix). One etcd run goes through the Docker runtime.

use crate::common;

use std::collections::BTreeSet;

use common::engine::Engine;
use common::{lockpick, Run};
use serde_json::Value;

/// The nemesis's records of `f` (`start` or `stop`).
fn records(run: &Run, nemesis: &str, f: &str) -> Vec<Value> {
    run.history()
        .into_iter()
        .filter(|op| op["process"] == "nemesis" && op["f"] == f)
        .filter(|op| op["value"]["nemesis"] == nemesis)
        .map(|op| op["value"].clone())
        .collect()
}

/// The client addresses of the run's servers, as its setup line lists them.
fn server_addresses(run: &Run) -> BTreeSet<String> {
    let setup = &run.history()[0];
    (setup["value"]["servers"].as_array().unwrap().iter())
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// Checks every fault of `nemesis` named the leader it hit and what followed, and that at
/// least one saw leadership move before it healed; returns how many did.
fn leadership_evidence(run: &Run, nemesis: &str) -> usize {
    let starts = records(run, nemesis, "start");
    let stops = records(run, nemesis, "stop");
    assert!(
        !starts.is_empty(),
        "no {nemesis} fault began: {}",
        run.stdout
    );
    assert_eq!(starts.len(), stops.len(), "every fault heals");
    let addresses = server_addresses(run);
    let mut moved = 0;
    for (start, stop) in starts.iter().zip(&stops) {
        assert_eq!(start["id"], stop["id"]);
        let leader = &start["leader"];
        let node = leader["node"].as_str().expect("the leader's node");
        assert!(node.starts_with('n'), "{start}");
        // The fault hit the server that led.
        assert!(start["targets"]
            .as_array()
            .unwrap()
            .contains(&leader["node"]));
        let address = leader["address"].as_str().expect("the leader's address");
        assert!(
            addresses.contains(address),
            "{address} not in {addresses:?}"
        );
        assert!(leader["term"].as_u64().unwrap() >= 1, "{start}");
        assert!(stop.get("leader_after").is_some(), "{stop}");
        assert!(stop.get("leadership_moved").is_some(), "{stop}");
        if stop["leadership_moved"] == true {
            let after = &stop["leader_after"];
            let other = after["node"] != leader["node"];
            let later = after["term"].as_u64() > leader["term"].as_u64();
            assert!(other || later, "moved, but {after} is {leader}");
            // Asked of the other servers only: the one hit cannot answer for itself.
            assert_ne!(after["node"], leader["node"], "{stop}");
            moved += 1;
        }
    }
    assert!(moved > 0, "leadership never moved: {stops:?}");
    moved
}

/// A fenced consensus lock through a failover: never INVALID, and no stale write accepted.
fn held_through_failover(run: &Run) {
    assert_ne!(run.code, 254, "{}\n{}", run.stdout, run.stderr);
    assert_ne!(run.valid(), "invalid", "{}", run.stdout);
    assert_eq!(run.stale_writes(), 0, "{}", run.stdout);
}

#[test]
fn killing_the_etcd_leader_moves_leadership_and_accepts_no_stale_write() {
    let r = common::run_line(
        "--lock etcd --nemesis kill-leader --fencing on --time-limit 10s --seed 3",
    );
    held_through_failover(&r);
    leadership_evidence(&r, "kill-leader");
    // The kill and its restart are kill-node's own: pid gone, restarted pid.
    let start = &records(&r, "kill-leader", "start")[0];
    assert_eq!(start["fault"], "kill");
    assert_eq!(start["effective"], true, "{start}");
    let stop = &records(&r, "kill-leader", "stop")[0];
    assert!(stop["restarted_pid"].as_u64().is_some(), "{stop}");
    // The schedule names the leader, not a node, and replays.
    let schedule: Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir.join("schedule.json")).unwrap())
            .unwrap();
    let window = &schedule["windows"][0];
    assert_eq!(
        window["targets"],
        serde_json::json!(["leader"]),
        "{schedule}"
    );
}

#[test]
fn cutting_the_zookeeper_leader_off_from_its_followers_moves_leadership() {
    // 12 s cut off: ZooKeeper's followers wait 5 s before electing, and on a loaded machine
    // (six tests at once on two cores) the 7 s default once ended before they had a leader.
    let r = common::run_line(
        "--lock zookeeper --nemesis partition-leader --fencing on --time-limit 16s \
         --fault-duration 12s --seed 3",
    );
    held_through_failover(&r);
    leadership_evidence(&r, "partition-leader");
    // The leader is cut from the other servers only: no client is in the cuts.
    for start in records(&r, "partition-leader", "start") {
        let leader = start["leader"]["node"].clone();
        for cut in start["cuts"].as_array().unwrap() {
            assert_eq!(cut[0], leader, "{start}");
            assert!(cut[1].as_str().unwrap().starts_with('n'), "{start}");
        }
        assert_eq!(start["effective"], true, "{start}");
    }
}

#[test]
fn a_lock_whose_servers_lead_nothing_refuses_leader_nemeses_and_is_n_a_in_a_matrix() {
    let store = tempfile::tempdir().unwrap();
    let out = lockpick()
        .args([
            "run",
            "--lock",
            "redis",
            "--nemesis",
            "kill-leader",
            "--store",
        ])
        .arg(store.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(254), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("kill-leader") && stderr.contains("redis") && stderr.contains("lead"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(store.path()).unwrap().count(), 0);

    // In a comparison the same cell is n/a with the same reason; etcd's runs.
    let out = lockpick()
        .args(["compare", "--locks", "redis,etcd", "--nemeses"])
        .args([
            "kill-leader,pause-leader,partition-leader",
            "--check",
            "--store",
        ])
        .arg(store.path().join("store"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    for nemesis in ["kill-leader", "pause-leader", "partition-leader"] {
        let redis = format!("redis × {nemesis} (fencing on): n/a: ");
        let line = stdout.lines().find(|l| l.starts_with(&redis));
        assert!(line.is_some_and(|l| l.contains("lead nothing")), "{stdout}");
        let etcd = format!("etcd × {nemesis} (fencing on): expected");
        assert!(stdout.lines().any(|l| l.starts_with(&etcd)), "{stdout}");
    }
    assert!(stdout.contains("6 cells (3 n/a)"), "{stdout}");
}

#[test]
fn the_leader_nemeses_join_the_default_matrix() {
    let store = tempfile::tempdir().unwrap();
    let out = lockpick()
        .args(["compare", "--locks", "etcd", "--check", "--store"])
        .arg(store.path().join("store"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    for nemesis in ["kill-leader", "pause-leader", "partition-leader"] {
        let cell = format!("etcd × {nemesis} (fencing on)");
        assert!(stdout.contains(&cell), "{stdout}");
    }
}

#[test]
fn pausing_the_etcd_leader_in_a_container_moves_leadership() {
    let engine = Engine::with_images(&[("bookworm", &["node", "etcd"])]);
    let store = tempfile::tempdir().unwrap();
    let r = engine.run(
        store.path(),
        "--lock etcd --nemesis pause-leader --fencing on --time-limit 10s --seed 5",
    );
    held_through_failover(&r);
    assert_eq!(r.history()[0]["value"]["runtime"], "docker");
    leadership_evidence(&r, "pause-leader");
    // pause-node's own freeze, inside the container: the kernel's word.
    let start = &records(&r, "pause-leader", "start")[0];
    assert_eq!(start["effective"], true, "{start}");
}
