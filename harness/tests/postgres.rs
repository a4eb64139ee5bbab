//! PostgreSQL's two locks on a real server (Debian's postgresql, run as its own user in the
//! run's namespace): the lease row outlived by a frozen holder and fenced by its grant counter;
//! the advisory lock held by its session, so a frozen holder keeps it and a killed one frees it;
//! a killed server restarted from its data. Nothing of the run is left behind, the server's
//! backends included.
//!
//! Needs Debian's postgresql (`.ci/install-packages`).

mod common;

use common::{assert_nothing_left, fault_starts, run_line};

#[test]
fn a_frozen_holder_outlives_its_lease_row_and_the_grant_counter_fences_it() {
    let line = "--lock postgres-lease --nemesis pause-holder --time-limit 8s --ttl 1s \
                --pause 2500ms --fault-interval 500ms --seed 3";
    let r = run_line(&format!("{line} --fencing off"));
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "{}", r.stdout);
    let overlaps = r.results["overlapping_holders"]["overlaps"]
        .as_array()
        .unwrap();
    assert!(
        overlaps.iter().any(|o| o["cause"] == "outlived-lease"),
        "{}",
        r.stdout
    );
    assert!(
        !overlaps
            .iter()
            .any(|o| o["cause"] == "granted-under-live-lease"),
        "{}",
        r.stdout
    );
    assert_nothing_left(&r);
    let fenced = run_line(&format!("{line} --fencing on"));
    assert_eq!(fenced.stale("stale_writes"), 0, "{}", fenced.stdout);
    let rejected = fenced.results["stale_accesses"]["rejected"]
        .as_u64()
        .unwrap();
    assert!(rejected > 0, "{}", fenced.stdout);
    assert_nothing_left(&fenced);
}

#[test]
fn a_frozen_advisory_holder_keeps_its_session_and_a_killed_one_frees_the_lock() {
    let paused = run_line(
        "--lock postgres-advisory --nemesis pause-holder --time-limit 8s --pause 2500ms \
         --fault-interval 500ms --seed 3",
    );
    assert_eq!(paused.code, 0, "{}\n{}", paused.stdout, paused.stderr);
    assert_eq!(paused.overlaps(), 0, "{}", paused.stdout);
    assert!(
        !fault_starts(&paused, "pause").is_empty(),
        "{}",
        paused.stdout
    );
    assert_nothing_left(&paused);
    let killed = run_line("--lock postgres-advisory --nemesis kill-client --time-limit 10s");
    assert_eq!(killed.code, 0, "{}\n{}", killed.stdout, killed.stderr);
    assert!(killed.holds() >= 10, "{}", killed.stdout);
    assert!(!killed.stdout.contains("lock jammed"), "{}", killed.stdout);
    assert_nothing_left(&killed);
}

#[test]
fn a_killed_server_is_restarted_from_its_data_and_its_backends_die_with_it() {
    let r = run_line("--lock postgres-lease --nemesis kill-node --time-limit 10s --seed 3");
    assert!((0..=2).contains(&r.code), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.overlaps(), 0, "{}", r.stdout);
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
    // Every restart came up: the server's log says so once per start.
    let log = std::fs::read_to_string(r.dir.join("logs/postgres-n1.log")).unwrap();
    let ready = log.matches("ready to accept connections").count();
    assert!(
        ready > stops.len(),
        "{ready} starts for {} restarts",
        stops.len()
    );
    assert!(!log.contains("still in use"), "{log}");
    assert_nothing_left(&r);
}
