//! MariaDB's `GET_LOCK` on a real server (Debian's mariadb-server, its data folder, socket and
//! pid file in the run's scratch folder, listening on its node's address): valid without faults;
//! a killed client's session ends and its lock is granted again; a frozen holder keeps its
//! session and so its lock (a session lock outlives a pause); a cut-off holder's session
//! outlives a 2 s partition (the server's keepalives need 3 s); a killed server restarts from its
//! data folder with no sessions, so the lock is free under its holder; a jumped server clock
//! (libfaketime) is read back and changes nothing. `lockpick clean` removes what a run left after
//! a kill -9 of its controller (the server dies with it; its data folder, namespaces and clients
//! stay until then). `exec:mariadb:` lends the server to a program of the user's (PyMySQL's
//! `GET_LOCK`, from `examples/`). In containers (`--runtime docker`, `docker/mariadb`) the same
//! server frees a killed client's lock, and a restarted one frees it under its holder. Nothing of
//! a run is left behind.
//!
//! Needs Debian's mariadb-server, python3-pymysql for the exec program, and docker.io and
//! debootstrap for the containers (`.ci/install-packages`).

use std::time::Duration;

use crate::common;

use common::{assert_nothing_left, fault_starts, run_line, Run};
use serde_json::Value;

#[test]
fn mariadb_is_valid_without_faults_and_records_its_server_version() {
    let r = run_line("--lock mariadb --time-limit 6s --clients 5");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.holds() >= 10, "only {} holds", r.holds());
    let setup = &r.history()[0];
    let version = setup["value"]["server_versions"]["mariadb"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        version.starts_with("10.") || version.starts_with("11."),
        "{setup}"
    );
    assert_nothing_left(&r);
}

/// The kills that hit a client while it held the lock (granted, not yet releasing), each with
/// how long after it another client was granted the lock (`None`: never, within the run).
fn holders_killed(r: &Run) -> Vec<(String, Option<u64>)> {
    let history = r.history();
    let grants: Vec<&Value> = history
        .iter()
        .filter(|op| op["f"] == "acquire" && op["type"] == "ok")
        .collect();
    let mut found = Vec::new();
    for kill in fault_starts(r, "kill") {
        let at = kill["time"].as_u64().unwrap();
        let target = kill["value"]["targets"][0]
            .as_str()
            .unwrap_or("")
            .to_string();
        let Some(process) = target.strip_prefix("client ") else {
            continue;
        };
        let process: Option<u64> = process.parse().ok();
        let is_process =
            |op: &Value| op["process"].as_u64().is_some() && op["process"].as_u64() == process;
        let Some(grant) = grants
            .iter()
            .rfind(|g| is_process(g) && g["time"].as_u64().unwrap() < at)
        else {
            continue;
        };
        let granted_at = grant["time"].as_u64().unwrap();
        let released = history.iter().any(|op| {
            is_process(op)
                && op["f"] == "release"
                && (granted_at..at).contains(&op["time"].as_u64().unwrap())
        });
        if released {
            continue;
        }
        let next = grants
            .iter()
            .map(|g| g["time"].as_u64().unwrap())
            .find(|t| *t > at);
        found.push((target, next.map(|t| t - at)));
    }
    found
}

#[test]
fn a_killed_holders_session_ends_and_its_lock_is_granted_again() {
    // Two clients that hold for a second each: a kill finds the holder about half the time, so
    // one of two runs finds one (and the other client takes the lock when its session dies).
    let line = "--lock mariadb --nemesis kill-client --clients 2 --work 1s --time-limit 12s";
    let mut killed = Vec::new();
    for seed in [1, 2, 3] {
        let r = run_line(&format!("{line} --seed {seed}"));
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert!(!r.stdout.contains("lock jammed"), "{}", r.stdout);
        assert!(!fault_starts(&r, "kill").is_empty(), "{}", r.stdout);
        assert_nothing_left(&r);
        killed = holders_killed(&r);
        if !killed.is_empty() {
            break;
        }
    }
    assert!(!killed.is_empty(), "no kill found a holder in three runs");
    // Freed when its session died: the next grant comes at once, not after some timeout (a
    // kill late in the run may leave no time for one).
    for (target, next) in &killed {
        if let Some(after) = next {
            assert!(
                *after < Duration::from_secs(3).as_nanos() as u64,
                "{target} was killed holding the lock, granted again {after} ns later"
            );
        }
    }
    assert!(killed.iter().any(|(_, next)| next.is_some()), "{killed:?}");
}

#[test]
fn a_frozen_holder_keeps_its_session_and_so_its_lock() {
    let r = run_line(
        "--lock mariadb --nemesis pause-holder --time-limit 8s --pause 2500ms \
         --fault-interval 500ms --seed 3",
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.overlaps(), 0, "{}", r.stdout);
    let pauses = fault_starts(&r, "pause");
    assert!(!pauses.is_empty(), "{}", r.stdout);
    assert!(
        pauses.iter().all(|p| p["value"]["effective"] == true),
        "{pauses:?}"
    );
    assert_nothing_left(&r);
}

