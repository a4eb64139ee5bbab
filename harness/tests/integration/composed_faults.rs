//! Faults that overlap on one target compose by a defined rule, and the evidence recorded at
//! each change matches the state the target is really in: pauses and kills of one server stack
//! (a server restarted under an open pause comes back frozen, as the kernel reports), and clock
//! shifts on one server add up (each change read back from the server's own clock).

use crate::common;

use common::run_line;
use serde_json::Value;

/// The nemesis records of a run, as (time, f, value).
fn faults(history: &[Value], fault: &str) -> Vec<(u64, String, Value)> {
    history
        .iter()
        .filter(|op| op["process"] == "nemesis" && op["value"]["fault"] == fault)
        .map(|op| {
            (
                op["time"].as_u64().unwrap(),
                op["f"].as_str().unwrap().to_string(),
                op["value"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_server_restarted_under_an_open_pause_comes_back_frozen() {
    // One Redis server: every pause and every kill hits n1, and with faults of 1.5 s every
    // 0.5-1.5 s they overlap.
    let mut overlapped = 0;
    for seed in [71, 72, 73] {
        let r = run_line(&format!(
            "--lock redis --nemesis pause-node,kill-node --fault-duration 1500ms \
             --fault-interval 500ms --time-limit 10s --seed {seed}"
        ));
        assert_ne!(r.code, 255, "{}\n{}", r.stdout, r.stderr);
        let history = r.history();
        let pauses = faults(&history, "pause");
        // The windows in which a pause of n1 was open, by its start and stop records.
        let mut open_pauses = Vec::new();
        for (time, f, value) in &pauses {
            if f == "start" {
                let stop = pauses
                    .iter()
                    .find(|(_, g, v)| g == "stop" && v["id"] == value["id"])
                    .map(|(t, _, _)| *t)
                    .unwrap_or(u64::MAX);
                open_pauses.push((*time, stop));
            } else {
                // The pause that ended left the server running, as /proc says.
                if value["resumed"] == true {
                    if let Some(state) = value["proc_state"].as_str() {
                        assert_ne!(state, "T", "a resumed server is still stopped: {value}");
                    }
                }
            }
        }
        for (time, f, value) in faults(&history, "kill") {
            if f != "stop" {
                continue;
            }
            let under_pause = open_pauses.iter().any(|(a, b)| *a < time && time < *b);
            assert_eq!(
                value["frozen"], under_pause,
                "seed {seed}: restart at {time} ns, pauses {open_pauses:?}: {value}"
            );
            let state = value["proc_state"].as_str().unwrap_or("?");
            if under_pause {
                overlapped += 1;
                assert_eq!(state, "T", "the restarted server is not stopped: {value}");
            } else {
                assert_ne!(
                    state, "T",
                    "a restart outside any pause is stopped: {value}"
                );
            }
        }
    }
    assert!(
        overlapped > 0,
        "no restart fell inside a pause in three seeds"
    );
}

#[test]
fn clock_shifts_on_one_server_add_up_and_are_read_back_at_each_change() {
    let r = run_line(
        "--lock redis --nemesis clock-forward,clock-backward --clock-jump 3s \
         --fault-duration 2s --fault-interval 500ms --time-limit 10s --seed 74",
    );
    assert_ne!(r.code, 255, "{}\n{}", r.stdout, r.stderr);
    let history = r.history();
    let mut changes = 0;
    let mut stacked = 0;
    for fault in ["clock-forward", "clock-backward"] {
        for (_, _, value) in faults(&history, fault) {
            let expected = value["expected_offset_ms"].as_i64().unwrap();
            let measured = value["measured_offset_ms"].as_i64().unwrap();
            // Within 10 % of the change or 50 ms: a jump of 3 s gives 300 ms.
            assert!((measured - expected).abs() <= 300, "{value}");
            assert_eq!(value["effective"], true, "{value}");
            changes += 1;
            if expected == 0 && value["offset_ms"] != 0 {
                stacked += 1;
            }
        }
    }
    assert!(changes >= 4, "only {changes} clock changes");
    assert!(
        stacked > 0,
        "forward and backward never overlapped: the sum was never checked"
    );
}
