//! The single-node Redis lease on a real redis-server, without faults and with a frozen holder.

use crate::common;

use common::{run_line, Run};

#[test]
fn redis_without_faults_is_valid() {
    let r = run_line("--lock redis --time-limit 6s --clients 5");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.valid(), "valid");
    assert_eq!(r.overlaps(), 0);
    assert_eq!(r.stale_writes(), 0);
    assert!(
        r.holds() >= 10,
        "only {} holds: the clients barely ran",
        r.holds()
    );
    assert!(r.stdout.contains("verdict: VALID"), "{}", r.stdout);
}

/// Pausing the holder for longer than its lease breaks Redis: the lease expires under the frozen
/// client, another client takes the lock, and the frozen one writes when it wakes.
fn pause_holder_breaks_redis(seed: &str, fencing: &str, time_limit: &str) -> Run {
    let r = run_line(&format!(
        "--lock redis --nemesis pause-holder --time-limit {time_limit} --seed {seed} \
         --fencing {fencing}"
    ));
    assert_eq!(r.code, 1, "expected invalid:\n{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.valid(), "invalid");
    assert!(r.overlaps() > 0, "no overlapping holders:\n{}", r.stdout);
    assert!(
        r.stale_writes() > 0,
        "no stale write accepted:\n{}",
        r.stdout
    );
    let history = r.history();
    let pauses = history
        .iter()
        .filter(|op| op["process"] == "nemesis" && op["f"] == "start")
        .filter(|op| op["value"]["effective"] == true)
        .count();
    assert!(pauses > 0, "no pause took effect");
    // Every overlap comes with the pause that caused it.
    for overlap in r.results["overlapping_holders"]["overlaps"]
        .as_array()
        .unwrap()
    {
        assert!(
            !overlap["faults"].as_array().unwrap().is_empty(),
            "{overlap}"
        );
    }
    // The history says Redis gives no token.
    let grants = history
        .iter()
        .filter(|op| op["f"] == "acquire" && op["type"] == "ok");
    assert!(grants.clone().count() > 0);
    assert!(grants.clone().all(|op| op["value"]["token"].is_null()));
    r
}

#[test]
fn pausing_the_holder_gives_overlaps_and_stale_writes_seed_1() {
    // The issue's own setting: 30 s with the defaults (TTL 1 s, pauses of 2 s).
    pause_holder_breaks_redis("1", "off", "30s");
}

#[test]
fn pausing_the_holder_gives_overlaps_and_stale_writes_seed_2() {
    pause_holder_breaks_redis("2", "off", "30s");
}

#[test]
fn fencing_cannot_help_redis_because_it_has_no_token() {
    let r = pause_holder_breaks_redis("3", "on", "8s");
    assert_eq!(r.rejected(), 0, "nothing can be fenced without a token");
    assert!(
        r.stdout.contains("hands out no fencing token") && r.stdout.contains("Fencing cannot help"),
        "{}",
        r.stdout
    );
}

#[test]
fn pausing_the_node_gives_unknown_outcomes_not_violations() {
    let r = run_line(
        "--nemesis pause-node --time-limit 6s --ttl 1s --pause 700ms --fault-interval 700ms --seed 4",
    );
    let history = r.history();
    let pauses: Vec<_> = history
        .iter()
        .filter(|op| op["process"] == "nemesis" && op["f"] == "start")
        .collect();
    assert!(!pauses.is_empty(), "no node was paused");
    assert!(pauses.iter().all(|p| p["value"]["targets"][0] == "n1"));
    let stops = history
        .iter()
        .filter(|op| op["process"] == "nemesis" && op["f"] == "stop")
        .count();
    assert_eq!(stops, pauses.len(), "every pause is resumed");
    let unknown = history
        .iter()
        .filter(|op| op["type"] == "info" && op["process"].is_u64())
        .count();
    assert!(
        unknown > 0,
        "a frozen server should make some requests time out"
    );
    // A frozen single server cannot grant the lock twice.
    assert_eq!(r.overlaps(), 0, "{}", r.stdout);
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
}

#[test]
fn the_readme_command_works_with_the_default_relative_store() {
    // `--store` defaults to `store` in the working directory, and redis-server changes its own
    // working directory before it opens its log there.
    let cwd = tempfile::tempdir().unwrap();
    let output = common::lockpick()
        .current_dir(cwd.path())
        .args(["run", "--lock", "redis", "--nemesis", "pause-holder"])
        .args(["--time-limit", "4s", "--ttl", "500ms"])
        .output()
        .unwrap();
    let r = common::finished(&cwd.path().join("store"), output);
    assert!(r.code == 0 || r.code == 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.dir.join("report.html").exists());
    assert!(r.dir.join("logs/redis-n1.log").exists());
}
