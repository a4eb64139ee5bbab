//! A renewal is recorded only after its grant, for every built-in client and for an exec
//! client (its `extend`s, and the background renewals a program reports): each grant is made to
//! reach the worker two thirds of a TTL late (`LOCKPICK_INJECT_CLIENT=late-grant:all`), so the
//! lease's watchdog renews before the worker records the acquire's `ok`, the race an etcd
//! keep-alive once won by 0.8 ms, making the checker call our own history malformed. (The hook
//! makes each run unknown, as any hooked run is; the checkers must find nothing else.)

use crate::common;

use std::path::Path;

use common::{finished, lockpick, Run};
use serde_json::Value;

/// A run of `lock` without faults whose every grant reaches the worker late.
fn late_grants(lock: &str) -> (Run, tempfile::TempDir) {
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .args([
            "run",
            "--lock",
            lock,
            "--nemesis",
            "none",
            "--time-limit",
            "6s",
        ])
        .args(["--clients", "3", "--ttl", "1s", "--store"])
        .arg(store.path())
        .env("LOCKPICK_INJECT_CLIENT", "late-grant:all")
        .output()
        .unwrap();
    (finished(store.path(), output), store)
}

/// The checkers found the history well formed and nothing wrong in it: the run is unknown only
/// because the hook was in effect (a hooked run is never called valid).
fn judged_sound_but_for_the_hook(r: &Run, lock: &str) {
    assert_eq!(r.code, 2, "{lock}:\n{}\n{}", r.stdout, r.stderr);
    assert!(r.results["malformed"].is_null(), "{lock}: {}", r.results);
    let reasons = r.results["unknown_reasons"].as_array().unwrap();
    let reason = reasons[0].as_str().unwrap();
    assert!(
        reason.contains("LOCKPICK_INJECT_CLIENT=late-grant:all"),
        "{lock}: {reason}"
    );
    // Besides the hook, only a want of contention: a loaded machine once let one ZooKeeper
    // client alone hold the lock in 6 s, which is no fault found in the history.
    for other in &reasons[1..] {
        let other = other.as_str().unwrap();
        assert!(other.contains("ever held the lock"), "{lock}: {reasons:?}");
    }
}

/// The renewals that were made before their grant reached the worker: by its bounds, the
/// renewal was sent before the acquire's `ok` was recorded.
fn renewals_before_their_grant_was_recorded(history: &[Value], ttl_ns: u64) -> usize {
    let mut granted_at = std::collections::HashMap::new();
    let mut early = 0;
    for op in history {
        let acquisition = op["value"]["acquisition"]
            .as_str()
            .unwrap_or("")
            .to_string();
        match (op["f"].as_str(), op["type"].as_str()) {
            (Some("acquire"), Some("ok")) => {
                granted_at.insert(acquisition, op["time"].as_u64().unwrap());
            }
            (Some("renew"), _) => {
                let granted = granted_at
                    .get(&acquisition)
                    .unwrap_or_else(|| panic!("a renewal before its grant: {op}"));
                let live_until = op["value"]["lease"]["live_until"].as_u64().unwrap();
                // Sent after the grant was recorded, it would be live until at least then plus
                // the TTL, less a drift allowance of a few ms.
                if live_until + 50_000_000 < granted + ttl_ns {
                    early += 1;
                }
            }
            _ => {}
        }
    }
    early
}

fn every_renewal_comes_after_its_grant(lock: &str) {
    let (r, _store) = late_grants(lock);
    judged_sound_but_for_the_hook(&r, lock);
    let early = renewals_before_their_grant_was_recorded(&r.history(), 1_000_000_000);
    assert!(
        early > 0,
        "{lock}: no renewal raced its grant, the test proved nothing:\n{}",
        r.stdout
    );
}

#[test]
fn redis_renewals_come_after_their_grant() {
    every_renewal_comes_after_its_grant("redis");
}

#[test]
fn redlock_renewals_come_after_their_grant() {
    every_renewal_comes_after_its_grant("redlock");
}

#[test]
fn rslock_renewals_come_after_their_grant() {
    every_renewal_comes_after_its_grant("rslock");
}

#[test]
fn etcd_keep_alives_come_after_their_grant() {
    every_renewal_comes_after_its_grant("etcd");
}

#[test]
fn zookeeper_session_checks_come_after_their_grant() {
    every_renewal_comes_after_its_grant("zookeeper");
}

#[test]
fn an_exec_programs_extends_come_after_their_grant() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let program = root.join("examples/python-redis/lock_client.py");
    every_renewal_comes_after_its_grant(&format!("exec:redis:{}", program.display()));
}

/// The renewal reports (`renewed`) read before their grant reached the worker: each is bounded
/// `expires_ms` after the moment it was read, so one read before the acquire's `ok` was recorded
/// ends before that `ok` plus `expires_ms`.
fn reports_read_before_their_grant_was_recorded(history: &[Value], expires_ns: u64) -> usize {
    let mut granted_at = std::collections::HashMap::new();
    let mut early = 0;
    for op in history {
        let acquisition = op["value"]["acquisition"].as_str().unwrap_or("");
        match (op["f"].as_str(), op["type"].as_str()) {
            (Some("acquire"), Some("ok")) => {
                granted_at.insert(acquisition.to_string(), op["time"].as_u64().unwrap());
            }
            (Some("renew"), _) => {
                let granted = granted_at[acquisition];
                let ends = op["value"]["lease"]["expires_by"].as_u64().unwrap();
                if ends < granted + expires_ns {
                    early += 1;
                }
            }
            _ => {}
        }
    }
    early
}

#[test]
fn an_exec_programs_reported_background_renewals_come_after_their_grant() {
    // python-redis-lock's own renewal thread renews two thirds of the expire after the grant,
    // before the late grant reaches the worker: its reports wait behind the grant.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let program = root.join("examples/python-redis-lock/lock_client.py");
    let lock = format!("exec:redis:{} --auto-renewal", program.display());
    let (r, _store) = late_grants(&lock);
    judged_sound_but_for_the_hook(&r, &lock);
    let early = reports_read_before_their_grant_was_recorded(&r.history(), 1_002_000_000);
    assert!(
        early > 0,
        "no report raced its grant, the test proved nothing:\n{}",
        r.stdout
    );
}
