//! Stopping is prompt and complete: Ctrl-C of a run with many clients, an interrupted
//! `compare`, a `clean`, `run` or `check` whose reader went away; and `clean` does not take a live run for dead
//! when its lock file is gone. Every background run is wrapped in a guard that kills and cleans
//! it, so even a failing test leaves nothing behind.

use crate::common;

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{finished, history_lines, lockpick, namespaces_with, wait_for, Background};
use nix::sys::signal::{kill, Signal};

fn start(store: &Path, command: &str, args: &str) -> Background {
    let mut lockpick = lockpick();
    lockpick.arg(command).args(args.split_whitespace());
    common::start_in(lockpick, store)
}

/// Waits until the newest run has recorded `count` operations, and notes its prefix.
fn wait_for_operations(run: &mut Background, store: &Path, count: usize) -> String {
    // Generous: with every integration test in one binary, six run at once on two cores, and a
    // comparison starts its cells behind its own checks (the runs last 120 s).
    wait_for("operations", Duration::from_secs(100), || {
        history_lines(store) > count
    });
    let dir = store.join("latest").canonicalize().unwrap();
    let prefix = common::run_identity(&dir).0;
    run.prefix = Some(prefix.clone());
    prefix
}

#[test]
fn ctrl_c_of_a_run_with_30_clients_ends_it_promptly_and_leaves_nothing() {
    let store = tempfile::tempdir().unwrap();
    let mut run = start(store.path(), "run", "--clients 30 --time-limit 120s");
    wait_for_operations(&mut run, store.path(), 1);
    let signalled = Instant::now();
    kill(run.pid(), Signal::SIGINT).unwrap();
    let output = run.wait();
    let took = signalled.elapsed();
    let result = finished(store.path(), output); // also asserts nothing is left
    assert!(
        took < Duration::from_secs(15),
        "stopping took {took:?}\n{}",
        result.stderr
    );
    assert_eq!(result.code, 2, "{}", result.stdout);
    assert!(result.results["run"]["interrupted"].as_bool().unwrap());
}

#[test]
fn an_interrupted_compare_exits_2_and_leaves_nothing() {
    let store = tempfile::tempdir().unwrap();
    let mut compare = start(
        store.path(),
        "compare",
        "--locks redis --nemeses none,pause-node --fencing off --time-limit 120s",
    );
    let prefix = wait_for_operations(&mut compare, store.path(), 20);
    kill(compare.pid(), Signal::SIGTERM).unwrap();
    let output = compare.wait();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("interrupted: 0 of 2 cells"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    common::assert_prefix_gone(&prefix);
    // Its junit.xml lists every cell, the ones it did not finish as skipped, and is valid.
    let dir = std::fs::read_dir(store.path().join("compare"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains("tests=\"2\""), "{junit}");
    assert_eq!(
        junit.matches("<skipped message=\"not run:").count(),
        2,
        "{junit}"
    );
    common::junit_schema::validate(&dir.join("junit.xml")).unwrap();
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        summary.starts_with("## lockpick compare: gate not proven: interrupted, 2 cells not run"),
        "{summary}"
    );
}

#[test]
fn clean_finishes_its_work_when_its_reader_has_gone() {
    let store = tempfile::tempdir().unwrap();
    let mut run = start(store.path(), "run", "--time-limit 120s");
    let prefix = wait_for_operations(&mut run, store.path(), 20);
    kill(run.pid(), Signal::SIGKILL).unwrap();
    run.wait();
    assert!(
        namespaces_with(&prefix).len() > 2,
        "a killed run leaves namespaces"
    );
    // Standard output is a pipe nobody reads any more: every line clean prints fails.
    let (reader, writer): (OwnedFd, OwnedFd) = nix::unistd::pipe().unwrap();
    drop(reader);
    let clean = lockpick()
        .args(["clean", "--prefix", &prefix])
        .stdout(Stdio::from(writer))
        .output()
        .unwrap();
    assert!(
        clean.status.success(),
        "{:?}: {}",
        clean.status,
        String::from_utf8_lossy(&clean.stderr)
    );
    common::assert_prefix_gone(&prefix);
}

/// A pipe whose reader has gone: every line written to it fails.
fn gone_reader() -> Stdio {
    let (reader, writer): (OwnedFd, OwnedFd) = nix::unistd::pipe().unwrap();
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_run_whose_reader_has_gone_exits_with_its_verdict_and_stores_it() {
    // `lockpick run ... 2>&1 | head -1`, with the reader gone before the first line.
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .args(["run", "--time-limit", "3s", "--clients", "2", "--store"])
        .arg(store.path())
        .stdout(gone_reader())
        .stderr(gone_reader())
        .output()
        .unwrap();
    let r = finished(store.path(), output);
    assert_eq!(r.code, 0, "exit code of a valid run");
    assert_eq!(r.valid(), "valid");
    // Only standard output gone: standard error tells of no panic.
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .args(["run", "--time-limit", "3s", "--clients", "2", "--store"])
        .arg(store.path())
        .stdout(gone_reader())
        .output()
        .unwrap();
    let r = finished(store.path(), output);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let check = lockpick()
        .arg("check")
        .arg(&r.dir)
        .stdout(gone_reader())
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0), "{check:?}");
}

