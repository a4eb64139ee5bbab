//! The harness puts the machine back: after Ctrl-C, and after `kill -9` followed by
//! `lockpick clean`.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{finished, history_lines, lockpick, namespaces_with, wait_for};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

fn start_long_run(store: &std::path::Path, nemesis: &str) -> std::process::Child {
    lockpick()
        .args([
            "run",
            "--time-limit",
            "120s",
            "--nemesis",
            nemesis,
            "--ttl",
            "500ms",
        ])
        .args(["--pause", "2s", "--fault-interval", "100ms"])
        .arg("--store")
        .arg(store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn ctrl_c_heals_cleans_up_and_keeps_the_history() {
    let store = tempfile::tempdir().unwrap();
    let child = start_long_run(store.path(), "pause-holder");
    let pid = Pid::from_raw(child.id() as i32);
    // Wait until a holder is frozen, so the interrupt has something to undo.
    wait_for("a pause", Duration::from_secs(60), || {
        std::fs::read_to_string(store.path().join("latest/history.jsonl"))
            .is_ok_and(|h| h.contains("\"f\":\"start\""))
    });
    kill(pid, Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    let run = finished(store.path(), output); // also asserts nothing is left
    assert!(
        run.code == 1 || run.code == 2,
        "an interrupted run is never valid: {}\n{}",
        run.code,
        run.stderr
    );
    assert!(run.stdout.contains("interrupted"), "{}", run.stdout);
    assert!(run.results["run"]["interrupted"].as_bool().unwrap());
    // Every pause started was stopped before the end.
    let history = run.history();
    let starts = history.iter().filter(|op| op["f"] == "start").count();
    let stops = history.iter().filter(|op| op["f"] == "stop").count();
    assert_eq!(starts, stops, "a fault was left active");
    assert!(
        run.results["malformed"].is_null(),
        "{}",
        run.results["malformed"]
    );
}

#[test]
fn clean_removes_what_a_killed_controller_left() {
    let store = tempfile::tempdir().unwrap();
    let child = start_long_run(store.path(), "pause-holder");
    let pid = Pid::from_raw(child.id() as i32);
    wait_for("operations", Duration::from_secs(60), || {
        history_lines(store.path()) > 50
    });
    let dir = store.path().join("latest").canonicalize().unwrap();
    kill(pid, Signal::SIGKILL).unwrap();
    child.wait_with_output().unwrap();
    let (prefix, subnet) = common::run_identity(&dir);
    assert!(
        !namespaces_with(&prefix).is_empty(),
        "a killed controller cannot clean up"
    );

    let clean = lockpick().arg("clean").output().unwrap();
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    common::assert_prefix_gone(&prefix);
    // The partial history is still checkable.
    let check = lockpick().arg("check").arg(&dir).output().unwrap();
    let code = check.status.code().unwrap();
    assert!(
        [0, 1, 2].contains(&code),
        "check failed on a partial history: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("verdict"));
    assert!(common::processes_mentioning(&[&subnet]).is_empty());
}

#[test]
fn clean_leaves_a_live_run_alone() {
    let store = tempfile::tempdir().unwrap();
    let child = start_long_run(store.path(), "none");
    wait_for("operations", Duration::from_secs(60), || {
        history_lines(store.path()) > 20
    });
    let clean = lockpick().arg("clean").output().unwrap();
    assert!(clean.status.success());
    // The run goes on: more operations arrive after the clean.
    let before = history_lines(store.path());
    wait_for("more operations", Duration::from_secs(30), || {
        history_lines(store.path()) > before + 20
    });
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let run = finished(store.path(), child.wait_with_output().unwrap());
    assert!(run.results["malformed"].is_null());
}
