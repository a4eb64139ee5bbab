//! The harness puts the machine back: after Ctrl-C, and after `kill -9` followed by
//! `lockpick clean`, which leaves live runs alone. Every background run is wrapped in a guard
//! that kills and cleans it, so even a failing test leaves nothing behind.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{finished, history_lines, lockpick, namespaces_with, wait_for, Background};
use nix::sys::signal::{kill, Signal};

fn start(store: &Path, args: &str) -> Background {
    let mut command = lockpick();
    command.arg("run").args(args.split_whitespace());
    common::start_in(command, store)
}

fn start_long_run(store: &Path, nemesis: &str) -> Background {
    start(
        store,
        &format!(
            "--time-limit 120s --nemesis {nemesis} --ttl 500ms --fault-duration 2s \
             --fault-interval 100ms"
        ),
    )
}

/// Waits until the history holds `text`, and notes the run's prefix for cleaning up.
fn wait_for_history(run: &mut Background, store: &Path, text: &str) -> PathBuf {
    wait_for(
        &format!("{text:?} in the history"),
        Duration::from_secs(60),
        || {
            std::fs::read_to_string(store.join("latest/history.jsonl"))
                .is_ok_and(|h| h.contains(text))
        },
    );
    let dir = store.join("latest").canonicalize().unwrap();
    run.prefix = Some(common::run_identity(&dir).0);
    dir
}

#[test]
fn ctrl_c_heals_cleans_up_and_keeps_the_history() {
    let store = tempfile::tempdir().unwrap();
    let mut run = start_long_run(store.path(), "pause-holder");
    // Wait until a holder is frozen, so the interrupt has something to undo.
    wait_for_history(&mut run, store.path(), "\"f\":\"start\"");
    kill(run.pid(), Signal::SIGINT).unwrap();
    let result = finished(store.path(), run.wait()); // also asserts nothing is left
    assert!(
        result.code == 1 || result.code == 2,
        "an interrupted run is never valid: {}\n{}",
        result.code,
        result.stderr
    );
    assert!(result.stdout.contains("interrupted"), "{}", result.stdout);
    assert!(result.results["run"]["interrupted"].as_bool().unwrap());
    // Every pause started was stopped before the end.
    let history = result.history();
    let starts = history.iter().filter(|op| op["f"] == "start").count();
    let stops = history.iter().filter(|op| op["f"] == "stop").count();
    assert_eq!(starts, stops, "a fault was left active");
    assert!(
        result.results["malformed"].is_null(),
        "{}",
        result.results["malformed"]
    );
}

#[test]
fn clean_removes_what_a_killed_controller_left() {
    let store = tempfile::tempdir().unwrap();
    let mut run = start_long_run(store.path(), "pause-holder");
    let dir = wait_for_history(&mut run, store.path(), "\"f\":\"start\"");
    wait_for("operations", Duration::from_secs(60), || {
        history_lines(store.path()) > 50
    });
    kill(run.pid(), Signal::SIGKILL).unwrap();
    run.wait();
    let (prefix, subnet) = common::run_identity(&dir);
    assert!(
        !namespaces_with(&prefix).is_empty(),
        "a killed controller cannot clean up"
    );

    common::clean_prefix(lockpick(), &prefix);
    common::assert_prefix_gone(&prefix);
    assert!(common::processes_mentioning(&[&subnet]).is_empty());
    // The partial history is still checkable, and says what is incomplete.
    let check = lockpick().arg("check").arg(&dir).output().unwrap();
    let code = check.status.code().unwrap();
    assert!(
        [0, 1, 2].contains(&code),
        "check failed on a partial history: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("verdict"));
}

#[test]
fn clean_leaves_a_live_run_alone() {
    let store = tempfile::tempdir().unwrap();
    let mut run = start_long_run(store.path(), "none");
    let dir = wait_for_history(&mut run, store.path(), "\"f\":\"acquire\"");
    let (prefix, _) = common::run_identity(&dir);
    let clean = common::clean_prefix(lockpick(), &prefix);
    assert!(String::from_utf8_lossy(&clean.stdout).contains("still running"));
    // The run goes on: more operations arrive after the clean.
    let before = history_lines(store.path());
    wait_for("more operations", Duration::from_secs(30), || {
        history_lines(store.path()) > before + 20
    });
    kill(run.pid(), Signal::SIGTERM).unwrap();
    let result = finished(store.path(), run.wait());
    assert!(result.results["malformed"].is_null());
}

#[test]
fn clean_removes_the_faketime_leftovers_of_a_killed_run() {
    let store = tempfile::tempdir().unwrap();
    let mut run = start(
        store.path(),
        "--lock redlock --nemesis clock-forward,kill-node --time-limit 120s \
         --fault-duration 300ms --fault-interval 300ms",
    );
    let dir = wait_for_history(&mut run, store.path(), "restarted_pid");
    let (prefix, _) = common::run_identity(&dir);
    let registry = format!("/dev/shm/{prefix}/faketime-pids");
    let pids = std::fs::read_to_string(&registry).unwrap();
    assert!(
        pids.lines().count() > 5,
        "servers and restarts are registered: {pids}"
    );
    kill(run.pid(), Signal::SIGKILL).unwrap();
    run.wait();
    common::clean_prefix(lockpick(), &prefix);
    common::assert_prefix_gone(&prefix);
    for pid in pids.lines() {
        for file in [
            format!("/dev/shm/faketime_shm_{pid}"),
            format!("/dev/shm/sem.faketime_sem_{pid}"),
        ] {
            assert!(!Path::new(&file).exists(), "{file} left behind");
        }
    }
}
