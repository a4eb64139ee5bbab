//! Faults injected into lockpick itself: it cleans up however it dies, keeps every recorded
//! operation, goes on when a client crashes or hangs, refuses to run without root, leaves the
//! host's network and clock as they were, and keeps its memory flat under load.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::{finished, lockpick, run_identity, wait_for};
use nix::sys::signal::{kill, Signal};

/// Runs `lockpick run` with `line` and extra environment, in a fresh store.
fn run_with_env(line: &str, env: &[(&str, &str)]) -> (common::Run, tempfile::TempDir) {
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .arg("run")
        .args(line.split_whitespace())
        .arg("--store")
        .arg(store.path())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (finished(store.path(), output), store)
}

#[test]
fn an_error_in_the_controller_cleans_up_and_keeps_the_history() {
    let (r, _store) = run_with_env(
        "--time-limit 30s",
        &[("LOCKPICK_INJECT", "error-after:300")],
    );
    assert_eq!(r.code, 255, "{}", r.stderr);
    assert!(r.stderr.contains("injected error"), "{}", r.stderr);
    // Nothing is left (checked by `finished`), and what was recorded is on disk and checkable.
    assert!(r.history().len() >= 300);
    let check = lockpick().arg("check").arg(&r.dir).output().unwrap();
    assert!([0, 1, 2].contains(&check.status.code().unwrap()));
}

#[test]
fn a_panic_in_the_controller_cleans_up() {
    let (r, _store) = run_with_env(
        "--time-limit 30s --nemesis pause-holder --fault-interval 100ms",
        &[("LOCKPICK_INJECT", "panic-after:300")],
    );
    assert_eq!(r.code, 255, "{}", r.stderr);
    assert!(r.stderr.contains("injected panic"), "{}", r.stderr);
    assert!(r.history().len() >= 300);
}

#[test]
fn sigterm_heals_and_cleans_up() {
    let store = tempfile::tempdir().unwrap();
    let mut command = lockpick();
    command.args(["run", "--time-limit", "120s"]).args([
        "--nemesis",
        "pause-holder,partition-client",
        "--fault-interval",
        "100ms",
    ]);
    let mut run = common::start_in(command, store.path());
    wait_for("a fault", Duration::from_secs(60), || {
        std::fs::read_to_string(store.path().join("latest/history.jsonl"))
            .is_ok_and(|h| h.contains("\"f\":\"start\""))
    });
    run.prefix = Some(run_identity(&store.path().join("latest")).0);
    kill(run.pid(), Signal::SIGTERM).unwrap();
    let r = finished(store.path(), run.wait());
    assert!(r.code == 1 || r.code == 2, "{}", r.stderr);
    let history = r.history();
    let count = |f: &str| {
        history
            .iter()
            .filter(|op| op["f"] == f && op["process"] == "nemesis")
            .count()
    };
    assert_eq!(count("start"), count("stop"), "every fault healed");
}

fn client_zero_ends_with_info(r: &common::Run) {
    let history = r.history();
    let last = history
        .iter()
        .rfind(|op| op["process"] == 0)
        .expect("client 0 ran");
    assert_eq!(last["type"], "info", "{last}");
    assert_eq!(last["f"], "release", "{last}");
    // The others went on without it (trying: a hung holder whose lease is still renewed in the
    // background keeps the lock, as a real watchdog-renewed lock would).
    let later_attempts = history
        .iter()
        .filter(|op| op["f"] == "acquire" && op["type"] == "invoke" && op["process"] != 0)
        .count();
    assert!(later_attempts > 10, "the other clients stopped too");
}

#[test]
fn a_crashed_client_does_not_stop_the_run() {
    let (r, _store) = run_with_env(
        "--time-limit 5s --ttl 500ms",
        &[("LOCKPICK_INJECT_CLIENT", "crash:0")],
    );
    assert_eq!(
        r.code, 2,
        "a run with a crashed client is not valid:\n{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("warning: client 0 exited"),
        "{}",
        r.stdout
    );
    client_zero_ends_with_info(&r);
    assert!(r.results["run"]["crashed_clients"][0]
        .as_str()
        .unwrap()
        .contains("client 0"));
}

#[test]
fn a_hung_client_is_timed_out_and_its_operation_becomes_info() {
    let (r, _store) = run_with_env(
        "--time-limit 3s --ttl 500ms",
        &[("LOCKPICK_INJECT_CLIENT", "hang:0")],
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stdout.contains("had not finished"), "{}", r.stdout);
    client_zero_ends_with_info(&r);
}

