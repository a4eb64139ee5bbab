//! `lockpick sweep` on real servers, small: two points, two seeds, short runs. A pause below half
//! the TTL leaves Redis safe and one of 1.5 TTLs breaks it; fenced etcd accepts no stale write
//! at any pause; a killed holder jams the lock longer when the lease is longer; the page's plots
//! are there, with their axes named, as headless Chromium renders them; bad input starts
//! nothing; Ctrl-C keeps the runs done.

use crate::common;

use std::path::{Path, PathBuf};

use common::compared::{lockpick_in, Done};
use serde_json::Value;

/// Runs a sweep in a fresh folder and returns it with what the sweep wrote.
fn sweep(args: &[&str]) -> (tempfile::TempDir, Done, PathBuf, Value) {
    let dir = tempfile::tempdir().unwrap();
    let done = lockpick_in(dir.path(), &[&["sweep", "--parallel", "2"], args].concat());
    assert_eq!(done.code, 0, "{}", done.shown);
    let folder = only_sweep(&dir.path().join("store"));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("sweep.json")).unwrap()).unwrap();
    for run in json["runs"].as_array().unwrap() {
        let (prefix, _) = common::run_identity(Path::new(run["dir"].as_str().unwrap()));
        assert!(!prefix.is_empty(), "{run}");
        common::assert_prefix_gone(&prefix);
    }
    (dir, done, folder, json)
}

/// The sweeps' folders in `store` (not the `latest` link beside them).
fn sweeps_in(store: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(store.join("sweep")).map_or(Vec::new(), |d| {
        d.flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect()
    })
}

/// The one sweep's folder in `store`.
fn only_sweep(store: &Path) -> PathBuf {
    let mut found = sweeps_in(store);
    assert_eq!(found.len(), 1, "{found:?}");
    found.pop().unwrap()
}

/// The stats of each point of the only line, in the points' order.
fn points(json: &Value) -> Vec<&Value> {
    let stats = json["stats"].as_array().unwrap();
    assert!(stats.iter().all(|s| s["series"] == 0), "one line only");
    stats.iter().collect()
}

#[test]
fn redis_overlaps_at_a_pause_of_one_and_a_half_ttls_and_not_below_half_of_one() {
    let (_dir, done, folder, json) = sweep(&[
        "--vary",
        "fault-duration=0.3x,1.5x",
        "--locks",
        "redis",
        "--fencing",
        "off",
        "--nemesis",
        "pause-holder",
        "--ttl",
        "2s",
        "--time-limit",
        "8s",
        "--seeds",
        "2",
        "--seed",
        "7",
    ]);
    assert!(
        done.shown.contains("= 4 runs"),
        "the cost told first: {}",
        done.shown
    );
    assert!(done.shown.contains("ETA"), "{}", done.shown);
    let stats = points(&json);
    assert_eq!(stats.len(), 2);
    assert_eq!(json["points"][0]["value"], "600ms");
    assert_eq!(stats[0]["runs"], 2);
    // Safe below half the TTL: proven, both runs decided valid (an unknown run counts toward no
    // share, so a share of 0 alone proves nothing).
    assert_eq!(stats[0]["valid"], 2, "{}", stats[0]);
    assert_eq!(stats[0]["decided"], 2, "{}", stats[0]);
    assert_eq!(stats[0]["overlap_share"], 0.0, "{}", stats[0]);
    assert!(
        stats[1]["overlap_share"].as_f64().unwrap() > 0.0,
        "{}",
        stats[1]
    );
    assert!(stats[1]["next_grant_samples"].as_u64().unwrap() > 0);
    assert!(stats[1]["acquire_p99_ms"].as_f64().is_some());
    // Every run is an ordinary stored run: its report is there, and `check` judges it again.
    for run in json["runs"].as_array().unwrap() {
        let run_dir = Path::new(run["dir"].as_str().unwrap());
        assert!(run_dir.join("report.html").exists());
        let check = common::lockpick()
            .args(["check"])
            .arg(run_dir)
            .output()
            .unwrap();
        let expected = match run["verdict"].as_str().unwrap() {
            "valid" => 0,
            "invalid" => 1,
            _ => 2,
        };
        assert_eq!(check.status.code(), Some(expected), "{run}");
    }
    let md = std::fs::read_to_string(folder.join("sweep.md")).unwrap();
    assert!(md.contains("| 3000ms | 1.50 | redis fencing off |"), "{md}");
    plots_have_named_axes(&folder.join("sweep.html"));
}