#[test]
fn a_cut_off_holders_session_outlives_the_partition() {
    let r = run_line("--lock mariadb --nemesis partition-holder --time-limit 10s --seed 1");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.overlaps(), 0, "{}", r.stdout);
    assert!(
        !fault_starts(&r, "partition-holder").is_empty(),
        "{}",
        r.stdout
    );
    assert_nothing_left(&r);
}

#[test]
fn a_killed_server_restarts_from_its_data_folder_and_frees_the_lock_under_its_holder() {
    // A restart ends every session: the next client is granted the lock while the holder works
    // on. Holders work 4 s, longer than a restart takes on a busy machine (at most two runs).
    let line = "--lock mariadb --nemesis kill-node --work 4s --time-limit 15s";
    let mut r = run_line(&format!("{line} --seed 5"));
    if r.code != 1 {
        r = run_line(&format!("{line} --seed 6"));
    }
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "{}", r.stdout);
    let stops: Vec<_> = r
        .history()
        .into_iter()
        .filter(|e| e["f"] == "stop" && e["value"]["fault"] == "kill")
        .collect();
    assert!(!stops.is_empty(), "{}", r.stdout);
    assert!(
        stops.iter().all(|s| s["value"]["restarted_pid"].is_u64()),
        "{stops:?}"
    );
    // The restarts came up from the data folder (a server killed again while it was still
    // starting never says so, nor may the last one before the run ends): its log says so once
    // per start, and no start gave up.
    let log = std::fs::read_to_string(r.dir.join("logs/mariadb-n1.log")).unwrap();
    let ready = log.matches("ready for connections").count();
    assert!(
        ready >= 2,
        "{ready} starts for {} restarts:\n{log}",
        stops.len()
    );
    assert!(!log.contains("[ERROR] Aborting"), "{log}");
    assert_nothing_left(&r);
}

#[test]
fn clean_removes_what_a_run_left_when_its_controller_was_killed() {
    use nix::sys::signal::{kill, Signal};
    let store = tempfile::tempdir().unwrap();
    let mut lockpick = common::lockpick();
    lockpick.args(["run", "--lock", "mariadb", "--time-limit", "120s"]);
    let mut run = common::start_in(lockpick, store.path());
    common::wait_for("operations", Duration::from_secs(100), || {
        common::history_lines(store.path()) > 20
    });
    let dir = store.path().join("latest").canonicalize().unwrap();
    let prefix = common::run_identity(&dir).0;
    run.prefix = Some(prefix.clone());
    kill(run.pid(), Signal::SIGKILL).unwrap();
    run.wait();
    // The server dies with its controller (its parent-death signal); its data folder, the
    // namespaces and the clients stay until clean.
    let scratch = format!("/dev/shm/{prefix}");
    assert!(
        std::path::Path::new(&scratch)
            .join("mariadb-n1/data")
            .is_dir(),
        "the killed run's data folder is gone before clean"
    );
    assert!(!common::namespaces_with(&prefix).is_empty());
    common::clean_prefix(common::lockpick(), &prefix);
    common::assert_prefix_gone(&prefix);
    let left = common::processes_mentioning(&[&format!("{scratch}/")]);
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn an_exec_program_takes_get_lock_on_the_server_and_a_killed_ones_lock_is_freed() {
    let program = common::examples::example("python-pymysql/lock_client.py");
    let check = common::lockpick()
        .args(["protocol-check", "--service", "mariadb", "--"])
        .arg(&program)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(said.contains("7 of 7 checks passed"), "{said}");
    let r = run_line(&format!(
        "--lock exec:mariadb:{program} --name pymysql --nemesis kill-client --clients 3 \
         --time-limit 10s --seed 2"
    ));
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.holds() >= 10, "{}", r.stdout);
    assert!(!fault_starts(&r, "kill").is_empty(), "{}", r.stdout);
    assert_nothing_left(&r);
}

#[test]
fn a_jumped_server_clock_is_read_back_and_leaves_the_session_lock_alone() {
    let r =
        run_line("--lock mariadb --nemesis clock-forward --work 500ms --time-limit 10s --seed 3");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let jumps = fault_starts(&r, "clock-forward");
    assert!(!jumps.is_empty(), "{}", r.stdout);
    assert!(
        jumps.iter().all(|j| j["value"]["effective"] == true),
        "a jump not read back from SYSDATE(6): {jumps:?}"
    );
    assert_nothing_left(&r);
}

#[test]
fn in_containers_a_killed_client_frees_the_lock_and_a_restart_frees_it_under_its_holder() {
    // lockpick/mariadb:bookworm (docker/mariadb), built by the engine helper if missing.
    let engine = common::engine::Engine::with_images(&[("bookworm", &["node", "mariadb"])]);
    let store = tempfile::tempdir().unwrap();
    let r = engine.run(
        store.path(),
        "--lock mariadb --nemesis kill-client --time-limit 8s --seed 2",
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.holds() >= 10, "{}", r.stdout);
    assert!(!fault_starts(&r, "kill").is_empty(), "{}", r.stdout);
    let setup = &r.history()[0];
    assert!(
        setup["value"]["server_versions"]["mariadb"].is_string(),
        "{setup}"
    );
    let store = tempfile::tempdir().unwrap();
    let r = engine.run(
        store.path(),
        "--lock mariadb --nemesis kill-node --work 2s --time-limit 10s --seed 5",
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "{}", r.stdout);
}
