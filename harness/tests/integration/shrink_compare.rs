//! `lockpick compare --shrink` against real servers: a Redis cell broken by a paused holder is
//! shrunk after the gate, within the shrink budget, to one fault window whose replay command
//! reproduces the violation; summary.md offers the cell's reproduction and tells the shrunk
//! replay; the gate's exit code and verdict are the matrix's, also when Ctrl-C ends the shrink,
//! which keeps what was written. Nothing of any replay is left.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{assert_prefix_gone, lockpick, wait_for, Background};
use nix::sys::signal::{kill, Signal};
use serde_json::Value;

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The one folder under `parent`.
fn only_folder(parent: &Path) -> PathBuf {
    let folders: Vec<_> = std::fs::read_dir(parent)
        .unwrap_or_else(|e| panic!("{parent:?}: {e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    folders[0].clone()
}

#[test]
fn compare_shrink_shrinks_a_broken_redis_cell_to_one_window_that_replays() {
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .args(["compare", "--locks", "redis", "--nemeses", "pause-holder"])
        .args(["--time-limit", "4s", "--clients", "2", "--ttl", "500ms"])
        .args(["--fault-duration", "1s", "--fault-interval", "500ms"])
        .args(["--quiet", "500ms", "--seed", "61", "--shrink"])
        .args(["--shrink-budget", "runs=10,time=8m", "--store"])
        .arg(store.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    // The gate's code: the cell is invalid, expected valid; shrinking changes nothing of it.
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let compare = only_folder(&store.path().join("compare"));
    let stored = read_json(&compare.join("compare.json"));
    assert_eq!(stored["exit_code"], 1, "{stored:#}");
    assert_eq!(stored["cells"][0]["verdict"], "invalid", "{stored:#}");
    // Every replay the shrink made is gone again.
    let prefixes: Vec<&str> = stderr
        .split("(run ")
        .skip(1)
        .filter_map(|rest| rest.get(..9))
        .collect();
    assert!(prefixes.len() >= 2, "no replay announced itself:\n{stderr}");
    for prefix in prefixes {
        assert_prefix_gone(prefix);
    }

    let shrink = only_folder(&store.path().join("shrink"));
    let record = read_json(&shrink.join("shrink.json"));
    assert!(record["runs"].as_u64().unwrap() <= 10, "{record:#}");
    assert_eq!(record["to"]["windows"], 1, "{record:#}\n{stderr}");
    let schedule = read_json(&shrink.join("schedule.json"));
    assert_eq!(schedule["windows"].as_array().unwrap().len(), 1);
    assert_eq!(schedule["windows"][0]["nemesis"], "pause-holder");
    let command = std::fs::read_to_string(shrink.join("command.txt")).unwrap();
    let command = command.trim();
    // The terminal tells the shrunk replay, with the runs and seconds it took.
    let told = stdout
        .lines()
        .find(|l| l.starts_with("shrunk redis × pause-holder (fencing on): "))
        .unwrap_or_else(|| panic!("no shrink told:\n{stdout}"));
    assert!(told.contains(" runs, "), "{told}");
    assert!(told.ends_with(&format!("; replay: {command}")), "{told}");
    assert!(
        stdout.contains("reproduce redis × pause-holder (fencing on): lockpick run "),
        "{stdout}"
    );

    // summary.md: the cell's reproduction from its own schedule and the shrunk replay, by paths
    // within the store.
    let summary = std::fs::read_to_string(compare.join("summary.md")).unwrap();
    let cell_dir = PathBuf::from(stored["cells"][0]["dir"].as_str().unwrap());
    let within = cell_dir
        .strip_prefix(store.path())
        .unwrap()
        .display()
        .to_string();
    let reproduce = summary
        .lines()
        .find(|l| l.starts_with("  - reproduce with `lockpick run --lock redis "))
        .unwrap_or_else(|| panic!("no reproduction offered:\n{summary}"));
    assert!(
        reproduce.ends_with(&format!(" --schedule {within}/schedule.json`")),
        "{reproduce}"
    );
    let leaf = shrink.file_name().unwrap().to_str().unwrap();
    let shrunk = summary
        .lines()
        .find(|l| l.starts_with("  - shrunk from "))
        .unwrap_or_else(|| panic!("no shrink in the summary:\n{summary}"));
    assert!(
        shrunk.contains(&format!("--schedule shrink/{leaf}/schedule.json`")),
        "{shrunk}"
    );
    assert!(shrunk.contains(" runs, "), "{shrunk}");

    // The shrunk command reproduces the violation: 2 of at most 5 replays, as the shrink's own
    // m-of-k test asks of a candidate (timing varies on a busy machine).
    let words = shell_words::split(command).unwrap();
    assert_eq!(words[..2], ["lockpick", "run"]);
    let mut reproduced = 0;
    for _ in 0..5 {
        let replays = tempfile::tempdir().unwrap();
        let out = lockpick()
            .args(&words[1..])
            .arg("--store")
            .arg(replays.path())
            .output()
            .unwrap();
        let replay = common::finished(replays.path(), out);
        let faults = (replay.history().iter())
            .filter(|op| op["f"] == "start" && op["process"] == "nemesis")
            .count();
        assert_eq!(faults, 1);
        if replay.code == 1 {
            reproduced += 1;
        }
        if reproduced == 2 {
            break;
        }
    }
    assert!(
        reproduced >= 2,
        "the replay reproduced it {reproduced} times"
    );
}

#[test]
fn ctrl_c_during_the_shrink_keeps_the_gates_code_and_every_output() {
    let store = tempfile::tempdir().unwrap();
    let child = lockpick()
        .args(["compare", "--locks", "redis", "--nemeses", "pause-holder"])
        .args(["--time-limit", "4s", "--clients", "2", "--ttl", "500ms"])
        .args(["--fault-duration", "1s", "--fault-interval", "500ms"])
        .args(["--quiet", "500ms", "--seed", "61", "--shrink", "--store"])
        .arg(store.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut compare = Background::new(child);
    let stderr = compare.child.as_mut().unwrap().stderr.take().unwrap();
    let (lines, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut told = String::new();
    // Into the shrink's first replay (the cell's own run came before it), then Ctrl-C.
    wait_for(
        "the shrink's first replay",
        Duration::from_secs(300),
        || {
            while let Ok(line) = seen.try_recv() {
                told.push_str(&line);
                told.push('\n');
            }
            told.split("lockpick compare: shrinking")
                .nth(1)
                .is_some_and(|after| after.contains("(run lkp"))
        },
    );
    kill(compare.pid(), Signal::SIGINT).unwrap();
    let output = compare.wait();
    while let Ok(line) = seen.recv_timeout(Duration::from_secs(5)) {
        told.push_str(&line);
        told.push('\n');
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The gate was decided before the shrink: its code stays.
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{told}");
    for prefix in told.split("(run ").skip(1).filter_map(|r| r.get(..9)) {
        assert_prefix_gone(prefix);
    }
    let compare = only_folder(&store.path().join("compare"));
    assert_eq!(read_json(&compare.join("compare.json"))["exit_code"], 1);
    let summary = std::fs::read_to_string(compare.join("summary.md")).unwrap();
    assert!(
        summary.contains("  - reproduce with `lockpick run "),
        "{summary}"
    );
    // The shrink's best so far is written and told, with why it stopped.
    let shrink = only_folder(&store.path().join("shrink"));
    let record = read_json(&shrink.join("shrink.json"));
    assert_eq!(record["stopped"], "interrupted", "{record:#}");
    assert!(shrink.join("schedule.json").is_file());
    assert!(
        summary.contains("(stopped early: interrupted)"),
        "{summary}"
    );
}