#[test]
fn a_client_program_flooding_its_outputs_leaves_bounded_logs() {
    // Its stdout floods with no newline, its stderr floods: each start of it is refused at the
    // line bound and leaves at most 64 KiB of stderr (and a line saying how much was cut) in
    // its client's log, however often it is restarted.
    let program =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/flood_outputs.py");
    let lock = format!("exec:redis:/usr/bin/python3 {}", program.display());
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .args([
            "run",
            "--lock",
            &lock,
            "--nemesis",
            "none",
            "--time-limit",
            "4s",
        ])
        .args(["--clients", "2", "--store"])
        .arg(store.path())
        .output()
        .unwrap();
    let r = finished(store.path(), output);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    let history = r.history();
    let refused = history
        .iter()
        .filter(|op| op["type"] == "info")
        .filter(|op| {
            op["value"]["error"]
                .as_str()
                .is_some_and(|e| e.contains("64 KiB"))
        })
        .count();
    assert!(refused > 0, "no operation refused at the line bound");
    for client in 0..2 {
        let log = std::fs::read(r.dir.join(format!("logs/client-{client}.log"))).unwrap();
        let text = String::from_utf8_lossy(&log);
        assert!(
            text.contains("stderr cut here"),
            "client {client}: nothing cut"
        );
        // Each breakage ends one start of the program: the head and the tail of each start's
        // stderr, and lockpick's own lines.
        let starts = 1 + history
            .iter()
            .filter(|op| op["process"] == client && op["type"] == "info")
            .count();
        assert!(
            log.len() < starts * 80 * 1024,
            "client {client}: {} bytes for {starts} starts",
            log.len()
        );
    }
}

#[test]
fn not_being_root_is_refused_before_anything_is_made() {
    // A copy of the binary that an unprivileged user may run.
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("lockpick");
    std::fs::copy(env!("CARGO_BIN_EXE_lockpick"), &binary).unwrap();
    Command::new("chmod")
        .args(["-R", "a+rx"])
        .arg(dir.path())
        .status()
        .unwrap();
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&binary)
        .args(["run", "--store", "/tmp/lockpick-nobody-store"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(254), "{stderr}");
    assert!(stderr.contains("needs root"), "{stderr}");
    assert!(!std::path::Path::new("/tmp/lockpick-nobody-store").exists());
}

/// What the host's own network and clock look like.
fn host_state() -> (String, f64) {
    let mut text = String::new();
    for args in [
        &["ip", "-o", "link"][..],
        &["ip", "-o", "addr"],
        &["ip", "route"],
        &["ip", "-6", "route"],
        &["nft", "list", "ruleset"],
        &["iptables-save"],
    ] {
        if let Ok(out) = Command::new(args[0]).args(&args[1..]).output() {
            let listing = String::from_utf8_lossy(&out.stdout);
            // Counters and timestamps change by themselves; what matters is the rules.
            for line in listing
                .lines()
                .filter(|l| !l.starts_with('#') && !l.starts_with(':'))
            {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    // Wall clock minus monotonic clock: constant unless someone stepped the clock.
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let monotonic = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    let monotonic = monotonic.tv_sec() as f64 + monotonic.tv_nsec() as f64 / 1e9;
    (text, wall - monotonic)
}

#[test]
fn the_host_is_unchanged_after_a_run_with_every_nemesis() {
    let (before, clock_before) = host_state();
    let (r, _store) = run_with_env(
        "--lock redlock --nemesis pause-holder,pause-node,partition-node,partition-halves,\
         partition-ring,partition-bridge,partition-client,partition-holder,partition-one-way,loss,\
         clock-forward,clock-backward,clock-strobe,clock-holder,skew-clients,kill-node,kill-client,\
         delay-holder-write --time-limit 8s --fault-duration 600ms --fault-interval 600ms --seed 71",
        &[],
    );
    assert_ne!(r.code, 255, "{}\n{}", r.stdout, r.stderr);
    let (after, clock_after) = host_state();
    let changed: Vec<&str> = after.lines().filter(|l| !before.contains(l)).collect();
    let gone: Vec<&str> = before.lines().filter(|l| !after.contains(l)).collect();
    assert!(
        changed.is_empty() && gone.is_empty(),
        "host changed: +{changed:?} -{gone:?}"
    );
    assert!(
        (clock_after - clock_before).abs() < 0.5,
        "the host's clock moved"
    );
}

fn rss_kb(pid: nix::unistd::Pid) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn fifty_clients_with_faults_keep_the_controller_memory_flat() {
    let store = tempfile::tempdir().unwrap();
    let mut command = lockpick();
    command
        .args(["run", "--clients", "50", "--time-limit", "60s"])
        .args(["--nemesis", "pause-holder,kill-client,partition-client"]);
    let mut run = common::start_in(command, store.path());
    let pid = run.pid();
    wait_for("the run to start", Duration::from_secs(60), || {
        common::history_lines(store.path()) > 0
    });
    run.prefix = Some(run_identity(&store.path().join("latest")).0);
    std::thread::sleep(Duration::from_secs(15));
    let early = rss_kb(pid);
    let ops_early = common::history_lines(store.path());
    std::thread::sleep(Duration::from_secs(38));
    let late = rss_kb(pid);
    let ops_late = common::history_lines(store.path());
    let r = finished(store.path(), run.wait());
    eprintln!(
        "controller RSS: {early} kB at 15 s ({ops_early} ops), {late} kB at 53 s ({ops_late} ops)"
    );
    assert_ne!(r.code, 255, "{}", r.stderr);
    assert!(ops_late > ops_early * 2, "the run kept going");
    assert!(
        early > 0 && late < early + 20_000,
        "memory grew from {early} kB to {late} kB"
    );
}
