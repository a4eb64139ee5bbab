//! `--lock exec:<service>:<command>`: client programs over real, widely used libraries that no
//! one here wrote (redis-py's Lock, kazoo's Lock, etcd's Go concurrency.Mutex, the `redlock`
//! npm package), on the real
//! servers, give the results their libraries deserve; and a program that breaks the protocol
//! costs `info` outcomes and one clear line, never a hang, and leaves nothing behind.
//!
//! Needs Debian's python3-redis, python3-kazoo, golang-go, golang-etcd-server-dev and nodejs
//! (`.ci/install-packages`).

use crate::common;

use std::time::{Duration, Instant};

use common::examples::{example, go_etcd_client, node_redlock_client};
use common::{processes_mentioning, run, Run};

/// A finished run and the temporary store that holds its folder.
struct Stored(Run, #[allow(dead_code)] tempfile::TempDir);

impl std::ops::Deref for Stored {
    type Target = Run;
    fn deref(&self) -> &Run {
        &self.0
    }
}

/// Runs `--lock exec:<service>:<command>` with the flags in `line` (the command may hold
/// spaces: it is one argument).
fn exec_run(service: &str, command: &str, line: &str) -> Stored {
    let store = tempfile::tempdir().unwrap();
    let lock = format!("exec:{service}:{command}");
    let mut args = vec!["--lock", lock.as_str()];
    args.extend(line.split_whitespace());
    Stored(run(store.path(), &args), store)
}

fn without_faults(service: &str, command: &str) -> Stored {
    let r = exec_run(service, command, "--time-limit 6s --clients 3");
    assert_eq!(r.code, 0, "{command}:\n{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.overlaps(), 0, "{}", r.stdout);
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    assert!(r.holds() >= 5, "{command}: only {} holds", r.holds());
    r
}

fn paused_holder(service: &str, command: &str, fencing: &str, seed: &str) -> Stored {
    let r = exec_run(
        service,
        command,
        &format!(
            "--nemesis pause-holder --fencing {fencing} --time-limit 8s --clients 3 --ttl 1s \
             --pause 2500ms --fault-interval 500ms --seed {seed}"
        ),
    );
    assert_eq!(r.code, 1, "expected invalid\n{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "no overlapping holders\n{}", r.stdout);
    r
}

/// The tokens of the grants, in the order they were seen.
fn tokens(r: &Run) -> Vec<u64> {
    r.history()
        .iter()
        .filter(|op| op["f"] == "acquire" && op["type"] == "ok")
        .map(|op| op["value"]["token"].as_u64().expect("a token"))
        .collect()
}

fn growing(t: &[u64]) {
    assert!(t.windows(2).all(|w| w[0] < w[1]), "tokens: {t:?}");
}

#[test]
fn redis_py_without_faults_is_valid_and_its_leases_are_bounded() {
    let r = without_faults("redis", &example("python-redis/lock_client.py"));
    let grant = r
        .history()
        .into_iter()
        .find(|op| op["f"] == "acquire" && op["type"] == "ok")
        .unwrap();
    let lease = &grant["value"]["lease"];
    assert!(lease["live_until"].as_u64().unwrap() > grant["time"].as_u64().unwrap());
    assert!(lease["expires_by"].as_u64().is_some(), "{grant}");
}

#[test]
fn redis_py_under_a_paused_holder_accepts_stale_writes() {
    let r = paused_holder(
        "redis",
        &example("python-redis/lock_client.py"),
        "off",
        "31",
    );
    assert!(r.stale_writes() > 0, "{}", r.stdout);
    retried_grants_are_dated(&r);
}

/// A library that retries inside one acquire says when the attempt that succeeded was sent
/// (`granted_after_ms`): some grants after a wait carry a `granted_after` past their invoke, none
/// past their answer, and most overlaps' causes are decidable (a grant's window widens with the
/// machine's load: a loaded run once left 2 of 11 undecidable, so the bar is a quarter).
fn retried_grants_are_dated(r: &Run) {
    let history = r.history();
    let mut invoked = std::collections::HashMap::new();
    let mut dated = 0;
    for op in &history {
        let acq = op["value"]["acquisition"].as_str().unwrap_or_default();
        match (op["f"].as_str(), op["type"].as_str()) {
            (Some("acquire"), Some("invoke")) => {
                invoked.insert(acq.to_string(), op["time"].as_u64().unwrap());
            }
            (Some("acquire"), Some("ok")) => {
                if let Some(after) = op["value"]["granted_after"].as_u64() {
                    assert!(after <= op["time"].as_u64().unwrap(), "{op}");
                    dated += usize::from(after > invoked[acq]);
                }
            }
            _ => {}
        }
    }
    assert!(dated > 0, "no grant dated past its invoke\n{}", r.stdout);
    let undecidable = r.results["overlapping_holders"]["undecidable"]
        .as_u64()
        .unwrap();
    assert!(
        undecidable * 4 <= r.overlaps() as u64,
        "{undecidable} of {} undecidable",
        r.overlaps()
    );
}

#[test]
fn kazoo_without_faults_is_valid_and_its_tokens_grow() {
    let r = without_faults("zookeeper", &example("python-kazoo/lock_client.py"));
    growing(&tokens(&r));
}

#[test]
fn kazoo_fenced_rejects_every_stale_write_under_a_paused_holder() {
    let r = paused_holder(
        "zookeeper",
        &example("python-kazoo/lock_client.py"),
        "on",
        "32",
    );
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    assert!(r.rejected() > 0, "the fence never acted:\n{}", r.stdout);
}

#[test]
fn go_etcd_mutex_without_faults_is_valid_and_its_tokens_grow() {
    let r = without_faults("etcd", go_etcd_client());
    growing(&tokens(&r));
}

#[test]
fn go_etcd_mutex_fenced_rejects_every_stale_write_under_a_paused_holder() {
    let r = paused_holder("etcd", go_etcd_client(), "on", "33");
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    assert!(r.rejected() > 0, "the fence never acted:\n{}", r.stdout);
}

#[test]
fn node_redlock_without_faults_is_valid_and_its_leases_are_bounded() {
    let r = without_faults("redlock", node_redlock_client());
    let grants: Vec<_> = r
        .history()
        .into_iter()
        .filter(|op| op["f"] == "acquire" && op["type"] == "ok")
        .collect();
    for grant in &grants {
        // Redlock has no token; its lease is the lock's expiration, short of the TTL by the drift.
        assert!(grant["value"]["token"].is_null(), "{grant}");
        let lease = &grant["value"]["lease"];
        let live_until = lease["live_until"].as_u64().expect("a lease");
        assert!(
            live_until < lease["expires_by"].as_u64().unwrap(),
            "{grant}"
        );
    }
}

#[test]
fn node_redlock_under_a_paused_holder_accepts_stale_writes() {
    let r = paused_holder("redlock", node_redlock_client(), "off", "34");
    assert!(r.stale_writes() > 0, "{}", r.stdout);
    retried_grants_are_dated(&r);
}

/// The example clients and lockpick's own clients of the same algorithm get the same verdict
/// under each nemesis: valid without faults, invalid with a paused holder.
#[test]
fn example_clients_get_the_verdicts_of_our_own_clients() {
    let python_redis = example("python-redis/lock_client.py");
    let pairs = [
        ("redis", "redis".to_string()),
        ("redlock", "redlock".to_string()),
        ("redis", format!("exec:redis:{python_redis}")),
        ("redlock", format!("exec:redlock:{}", node_redlock_client())),
    ];
    let cells = [("none", "valid"), ("pause-holder", "invalid")];
    for (nemesis, expected) in cells {
        for (service, lock) in &pairs {
            let store = tempfile::tempdir().unwrap();
            let r = run(
                store.path(),
                &[
                    "--lock",
                    lock,
                    "--nemesis",
                    nemesis,
                    "--fencing",
                    "off",
                    "--seed",
                    "35",
                    "--time-limit",
                    "6s",
                    "--clients",
                    "3",
                    "--ttl",
                    "1s",
                    "--pause",
                    "2500ms",
                    "--fault-interval",
                    "500ms",
                ],
            );
            assert_eq!(
                r.valid(),
                expected,
                "{lock} ({service}) under {nemesis}:\n{}\n{}",
                r.stdout,
                r.stderr
            );
        }
    }
}

/// A program broken in `mode` gets `info` acquires whose error says what it did, one line in
/// the client's log, a run that ends in time, and no process left behind.
fn broken(mode: &str, says: &str) {
    // A word only this test's programs carry, to find any of them left running.
    let marker = format!("lockpick-test-{mode}-{}", std::process::id());
    let command = format!("{} {mode} {marker}", example("broken/lock_client.py"));
    let started = Instant::now();
    let r = exec_run("redis", &command, "--time-limit 4s --clients 2");
    assert!(
        started.elapsed() < Duration::from_secs(4 + 30),
        "the run took {:?}",
        started.elapsed()
    );
    let infos: Vec<_> = r
        .history()
        .into_iter()
        .filter(|op| op["f"] == "acquire" && op["type"] == "info")
        .collect();
    assert!(!infos.is_empty(), "no info outcome:\n{}", r.stdout);
    // Every info answer counts as an outcome nobody knows, in results.json and the terminal.
    let answered_info = r
        .history()
        .iter()
        .filter(|op| op["process"].is_u64() && op["type"] == "info")
        .count();
    assert_eq!(r.results["answered_unknown"], answered_info, "{}", r.stdout);
    let said = format!("answered info: {answered_info};");
    assert!(r.stdout.contains(&said), "{said} missing:\n{}", r.stdout);
    let error = infos[0]["value"]["error"].as_str().unwrap_or("");
    assert!(error.contains(says), "{error}");
    let log = std::fs::read_to_string(r.dir.join("logs/client-0.log")).unwrap();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(says)).collect();
    assert_eq!(lines.len(), 1, "one line on what broke:\n{log}");
    assert!(lines[0].contains("recorded as info"), "{log}");
    let left = processes_mentioning(&[&marker]);
    assert!(left.is_empty(), "programs left running: {left:?}");
}

#[test]
fn a_program_that_answers_garbage_gets_info_outcomes() {
    broken("garbage", "not a protocol message");
}

#[test]
fn a_program_that_dies_mid_operation_gets_info_outcomes() {
    broken("die", "exited (exit status: 3)");
}

#[test]
fn a_program_that_never_answers_gets_info_outcomes() {
    broken("silent", "did not answer within");
}

#[test]
fn a_program_that_prints_other_lines_gets_info_outcomes() {
    broken("chatter", "\"INFO acquiring the lock\"");
}

#[test]
fn a_program_granted_by_a_server_it_was_not_given_gets_info_outcomes() {
    broken("foreign-grant", "which is not one of LOCKPICK_SERVERS");
}