/// The page as Chromium renders it: three plots, each with its x axis (the pause over the TTL),
/// its y axis, the line where the pause equals the TTL, and the redis line.
fn plots_have_named_axes(page: &Path) {
    let facts = common::dom::facts(
        page,
        "return [...document.querySelectorAll('figure.plot')].map(f => { \
           const svg = f.querySelector('svg'); \
           const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0}; \
           return { measure: f.dataset.measure, width: box.width, height: box.height, \
             lines: svg ? svg.querySelectorAll('polyline, path, line').length : 0, \
             texts: svg ? [...svg.querySelectorAll('text')].map(t => t.textContent) : [] }; });",
        1000,
    );
    let plots = facts.as_array().unwrap();
    assert_eq!(plots.len(), 3, "{facts}");
    for plot in plots {
        let texts: Vec<&str> = (plot["texts"].as_array().unwrap().iter())
            .map(|t| t.as_str().unwrap())
            .collect();
        let has = |want: &str| texts.iter().any(|t| t.contains(want));
        assert!(has("fault duration / TTL"), "x axis named: {texts:?}");
        assert!(
            has(plot["measure"].as_str().unwrap()),
            "y axis named: {texts:?}"
        );
        assert!(has("fault-duration = TTL"), "the line at 1: {texts:?}");
        assert!(has("redis fencing off"), "the line's legend: {texts:?}");
        assert!(plot["width"].as_f64().unwrap() > 300.0, "{plot}");
        assert!(plot["height"].as_f64().unwrap() > 150.0, "{plot}");
        assert!(plot["lines"].as_u64().unwrap() >= 2, "{plot}");
    }
}

#[test]
fn fenced_etcd_accepts_no_stale_write_at_any_pause() {
    let (_dir, _, _, json) = sweep(&[
        "--vary",
        "fault-duration=0.3x,1.5x",
        "--locks",
        "etcd",
        "--fencing",
        "on",
        "--nemesis",
        "pause-holder",
        "--ttl",
        "2s",
        "--time-limit",
        "8s",
        "--seeds",
        "2",
        "--seed",
        "7",
    ]);
    let stats = points(&json);
    assert_eq!(stats.len(), 2);
    for point in &stats {
        assert_eq!(point["runs"], 2, "{point}");
        assert!(point["decided"].as_u64().unwrap() > 0, "{point}");
        assert_eq!(point["mean_stale_writes"], 0.0, "{point}");
        assert_eq!(point["stale_share"], 0.0, "{point}");
    }
    // Not for want of trying: at 1.5 TTLs the paused holder came back and the fence turned its
    // writes away.
    assert!(stats[1]["rejected"].as_u64().unwrap() > 0, "{}", stats[1]);
}

