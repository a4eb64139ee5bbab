//! A lock that a crash can jam is caught, on a real Redis: a client program that takes the key
//! with `SET NX` and no expiry, under `kill-client`, is INVALID with the jam's story in every
//! output; lockpick's own five locks, under crashes, restarts and partitions, recover and are
//! never called jammed.
//!
//! Needs Debian's python3-redis (`.ci/install-packages`).

use crate::common;

use std::path::Path;

use common::{run, run_line, Run};

/// A careless Redis client program in `mode` (see the program's docstring).
fn careless(mode: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let program = root.join("examples/broken/careless_redis.py");
    format!("{} {mode}", program.display())
}

/// Runs `--lock exec:redis:<command>` (one argument, spaces and all) with the flags in `line`,
/// in a temporary store that lives as long as the result.
fn exec_run(command: &str, line: &str) -> (Run, tempfile::TempDir) {
    let store = tempfile::tempdir().unwrap();
    let lock = format!("exec:redis:{command}");
    let mut args = vec!["--lock", lock.as_str()];
    args.extend(line.split_whitespace());
    (run(store.path(), &args), store)
}

fn jams(r: &Run) -> Vec<serde_json::Value> {
    r.results["liveness"]["jams"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_lock_without_expiry_is_jammed_by_a_killed_holder() {
    // Two clients, holders working 500 ms: almost every kill finds the lock held, by its
    // victim half of the time; once a holder dies, the key stays forever. Which client a kill
    // finds is chance: a run whose jam began too late to outlast the bound is run again (at
    // most three runs), and no run may call the lock safe.
    let line = "--nemesis kill-client --clients 2 --work 500ms --fault-interval 500ms \
                --fault-duration 500ms --time-limit 15s";
    let (mut r, mut _store) = exec_run(&careless("no-expiry"), line);
    for _ in 0..2 {
        if !jams(&r).is_empty() {
            break;
        }
        assert_ne!(r.code, 0, "a lock without expiry called safe: {}", r.stdout);
        (r, _store) = exec_run(&careless("no-expiry"), line);
    }
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.valid(), "invalid");
    let found = jams(&r);
    assert!(!found.is_empty(), "{}", r.stdout);
    let jam = &found[0];
    assert!(jam["failed_attempts"].as_u64().unwrap() >= 2, "{jam}");
    assert_eq!(r.overlaps(), 0, "a jam is no overlap: {}", r.stdout);
    // Its story, told as the client program's word.
    let story = r.results["stories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "jam")
        .cloned()
        .expect("a jam story");
    let steps: Vec<&str> = story["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();
    let text = steps.join("\n");
    assert!(text.contains("acquired the lock"), "{text}");
    assert!(
        text.contains("the nemesis began a kill of client"),
        "{text}"
    );
    // The server said the key has no expiry: no lease is said to have ended.
    assert!(text.contains("held its key with no expiry"), "{text}");
    assert!(!text.contains("certainly ended"), "{text}");
    assert!(text.contains("were refused from"), "{text}");
    // The server never agreed: its PTTL said the key has no expiry, which every output tells.
    let claims = &r.results["lease_claims"];
    assert!(claims["contradicted"].as_u64().unwrap() > 0, "{claims}");
    let first = claims["first"][0].as_str().unwrap();
    assert!(
        first.contains("server said the key has no expiry"),
        "{first}"
    );
    assert!(
        r.stdout
            .contains("told: the client program reported lease bounds the server contradicts"),
        "{}",
        r.stdout
    );
    // The terminal and JUnit say the same.
    assert!(r.stdout.contains("lock jammed: "), "{}", r.stdout);
    let junit = std::fs::read_to_string(r.dir.join("junit.xml")).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&junit).unwrap();
    let case = report.test_suites[0]
        .test_cases
        .iter()
        .find(|c| c.name.as_str() == "lock never jammed")
        .expect("a liveness case");
    assert!(
        matches!(case.status, quick_junit::TestCaseStatus::NonSuccess { .. }),
        "{junit}"
    );
}

#[test]
fn a_client_that_deletes_the_next_holders_key_is_blamed_with_the_service_never_alone() {
    // A holder frozen past its lease wakes, and its plain DEL removes the next holder's key: the
    // grant after it comes under a live lease, and the outputs say the lock (service or client)
    // broke mutual exclusion, never the service alone.
    let line = "--nemesis pause-holder --clients 3 --ttl 1s --fault-duration 2500ms \
                --fault-interval 500ms --time-limit 12s";
    let (r, _store) = exec_run(&careless("unsafe-release"), line);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("(the lock (service or client) broke mutual exclusion)"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("the lock service broke"), "{}", r.stdout);
    // Measured here: 45 of 87 overlaps came under a live lease, after a stale DEL.
    let overlaps = r.results["overlapping_holders"]["overlaps"]
        .as_array()
        .unwrap();
    let why = overlaps
        .iter()
        .find(|o| o["cause"] == "granted-under-live-lease")
        .map(|o| o["why"].as_str().unwrap().to_string())
        .expect("a grant under a live lease");
    assert!(
        why.contains("the lock (service or client) broke mutual exclusion"),
        "{why}"
    );
}

/// lockpick's own lock recovers from a killed client, a killed and restarted server, and a
/// partitioned server: no jam, whatever else the run shows.
fn recovers(lock: &str) {
    let r = run_line(&format!(
        "--lock {lock} --nemesis kill-client,kill-node,partition-node --time-limit 15s"
    ));
    assert!(
        (0..=2).contains(&r.code),
        "{lock}: {}\n{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(
        jams(&r),
        Vec::<serde_json::Value>::new(),
        "{lock}: {}",
        r.stdout
    );
    assert!(!r.stdout.contains("lock jammed"), "{}", r.stdout);
}

#[test]
fn redis_recovers_from_crashes_restarts_and_partitions() {
    recovers("redis");
}

#[test]
fn redlock_recovers_from_crashes_restarts_and_partitions() {
    recovers("redlock");
}

#[test]
fn rslock_recovers_from_crashes_restarts_and_partitions() {
    recovers("rslock");
}

#[test]
fn etcd_recovers_from_crashes_restarts_and_partitions() {
    recovers("etcd");
}

#[test]
fn zookeeper_recovers_from_crashes_restarts_and_partitions() {
    recovers("zookeeper");
}
