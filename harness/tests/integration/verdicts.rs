//! A verdict a CI can gate on: VALID only when the run proved it, the same verdict in every
//! output, and overlaps told apart by what caused them, on the real servers.

use crate::common;

use std::io::Write;
use std::time::Duration;

use common::{lockpick, refused, run, run_line, Run};
use serde_json::Value;

fn unknown_reasons(r: &Run) -> Vec<String> {
    r.results["unknown_reasons"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn causes(r: &Run) -> (u64, u64, u64) {
    let o = &r.results["overlapping_holders"];
    let n = |k: &str| o[k].as_u64().unwrap_or(0);
    (
        n("outlived_lease"),
        n("granted_under_live_lease"),
        n("undecidable"),
    )
}

#[test]
fn a_run_in_which_no_fault_window_fits_is_refused_before_it_starts() {
    let stderr = refused("--nemesis pause-holder --time-limit 3s");
    assert!(stderr.contains("pause-holder"), "{stderr}");
    assert!(stderr.contains("no fault window"), "{stderr}");
}

/// `lockpick check` of a history file written by hand.
fn check(lines: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    let mut file = std::fs::File::create(&path).unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
    let output = lockpick().arg("check").arg(&path).output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).to_string(),
    )
}

const SETUP: &str = r#"{"index":0,"time":1,"process":"harness","type":"info","f":"setup","value":{"lock":"redis","token":"none","ttl_ms":1000,"fencing":"off","nemesis":"none","clients":2,"seed":1,"prefix":"lkp000000","servers":["10.0.0.10:6379"]}}"#;

#[test]
fn check_of_every_kind_of_incomplete_history_is_unknown_with_its_reason() {
    let (code, out) = check(&[]);
    assert_eq!(code, 2, "an empty history: {out}");
    assert!(
        out.contains("not proven") || out.contains("malformed"),
        "{out}"
    );

    let (code, out) = check(&[SETUP]);
    assert_eq!(code, 2, "a setup line alone: {out}");
    assert!(out.contains("no operations"), "{out}");

    // A killed run's history: one client held the lock, no final read.
    let partial = [
        SETUP,
        r#"{"index":1,"time":10,"process":0,"type":"invoke","f":"acquire","value":{"acquisition":"0.1"}}"#,
        r#"{"index":2,"time":20,"process":0,"type":"ok","f":"acquire","value":{"acquisition":"0.1","token":null}}"#,
    ];
    let (code, out) = check(&partial);
    assert_eq!(code, 2, "a partial history: {out}");
    assert!(out.contains("final read"), "{out}");
}

#[test]
fn a_resource_that_dies_mid_run_makes_the_run_unknown() {
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .args(["run", "--time-limit", "4s", "--clients", "3"])
        .arg("--store")
        .arg(store.path())
        .env("LOCKPICK_INJECT", "kill-resource-after:200")
        .output()
        .unwrap();
    let r = common::finished(store.path(), output);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.valid(), "unknown");
    let reasons = unknown_reasons(&r);
    assert!(
        reasons.iter().any(|w| w.contains("resource died")),
        "{reasons:?}"
    );
    let failed_read = r
        .history()
        .into_iter()
        .any(|op| op["f"] == "final-read" && op["type"] == "fail");
    assert!(failed_read, "the failed final read is in the history");
}

/// A test hook changes what a run does behind its setup's back (here every grant reaches its
/// worker five sixths of a TTL late, so a client holds the lock far less often): a debug build
/// that ran with one records it, and no output calls that run valid, nor does a later check.
/// (A release build has no hooks at all: docs/reliability.md, "Test hooks".)
#[test]
fn a_run_with_a_test_hook_says_so_and_is_never_valid() {
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .args(["run", "--lock", "redis", "--nemesis", "none"])
        .args(["--time-limit", "4s", "--clients", "3", "--ttl", "1s"])
        .arg("--store")
        .arg(store.path())
        .env("LOCKPICK_INJECT_CLIENT", "late-grant:all")
        .output()
        .unwrap();
    let r = common::finished(store.path(), output);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    let hook = "LOCKPICK_INJECT_CLIENT=late-grant:all";
    let end = r
        .history()
        .into_iter()
        .find(|op| op["f"] == "run-end")
        .expect("a run-end line");
    assert_eq!(end["value"]["test_hooks"][0], hook, "{end}");
    let reasons = unknown_reasons(&r);
    assert!(reasons.iter().any(|w| w.contains(hook)), "{reasons:?}");
    assert!(r.stdout.contains(hook), "terminal: {}", r.stdout);
    common::outputs::assert_every_output_says(&r, "unknown");
    let again = lockpick().arg("check").arg(&r.dir).output().unwrap();
    let said = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(2), "{said}");
    assert!(said.contains(hook), "{said}");
}

