//! A forged run folder's command naming a program for the shrink's replays to run as root: an
//! exec lock's client, a `--server-bin` server.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use super::run_folders::copy_of;
use super::within;
use crate::common::{assert_prefix_gone, lockpick, run_line};

/// Rewrites a stored `lockpick run` command: `flag`'s value (or the flag added, if absent).
fn forge_command(dir: &Path, flag: &str, value: &str) {
    let path = dir.join("command.txt");
    let mut words = shell_words::split(std::fs::read_to_string(&path).unwrap().trim()).unwrap();
    match words.iter().position(|w| w == flag) {
        Some(at) => words[at + 1] = value.to_string(),
        None => words.extend([flag.to_string(), value.to_string()]),
    }
    std::fs::write(&path, shell_words::join(&words) + "\n").unwrap();
}

/// The stored schedule, drawn (it says) for `lock`: a replay refuses one drawn for another.
fn forge_schedule_lock(dir: &Path, lock: &str) {
    let path = dir.join("schedule.json");
    let mut schedule: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    schedule["lock"] = lock.into();
    std::fs::write(&path, schedule.to_string()).unwrap();
}

/// `lockpick shrink <run> <extra>` with one cheap replay, its shrinks kept under `store`.
fn shrink(run: &Path, store: &Path, extra: &[&str]) -> Output {
    let mut command = lockpick();
    command
        .arg("shrink")
        .arg(run)
        .args([
            "--replays",
            "1",
            "--min-failures",
            "1",
            "--budget",
            "runs=1",
        ])
        .arg("--store")
        .arg(store)
        .args(extra);
    within(command, Duration::from_secs(300))
}

#[test]
fn a_forged_run_folders_programs_run_only_when_named_again_and_are_printed_first() {
    let original = run_line("--lock redis --nemesis pause-holder --time-limit 8s --seed 11");
    assert_eq!(original.code, 1, "{}", original.stdout);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let exec = format!("exec:redis:/bin/sh -c 'touch {}'", marker.display());
    let forged = copy_of(&original, dir.path());
    forge_command(&forged, "--lock", &exec);
    forge_schedule_lock(&forged, &exec);
    let server = dir.path().join("server");
    std::fs::write(&server, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    let server_bin = format!("redis={}", server.display());
    let forged_server = dir.path().join("forged-server");
    std::fs::create_dir(&forged_server).unwrap();
    let forged_server = copy_of(&original, &forged_server);
    forge_command(&forged_server, "--server-bin", &server_bin);

    // Refused, one line naming the program and the way to allow it; nothing started.
    let other = format!("exec:redis:/bin/sh -c 'touch {}-other'", marker.display());
    let refusals = [
        (&forged, vec![], exec.as_str()),
        (&forged, vec!["--lock", other.as_str()], other.as_str()),
        (&forged_server, vec![], server_bin.as_str()),
    ];
    for (run, extra, named) in refusals {
        let store = tempfile::tempdir().unwrap();
        let out = shrink(run, store.path(), &extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(254), "{extra:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&shell_words::quote(named).to_string()),
            "{stderr}"
        );
        assert!(!marker.exists(), "{extra:?}: the folder's program ran");
        assert_eq!(std::fs::read_dir(store.path()).unwrap().count(), 0);
    }
    let refused = shrink(&forged, dir.path(), &[]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--trust-folder-programs"));

    // Named again, or trusted: printed before the first replay, then run.
    for allow in [
        vec!["--lock", exec.as_str()],
        vec!["--trust-folder-programs"],
    ] {
        let store = tempfile::tempdir().unwrap();
        let out = shrink(&forged, store.path(), &allow);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{allow:?}: {stderr}");
        let printed = stderr
            .find(&format!("--lock {}", shell_words::quote(&exec)))
            .unwrap_or_else(|| panic!("{allow:?}: the program was not printed:\n{stderr}"));
        let replay = stderr.find("(run ").expect("a replay ran");
        assert!(
            printed < replay,
            "{allow:?}: printed after the replay began:\n{stderr}"
        );
        assert!(marker.exists(), "{allow:?}: the named program did not run");
        std::fs::remove_file(&marker).unwrap();
        let prefix = &stderr[replay + "(run ".len()..][..9];
        assert_prefix_gone(prefix);
    }
}