#[test]
fn clean_leaves_a_live_run_alone_when_its_lock_file_is_gone() {
    let store = tempfile::tempdir().unwrap();
    let mut run = start(store.path(), "run", "--time-limit 120s");
    let prefix = wait_for_operations(&mut run, store.path(), 20);
    let namespaces = namespaces_with(&prefix);
    let clean = |dry_run: bool| {
        let mut command = lockpick();
        command.args(["clean", "--prefix", &prefix]);
        if dry_run {
            command.arg("--dry-run");
        }
        let output = command.output().unwrap();
        assert!(output.status.success());
        String::from_utf8_lossy(&output.stdout).to_string()
    };
    // Without the lock file, the controller's record says it is alive; without either, the
    // processes in its namespaces, children of the controller, still do.
    for record in ["lock", "controller"] {
        std::fs::remove_file(format!("/run/lockpick/{prefix}.{record}")).unwrap();
        for dry_run in [true, false] {
            let said = clean(dry_run);
            assert!(
                said.contains("still running"),
                "without the {record}: {said}"
            );
            assert!(!said.contains("remove namespace"), "{said}");
            assert!(!said.contains("removed namespace"), "{said}");
        }
        assert_eq!(namespaces_with(&prefix), namespaces);
    }
    let before = history_lines(store.path());
    wait_for("more operations", Duration::from_secs(30), || {
        history_lines(store.path()) > before + 20
    });
    kill(run.pid(), Signal::SIGTERM).unwrap();
    let result = finished(store.path(), run.wait());
    assert!(result.results["malformed"].is_null());
}

/// A client program that says its hello and then freezes itself in a cgroup v1 freezer group,
/// where SIGKILL cannot end it until the group thaws: a stand-in for a process of the run that
/// a loaded machine (or an uninterruptible wait) keeps alive past teardown's bound.
fn self_freezing_program(dir: &Path, group: &Path) -> std::path::PathBuf {
    let program = dir.join("freeze-myself.sh");
    let script = format!(
        "#!/bin/sh\necho '{{\"protocol\": 1, \"library\": \"frozen\"}}'\n\
         echo $$ > {group}/cgroup.procs\necho FROZEN > {group}/freezer.state\nsleep 600\n",
        group = group.display()
    );
    std::fs::write(&program, script).unwrap();
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&program, executable).unwrap();
    program
}

/// What a command that ran the self-freezing client left: its output, the pids frozen, the
/// run's folder, and `clean`'s outcome; the frozen programs are gone and the group removed
/// before it returns, so that a failed assertion leaves nothing behind.
struct Outlived {
    output: std::process::Output,
    frozen: String,
    /// The first run's folder, and how many runs the store holds.
    dir: std::path::PathBuf,
    runs: usize,
    prefix: String,
    clean: std::process::Output,
    /// The store, kept until the assertions are done.
    _store: tempfile::TempDir,
}

