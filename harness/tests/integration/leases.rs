//! Every lock keeps its lease alive while its holder works longer than the TTL, and says so in
//! the history: without faults no two clients hold at once, every grant carries its lease's
//! bounds, and the renewals made during the long work appear as `renew` lines.

use crate::common;

use common::{assert_nothing_left, run_line};
use serde_json::Value;

/// A work time three times the TTL, no faults.
fn long_work_keeps_the_lease(lock: &str) {
    let r = run_line(&format!(
        "--lock {lock} --nemesis none --work 3s --ttl 1s --clients 2 --time-limit 10s"
    ));
    assert_eq!(r.code, 0, "{lock}:\n{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.overlaps(), 0, "{lock}: {}", r.stdout);
    assert_eq!(r.stale_writes(), 0, "{lock}: {}", r.stdout);
    assert!(r.holds() >= 2, "{lock}: only {} holds", r.holds());

    let history = r.history();
    let ok = |f: &str| -> Vec<&Value> {
        history
            .iter()
            .filter(|op| op["f"] == f && op["type"] == "ok")
            .collect()
    };
    let grants = ok("acquire");
    assert!(!grants.is_empty(), "{lock}: no grants");
    for grant in &grants {
        let lease = &grant["value"]["lease"];
        let live_until = lease["live_until"]
            .as_u64()
            .unwrap_or_else(|| panic!("{lock}: a grant without live_until: {grant}"));
        // Without faults a lease is still running when its grant is recorded.
        assert!(
            live_until > grant["time"].as_u64().unwrap(),
            "{lock}: {grant}"
        );
        if let Some(expires_by) = lease["expires_by"].as_u64() {
            assert!(live_until <= expires_by, "{lock}: {grant}");
        }
    }
    if lock != "zookeeper" {
        assert!(
            grants
                .iter()
                .all(|g| g["value"]["lease"]["expires_by"].is_u64()),
            "{lock}: without faults every grant's lease is bounded"
        );
    }

    // Three seconds of work under a one-second lease: renewed at least twice per grant that
    // lived through its work.
    let renewals = ok("renew");
    assert!(
        renewals.len() >= 2,
        "{lock}: {} renew lines",
        renewals.len()
    );
    for renewal in &renewals {
        let acquisition = &renewal["value"]["acquisition"];
        let granted = grants
            .iter()
            .find(|g| g["value"]["acquisition"] == *acquisition)
            .unwrap_or_else(|| panic!("{lock}: a renewal of no grant: {renewal}"));
        assert_eq!(renewal["process"], granted["process"], "{lock}");
        assert!(renewal["time"].as_u64() > granted["time"].as_u64());
        let lease = &renewal["value"]["lease"];
        let live_until = lease["live_until"].as_u64().expect("live_until");
        assert!(
            live_until > granted["value"]["lease"]["live_until"].as_u64().unwrap(),
            "{lock}: a renewal that moved nothing: {renewal}"
        );
        if let Some(expires_by) = lease["expires_by"].as_u64() {
            assert!(live_until <= expires_by, "{lock}: {renewal}");
        }
        // Made while held: sent before that acquisition's release was invoked (a renewal in
        // flight at the release may be answered, and recorded, after it: a loaded machine once
        // recorded one 35 ms after its send); without a send time, recorded before it.
        let released = history.iter().find(|op| {
            op["f"] == "release"
                && op["type"] == "invoke"
                && op["value"]["acquisition"] == *acquisition
        });
        if let Some(released) = released {
            let before = match renewal["value"]["sent"].as_u64() {
                Some(sent) => Some(sent) < released["time"].as_u64(),
                None => renewal["index"].as_u64() < released["index"].as_u64(),
            };
            assert!(before, "{lock}: renewed after release: {renewal}");
        }
    }
    assert_nothing_left(&r);
}

#[test]
fn redis_keeps_its_lease_through_long_work() {
    long_work_keeps_the_lease("redis");
}

#[test]
fn redlock_keeps_its_lease_through_long_work() {
    long_work_keeps_the_lease("redlock");
}

#[test]
fn etcd_keeps_its_lease_through_long_work() {
    long_work_keeps_the_lease("etcd");
}

#[test]
fn zookeeper_keeps_its_session_through_long_work() {
    long_work_keeps_the_lease("zookeeper");
}

#[test]
fn rslock_keeps_its_lease_through_long_work() {
    long_work_keeps_the_lease("rslock");
}

/// `--ttl 20ms --op-timeout 4ms` once made every Redlock client panic on its node timeout.
#[test]
fn a_short_op_timeout_does_not_break_redlock_clients() {
    let r = run_line("--lock redlock --nemesis none --ttl 20ms --op-timeout 4ms --time-limit 3s");
    // A 20 ms lease on a busy machine may really run out (a late renewal): that is the lock's
    // verdict to give. What must not happen is a client that cannot even run.
    assert_ne!(r.code, 255, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("exited with"), "{}", r.stdout);
    assert!(r.results["run"]["crashed_clients"]
        .as_array()
        .is_some_and(|a| a.is_empty()));
    assert!(r.holds() >= 1, "no client ever held the lock: {}", r.stdout);
    assert_nothing_left(&r);
}

/// A Redis-family lease ends by the server's own count: the key's remaining time (`PTTL`) read
/// with the `SET` or `PEXPIRE`, plus 1 ms and 0.1 %, after an answer that came before the line
/// was recorded; never by the TTL plus Redlock's 12 ms drift allowance.
fn the_lease_ends_by_the_servers_count(lock: &str) {
    let r = run_line(&format!(
        "--lock {lock} --nemesis none --work 800ms --ttl 1s --clients 2 --time-limit 6s"
    ));
    assert_eq!(r.code, 0, "{lock}:\n{}\n{}", r.stdout, r.stderr);
    let history = r.history();
    let leased: Vec<&Value> = history
        .iter()
        .filter(|op| op["type"] == "ok" && (op["f"] == "acquire" || op["f"] == "renew"))
        .collect();
    assert!(
        leased.iter().any(|op| op["f"] == "renew"),
        "{lock}: no renewal"
    );
    for op in leased {
        let expires_by = op["value"]["lease"]["expires_by"].as_u64().unwrap();
        let recorded = op["time"].as_u64().unwrap();
        assert!(
            expires_by <= recorded + 1_002_000_000,
            "{lock}: a bound past the server's count: {op}"
        );
    }
}

#[test]
fn redis_leases_end_by_the_servers_count() {
    the_lease_ends_by_the_servers_count("redis");
}

#[test]
fn redlock_leases_end_by_the_servers_count() {
    the_lease_ends_by_the_servers_count("redlock");
}

/// rslock's grants and extensions are bounded by the servers' counts too, asked right after.
#[test]
fn rslock_leases_end_by_the_servers_count() {
    the_lease_ends_by_the_servers_count("rslock");
}
