//! The `nats-kv` lock on a real three-server NATS JetStream cluster (Debian's nats-server 2.9.10,
//! a KV bucket of three replicas, `max_age` the lease): a frozen holder outlives its key and the
//! revision fences it; a killed client's key ages out; a cut-off holder, a killed server and a
//! server clock jumped ahead are fenced; and `lockpick clean` removes what a run killed with
//! SIGKILL left.
//!
//! Measured (README, "NATS JetStream KV"): 2.9.10's clustered compare-and-set acknowledges two
//! creates made over one revision at once (`workloads/examples/nats_cas_race.rs`: about one
//! round in two with three replicas, none with one; nats-server's issue #4320), so even without faults two clients are
//! granted the key together. The tests hold the service to that: such an overlap is a grant
//! under a live lease, and the token (each grant its own revision) still fences it.
//!
//! Needs Debian's nats-server (`.ci/install-packages`).

use crate::common;

use std::time::Duration;

use common::{assert_nothing_left, fault_starts, history_lines, run_line, wait_for};
use nix::sys::signal::{kill, Signal};

/// Every overlap's cause, as the checker names it.
fn causes(r: &common::Run) -> Vec<String> {
    r.results["overlapping_holders"]["overlaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["cause"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn without_faults_the_cluster_grants_one_revision_twice_and_the_revision_tells_them_apart() {
    let r = run_line("--lock nats-kv --time-limit 8s --clients 5 --fencing off --seed 1");
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.holds() >= 10, "{}", r.stdout);
    let causes = causes(&r);
    assert!(!causes.is_empty(), "{}", r.stdout);
    assert!(
        causes.iter().all(|c| c == "granted-under-live-lease"),
        "{causes:?}"
    );
    // Two grants, two revisions: every token is handed out once.
    let mut tokens: Vec<u64> = r
        .history()
        .into_iter()
        .filter(|op| op["f"] == "acquire" && op["type"] == "ok")
        .map(|op| op["value"]["token"].as_u64().unwrap())
        .collect();
    let granted = tokens.len();
    tokens.dedup();
    assert_eq!(tokens.len(), granted, "a revision was granted twice");
    assert_nothing_left(&r);
    let fenced = run_line("--lock nats-kv --time-limit 8s --clients 5 --fencing on --seed 1");
    assert_eq!(fenced.stale_writes(), 0, "{}", fenced.stdout);
    assert_nothing_left(&fenced);
}

#[test]
fn a_frozen_holder_outlives_its_key_and_the_revision_fences_it() {
    let line = "--lock nats-kv --nemesis pause-holder --time-limit 10s --ttl 1s \
                --pause 2500ms --fault-interval 500ms --seed 3";
    let r = run_line(&format!("{line} --fencing off"));
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        causes(&r).iter().any(|c| c == "outlived-lease"),
        "{}",
        r.stdout
    );
    assert!(!fault_starts(&r, "pause").is_empty(), "{}", r.stdout);
    assert_nothing_left(&r);
    let fenced = run_line(&format!("{line} --fencing on"));
    assert_eq!(fenced.stale_writes(), 0, "{}", fenced.stdout);
    assert!(fenced.rejected() > 0, "{}", fenced.stdout);
    assert_nothing_left(&fenced);
}

#[test]
fn a_killed_clients_key_ages_out_and_the_lock_moves_on() {
    let r = run_line("--lock nats-kv --nemesis kill-client --time-limit 10s --fencing on --seed 2");
    assert!((0..=1).contains(&r.code), "{}\n{}", r.stdout, r.stderr);
    assert!(r.holds() >= 10, "{}", r.stdout);
    assert!(!fault_starts(&r, "kill").is_empty(), "{}", r.stdout);
    assert!(!r.stdout.contains("lock jammed"), "{}", r.stdout);
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    // A kill ends a holder at once: no overlap is its doing, only the cluster's double grants.
    assert!(
        causes(&r).iter().all(|c| c == "granted-under-live-lease"),
        "{}",
        r.stdout
    );
    assert_nothing_left(&r);
}