#[test]
fn a_killed_holder_jams_the_lock_longer_under_a_longer_ttl() {
    let (_dir, _, _, json) = sweep(&[
        "--vary",
        "ttl=500ms,3s",
        "--locks",
        "redis",
        "--fencing",
        "off",
        "--nemesis",
        "kill-client",
        "--clients",
        "2",
        "--fault-duration",
        "500ms",
        "--time-limit",
        "12s",
        "--seeds",
        "2",
        "--seed",
        "11",
    ]);
    let stats = points(&json);
    assert_eq!(stats.len(), 2);
    let mean = |p: &Value| {
        p["next_grant_mean_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("no killed holder measured: {p}"))
    };
    let (short, long) = (mean(stats[0]), mean(stats[1]));
    assert!(long > short, "TTL 3s: {long} s, TTL 500ms: {short} s");
    // The lease, not the waiters' back-off, keeps the lock: most of a 3 s lease passes.
    assert!(long > 1.0, "{}", stats[1]);
}

#[test]
fn bad_sweeps_are_one_line_and_exit_254_with_nothing_started() {
    for (args, says) in [
        (vec!["--vary", "speed=1..2"], "unknown knob"),
        (vec!["--vary", "ttl=4s..1s"], "reversed"),
        (vec!["--vary", "ttl=1s..1s"], "empty"),
        (
            vec!["--vary", "ttl=1s..4s", "--points", "50", "--seeds", "5"],
            "more than --max-runs",
        ),
        (
            vec!["--vary", "clock-jump=1s..2s", "--nemesis", "pause-holder"],
            "redis ignores it",
        ),
        (
            vec!["--vary", "ttl=1s..2s", "--locks", "postgres-advisory"],
            "postgres-advisory ignores it",
        ),
        (
            vec!["--vary", "ttl=1s..2s", "--ttl", "3s"],
            "the knob the sweep varies",
        ),
        (
            vec!["--vary", "delay=1.2ms,1.4ms", "--nemesis", "delay-client"],
            "2 points are only 1 distinct",
        ),
        // An exec program reads the TTL (LOCKPICK_TTL_MS): a TTL sweep of it is planned (and
        // stopped here by the budget only).
        (
            vec![
                "--vary",
                "ttl=1s,2s",
                "--locks",
                "exec:redis:python3 client.py",
                "--max-runs",
                "1",
            ],
            "more than --max-runs",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let done = lockpick_in(dir.path(), &[&["sweep"], &args[..]].concat());
        assert_eq!(done.code, 254, "{args:?}: {}", done.shown);
        let shown = done.shown.trim();
        assert_eq!(shown.lines().count(), 1, "{shown}");
        assert!(shown.contains(says), "{args:?}: {shown}");
        assert!(
            !dir.path().join("store").exists(),
            "{args:?} started something"
        );
    }
}

#[test]
fn a_store_path_that_is_not_utf8_is_refused_with_nothing_started() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let output = common::lockpick()
        .current_dir(dir.path())
        .args(["sweep", "--vary", "fault-duration=0.5x,1x", "--store"])
        .arg(std::ffi::OsStr::from_bytes(b"st\xffore"))
        .output()
        .unwrap();
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(254), "{shown}");
    assert_eq!(shown.trim().lines().count(), 1, "{shown}");
    assert!(shown.contains("not UTF-8"), "{shown}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn ctrl_c_keeps_the_runs_done_and_leaves_nothing() {
    use nix::sys::signal::{kill, Signal};
    let store = tempfile::tempdir().unwrap();
    let mut command = common::lockpick();
    command.args([
        "sweep",
        "--vary",
        "fault-duration=0.3x,1.5x",
        "--locks",
        "redis",
        "--fencing",
        "off",
        "--seeds",
        "1",
        "--parallel",
        "1",
        "--time-limit",
        "4s",
        "--seed",
        "3",
    ]);
    let mut sweep = common::start_in(command, store.path());
    // The first run has ended once the second one's folder is there.
    let runs = store.path().join("redis-pause-holder");
    let started = std::time::Instant::now();
    // Each run's own folder (not the `latest` link beside them).
    let folders = || -> Vec<std::fs::DirEntry> {
        std::fs::read_dir(&runs).map_or(Vec::new(), |d| {
            d.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .collect()
        })
    };
    while folders().len() < 2 {
        assert!(started.elapsed().as_secs() < 120, "no second run began");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // The sweep's folder is made before its first run, not after its last.
    assert_eq!(sweeps_in(store.path()).len(), 1, "no sweep folder yet");
    std::thread::sleep(std::time::Duration::from_millis(500));
    kill(sweep.pid(), Signal::SIGINT).unwrap();
    let output = sweep.wait();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("interrupted: the points done are kept"),
        "{shown}"
    );
    let folder = only_sweep(store.path());
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(json["interrupted"], true);
    assert_eq!(json["planned_runs"], 2);
    assert_eq!(json["runs"].as_array().unwrap().len(), 1, "{json}");
    assert_eq!(json["stats"][0]["point"], 0);
    assert!(folder.join("sweep.html").exists());
    for run in folders() {
        let (prefix, _) = common::run_identity(&run.path());
        common::assert_prefix_gone(&prefix);
    }
}