#[test]
fn an_interrupted_run_says_unknown_in_every_output() {
    let store = tempfile::tempdir().unwrap();
    let mut command = lockpick();
    command.args(["run", "--time-limit", "30s", "--clients", "3"]);
    let mut background = common::start_in(command, store.path());
    std::thread::sleep(Duration::from_secs(4));
    nix::sys::signal::kill(background.pid(), nix::sys::signal::Signal::SIGTERM).unwrap();
    let output = background.wait();
    let r = common::finished(store.path(), output);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.valid(), "unknown", "results.json");
    assert!(r.stdout.contains("UNKNOWN"), "terminal: {}", r.stdout);
    common::outputs::assert_every_output_says(&r, "unknown");
    // Judged again later from its history alone, the run keeps its verdict.
    let again = lockpick().arg("check").arg(&r.dir).output().unwrap();
    let said = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(2), "{said}");
    assert!(said.contains("interrupted"), "{said}");
}

#[test]
fn a_valid_and_an_invalid_run_say_so_in_every_output() {
    let valid = run_line("--lock redis --nemesis none --time-limit 4s --clients 3 --seed 3");
    common::outputs::assert_every_output_says(&valid, "valid");
    let invalid = run_line(
        "--lock redis --nemesis pause-holder --time-limit 8s --clients 3 --pause 2500ms \
         --fault-interval 500ms --seed 31",
    );
    common::outputs::assert_every_output_says(&invalid, "invalid");
}

#[test]
fn our_zookeeper_client_keeps_its_session_through_long_work() {
    let r = run_line("--lock zookeeper --nemesis none --work 3s --time-limit 12s --clients 2");
    assert_eq!(r.overlaps(), 0, "{}", r.stdout);
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
}

#[test]
fn a_redis_restarted_within_the_lease_grants_under_a_live_lease() {
    // kill-node's defaults: restart after a quarter of the TTL, holders working half of it.
    let r = run_line("--lock redis --nemesis kill-node --time-limit 12s --seed 7");
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let (_, live, _) = causes(&r);
    assert!(live > 0, "no grant under a live lease: {}", r.stdout);
}

#[test]
fn redlock_under_a_clock_jump_on_its_majority_grants_under_a_live_lease() {
    let r = run_line("--lock redlock --nemesis clock-holder --time-limit 10s --seed 8");
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let (_, live, _) = causes(&r);
    assert!(live > 0, "no grant under a live lease: {}", r.stdout);
}

#[test]
fn etcd_and_zookeeper_under_a_paused_holder_show_only_outlived_leases() {
    for lock in ["etcd", "zookeeper"] {
        let r = run_line(&format!(
            "--lock {lock} --fencing on --nemesis pause-holder --time-limit 10s --seed 9"
        ));
        assert_eq!(r.code, 1, "{lock}: {}\n{}", r.stdout, r.stderr);
        let (outlived, live, _) = causes(&r);
        assert!(outlived > 0, "{lock}: no outlived lease: {}", r.stdout);
        assert_eq!(live, 0, "{lock}: a grant under a live lease: {}", r.stdout);
        assert_eq!(r.stale_writes(), 0, "{lock}: the fence held");
    }
}

#[test]
fn a_replayed_schedule_keeps_its_own_seed() {
    let first = run_line("--lock redis --nemesis pause-node --time-limit 5s --seed 4242");
    let schedule = first.dir.join("schedule.json");
    let store = tempfile::tempdir().unwrap();
    let replay = run(
        store.path(),
        &[
            "--lock",
            "redis",
            "--time-limit",
            "5s",
            "--schedule",
            schedule.to_str().unwrap(),
        ],
    );
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(replay.dir.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["seed"], 4242, "{config}");
}
