//! Run folders as hostile input: a folder's files planted as FIFOs, links or sparse giants for
//! `lockpick report`, `lockpick shrink` and the store's index.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use super::within;
use crate::common::{lockpick, run_line, Run};

/// A copy of a real run's folder, in a folder of its own, to forge.
pub fn copy_of(run: &Run, into: &Path) -> PathBuf {
    let copy = into.join("run");
    let status = Command::new("cp")
        .arg("-a")
        .arg(&run.dir)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    copy
}

/// `lockpick <args>` with at most 1.5 GB of address space: a reader that swallows a 3 GB file
/// fails under it, a bounded one never comes close.
fn bounded_lockpick(args: &[&Path]) -> Output {
    let words: Vec<String> = args
        .iter()
        .map(|a| shell_words::quote(&a.to_string_lossy()).to_string())
        .collect();
    let script = format!(
        "ulimit -v 1500000 && exec {} {}",
        env!("CARGO_BIN_EXE_lockpick"),
        words.join(" ")
    );
    let mut command = Command::new("sh");
    command.args(["-c", &script]);
    within(command, Duration::from_secs(120))
}

/// 3 GB, sparse: nothing on disk, everything to a reader.
fn sparse(path: &Path) {
    let _ = std::fs::remove_file(path);
    let file = std::fs::File::create(path).unwrap();
    file.set_len(3 << 30).unwrap();
}

fn fifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

fn link_to_zero(path: &Path) {
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink("/dev/zero", path).unwrap();
}

#[test]
fn a_run_folders_files_that_are_fifos_links_or_giants_are_refused_by_report_and_shrink() {
    let original = run_line("--lock redis --time-limit 2s --seed 5");
    assert_eq!(original.code, 0, "{}", original.stderr);
    type Plant = fn(&Path);
    let cases: [(&str, Plant, &[&str]); 6] = [
        ("config.json", sparse, &["report"]),
        ("command.txt", sparse, &["report", "shrink"]),
        ("command.txt", link_to_zero, &["report", "shrink"]),
        ("history.jsonl", fifo, &["report", "shrink"]),
        ("history.jsonl", link_to_zero, &["report", "shrink"]),
        ("schedule.json", fifo, &["shrink"]),
    ];
    for (file, plant, commands) in cases {
        for command in commands {
            let dir = tempfile::tempdir().unwrap();
            let run = copy_of(&original, dir.path());
            plant(&run.join(file));
            let store = dir.path().join("store");
            std::fs::create_dir(&store).unwrap();
            let out = match *command {
                "report" => bounded_lockpick(&[Path::new("report"), &run]),
                _ => bounded_lockpick(&[Path::new("shrink"), &run, Path::new("--store"), &store]),
            };
            let stderr = String::from_utf8_lossy(&out.stderr);
            let case = format!("{command} with {file} planted");
            assert_eq!(out.status.code(), Some(254), "{case}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{case}: {stderr}");
            assert!(stderr.contains(file), "{case}: {stderr}");
            assert_eq!(std::fs::read_dir(&store).unwrap().count(), 0, "{case}");
        }
    }
}

#[test]
fn a_fifo_planted_as_another_runs_results_does_not_stop_the_stores_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let planted = store.join("redis-none").join("20200101T000000.000Z");
    std::fs::create_dir_all(&planted).unwrap();
    fifo(&planted.join("results.json"));
    let mut run = lockpick();
    run.args([
        "run",
        "--lock",
        "redis",
        "--time-limit",
        "2s",
        "--seed",
        "5",
        "--store",
    ])
    .arg(&store);
    let out = within(run, Duration::from_secs(180));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = std::fs::read_to_string(store.join("index.html")).unwrap();
    assert!(
        !index.contains("20200101T000000"),
        "the planted run was listed"
    );
}