/// Runs `lockpick <command> <args> <exec lock> --store S` with the self-freezing client, or
/// `None` on a machine without a cgroup v1 freezer.
fn outliving_teardown(command: &str, lock_flag: &str, args: &[&str]) -> Option<Outlived> {
    let freezer = Path::new("/sys/fs/cgroup/freezer");
    if !freezer.join("cgroup.procs").exists() {
        eprintln!("no cgroup v1 freezer on this machine: skipped");
        return None;
    }
    let group = freezer.join(format!("lockpick-{command}-{}", std::process::id()));
    std::fs::create_dir(&group).unwrap();
    let scripts = tempfile::tempdir().unwrap();
    let program = self_freezing_program(scripts.path(), &group);
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .arg(command)
        .args(args)
        .arg(lock_flag)
        .arg(format!("exec:redis:{}", program.display()))
        .arg("--store")
        .arg(store.path())
        .output()
        .unwrap();
    let frozen = std::fs::read_to_string(group.join("cgroup.procs")).unwrap();
    // Thawed, the frozen programs die of the SIGKILL they already have; then `clean` removes
    // the cgroup teardown had to leave.
    std::fs::write(group.join("freezer.state"), "THAWED").unwrap();
    wait_for(
        "the thawed programs to die",
        Duration::from_secs(10),
        || std::fs::read_to_string(group.join("cgroup.procs")).is_ok_and(|p| p.trim().is_empty()),
    );
    std::fs::remove_dir(&group).unwrap();
    let runs = runs_in(store.path());
    let dir = runs.first().expect("the command made no run").clone();
    let prefix = common::run_identity(&dir).0;
    let clean = lockpick()
        .args(["clean", "--prefix", &prefix])
        .output()
        .unwrap();
    Some(Outlived {
        output,
        frozen,
        dir,
        runs: runs.len(),
        prefix,
        clean,
        _store: store,
    })
}

/// The folders of the runs a store holds, by their histories.
fn runs_in(store: &Path) -> Vec<std::path::PathBuf> {
    walk(store)
        .into_iter()
        .filter(|p| p.ends_with("history.jsonl"))
        .map(|p| p.parent().unwrap().canonicalize().unwrap())
        .collect()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn a_run_whose_process_outlives_teardown_says_so_and_exits_255() {
    let Some(Outlived {
        output,
        frozen,
        dir,
        prefix,
        clean,
        _store,
        ..
    }) = outliving_teardown("run", "--lock", &["--clients", "1", "--time-limit", "3s"])
    else {
        return;
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !frozen.trim().is_empty(),
        "no program froze itself\n{stderr}"
    );
    assert_eq!(output.status.code(), Some(255), "{stderr}");
    for pid in frozen.split_whitespace() {
        assert!(
            stderr.contains(&format!("{pid} (")),
            "process {pid} outlived teardown unnamed\n{stderr}"
        );
    }
    assert!(
        dir.join("results.json").exists(),
        "the results were not written"
    );
    assert!(clean.status.success());
    common::assert_prefix_gone(&prefix);
}

#[test]
fn a_comparison_stops_at_a_cell_whose_process_outlives_teardown() {
    let Some(outlived) = outliving_teardown(
        "compare",
        "--locks",
        // Two repeats, one at a time: the second never starts (one run's folder in the store).
        &[
            "--nemeses",
            "none",
            "--repeat",
            "2",
            "--parallel",
            "1",
            "--clients",
            "1",
            "--time-limit",
            "3s",
        ],
    ) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&outlived.output.stderr);
    assert!(
        !outlived.frozen.trim().is_empty(),
        "no program froze itself\n{stderr}"
    );
    assert_eq!(outlived.output.status.code(), Some(255), "{stderr}");
    assert_eq!(
        outlived.runs, 1,
        "the comparison went on to its next run\n{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "teardown left part of the run at {} behind",
            outlived.dir.display()
        )),
        "{stderr}"
    );
    assert!(outlived.clean.status.success());
    common::assert_prefix_gone(&outlived.prefix);
}
