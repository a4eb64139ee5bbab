//! `--until decided`: a run ends at the first violation its history proves, heals, takes its
//! final read and is checked whole; its verdict is the one the full run gives (same lock,
//! nemesis and seed), and it ends well before the time limit.

use crate::common;

use common::run_line;

#[test]
fn a_decided_run_ends_at_its_first_violation_with_the_full_runs_verdict() {
    let knobs = "--lock redis --nemesis pause-holder --seed 67 --time-limit 10s --clients 3 \
                 --ttl 500ms --fault-duration 1s --fault-interval 500ms";
    let full = run_line(knobs);
    let decided = run_line(&format!("{knobs} --until decided"));
    assert_eq!(
        (full.code, decided.code),
        (1, 1),
        "{}\n{}",
        full.stdout,
        decided.stdout
    );
    assert_eq!(decided.valid(), full.valid());
    assert!(decided.overlaps() > 0 || decided.stale_writes() > 0);
    // The history says when and why it ended; the final read is there (run_line checks it
    // matches the history) and nothing makes the run unknown.
    let history = decided.history();
    let end = history.iter().find(|op| op["f"] == "run-end").unwrap();
    let at = end["value"]["decided_at_ns"]
        .as_u64()
        .expect("decided_at_ns");
    assert!(at < 9_000_000_000, "decided only at {at} ns");
    assert_eq!(end["value"]["crashed_clients"], serde_json::json!([]));
    assert!(history
        .iter()
        .any(|op| op["f"] == "final-read" && op["type"] == "ok"));
    assert_eq!(decided.results["unknown_reasons"], serde_json::json!([]));
    assert!(
        decided
            .stdout
            .contains("decided: the history proved a violation by"),
        "{}",
        decided.stdout
    );
    let full_end = full
        .history()
        .into_iter()
        .find(|op| op["f"] == "run-end")
        .unwrap();
    assert!(full_end["value"]["decided_at_ns"].is_null());
    let last = |h: &[serde_json::Value]| h.last().unwrap()["time"].as_u64().unwrap();
    assert!(last(&history) + 3_000_000_000 < last(&full.history()));
}