#[test]
fn a_cut_off_holder_and_a_killed_server_are_fenced() {
    let cut = run_line(
        "--lock nats-kv --nemesis partition-holder --time-limit 10s --fencing on --seed 4",
    );
    assert!(
        (0..=1).contains(&cut.code),
        "{}\n{}",
        cut.stdout,
        cut.stderr
    );
    assert!(
        !fault_starts(&cut, "partition-holder").is_empty(),
        "{}",
        cut.stdout
    );
    assert_eq!(cut.stale_writes(), 0, "{}", cut.stdout);
    assert_nothing_left(&cut);
    let killed =
        run_line("--lock nats-kv --nemesis kill-node --time-limit 12s --fencing on --seed 3");
    assert!(
        (0..=2).contains(&killed.code),
        "{}\n{}",
        killed.stdout,
        killed.stderr
    );
    assert_eq!(killed.stale_writes(), 0, "{}", killed.stdout);
    let stops: Vec<_> = killed
        .history()
        .into_iter()
        .filter(|e| e["f"] == "stop" && e["value"]["fault"] == "kill")
        .collect();
    assert!(!stops.is_empty(), "{}", killed.stdout);
    assert!(
        stops.iter().all(|s| s["value"]["restarted_pid"].is_u64()),
        "{stops:?}"
    );
    // Few: once a kill reaches the stream's leader, no new one is elected within the run.
    assert!(killed.holds() >= 1, "{}", killed.stdout);
    assert_nothing_left(&killed);
}

#[test]
fn a_servers_clock_is_moved_through_its_vdso_and_read_back() {
    let r = run_line(
        "--lock nats-kv --nemesis clock-forward --work 500ms --time-limit 10s --fencing on \
         --seed 3",
    );
    assert!((0..=1).contains(&r.code), "{}\n{}", r.stdout, r.stderr);
    let jumps = fault_starts(&r, "clock-forward");
    assert!(
        jumps.iter().any(|j| j["value"]["effective"] == true),
        "no jump read back from the monitoring port's Date header: {jumps:?}"
    );
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    assert_nothing_left(&r);
}

#[test]
fn clean_removes_the_servers_of_a_run_killed_with_sigkill() {
    let store = tempfile::tempdir().unwrap();
    let mut command = common::lockpick();
    command.args(["run", "--lock", "nats-kv", "--time-limit", "120s"]);
    let mut run = common::start_in(command, store.path());
    wait_for("operations", Duration::from_secs(100), || {
        history_lines(store.path()) > 20
    });
    let dir = store.path().join("latest").canonicalize().unwrap();
    let prefix = common::run_identity(&dir).0;
    run.prefix = Some(prefix.clone());
    kill(run.pid(), Signal::SIGKILL).unwrap();
    run.wait();
    // The servers die with their controller (a parent-death signal); what the run made for
    // them stays until `clean`: their namespaces, their stores in the scratch folder.
    assert!(
        !common::namespaces_with(&prefix).is_empty(),
        "a killed run leaves its namespaces"
    );
    let subnet = common::run_identity(&dir).1;
    let clean = common::lockpick()
        .args(["clean", "--prefix", &prefix])
        .output()
        .unwrap();
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    common::assert_prefix_gone(&prefix);
    let servers: Vec<String> = common::processes_mentioning(&[&subnet])
        .into_iter()
        .filter(|p| p.contains("nats-server"))
        .collect();
    assert!(servers.is_empty(), "servers of {prefix} left: {servers:?}");
}

#[test]
fn in_containers_the_cluster_is_paused_and_fenced_as_in_namespaces() {
    // Docker's runtime: three lockpick/nats containers (docker/nats), the servers started inside
    // them by lockpick; the frozen holder's key ages out and the fence turns its writes away.
    let engine = common::engine::Engine::with_images(&[("bookworm", &["node", "nats"])]);
    let store = tempfile::tempdir().unwrap();
    let r = engine.run(
        store.path(),
        "--lock nats-kv --nemesis pause-holder --fencing on --time-limit 8s --ttl 1s \
         --pause 2500ms --fault-interval 500ms --seed 3",
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        causes(&r).iter().any(|c| c == "outlived-lease"),
        "{}",
        r.stdout
    );
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    let setup = &r.history()[0];
    assert_eq!(
        setup["value"]["server_versions"]["nats"].as_str(),
        Some("2.9.10"),
        "{setup}"
    );
}

#[test]
fn a_killed_stream_leader_is_found_by_the_servers_own_word_and_the_revision_fences() {
    // The bucket is made at the service's start, so its stream has a leader before the fault
    // opens; JetStream counts no terms, so the records carry none.
    let r = run_line("--lock nats-kv --nemesis kill-leader --fencing on --time-limit 10s --seed 1");
    assert!((0..=1).contains(&r.code), "{}\n{}", r.stdout, r.stderr);
    let kills = fault_starts(&r, "kill");
    let aimed: Vec<_> = r
        .history()
        .into_iter()
        .filter(|op| op["process"] == "nemesis" && op["f"] == "start")
        .filter(|op| op["value"]["leader"]["node"].is_string())
        .collect();
    assert!(
        !aimed.is_empty(),
        "no fault found a leader: {kills:?}\n{}",
        r.stdout
    );
    for start in &aimed {
        assert!(start["value"]["leader"]["term"].is_null(), "{start}");
        assert_eq!(
            start["value"]["targets"][0], start["value"]["leader"]["node"],
            "{start}"
        );
    }
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    assert_nothing_left(&r);
}
