//! Holds of zero length: a client whose acquire `ok` is its last event (it died right after
//! learning of its grant, or the history was cut there) held the lock for an instant. The rule of
//! a mutex model decides them: holds A and B of different clients overlap iff
//! `A.start < B.end && B.start < A.end`. Checked against Porcupine's mutex model over the same
//! shapes (issue 29). Timelines as in `hand_drawn.rs`; `|` is a grant that was its client's last
//! event.

use crate::common;

use common::History;
use lockpick_checkers::{check, OpType, Validity, F};
use serde_json::json;

/// A complete history: setup, the given holds, the final read.
fn kill_client_history() -> History {
    History::with_setup("none", "kill-client", None)
}

fn overlaps(h: &History) -> Vec<(String, String, u64, u64)> {
    let r = check(&h.ops);
    assert!(r.malformed.is_none(), "{:?}", r.malformed);
    r.overlapping_holders
        .unwrap()
        .overlaps
        .iter()
        .map(|o| {
            (
                o.first.acquisition.clone(),
                o.second.acquisition.clone(),
                o.from,
                o.to,
            )
        })
        .collect()
}

#[test]
fn a_zero_length_hold_strictly_inside_another_is_an_overlap() {
    // client 0  [-------]      2..5
    // client 1      |          granted at 4, killed at once
    let mut h = kill_client_history();
    h.acquire(0, "0.1", 1, 2, None)
        .acquire(1, "1.1", 3, 4, None)
        .fault_with(
            4,
            Some(5),
            json!({"id": 1, "fault": "kill", "targets": ["client 1"]}),
        )
        .release(0, "0.1", 5, 6)
        .final_read_agreeing(10);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Invalid, "{:?}", r.unknown_reasons);
    let found = r.overlapping_holders.as_ref().unwrap();
    assert_eq!(found.overlaps.len(), 1);
    let o = &found.overlaps[0];
    assert_eq!((o.from, o.to, o.length()), (4, 4, 0));
    assert_eq!(
        (o.first.acquisition.as_str(), o.second.acquisition.as_str()),
        ("0.1", "1.1")
    );
    // Its story tells it as an instant, with its cause.
    let story = r.stories.iter().find(|s| s.kind == "overlap").unwrap();
    let violation = story.steps.iter().find(|s| s.violation).unwrap();
    assert!(
        violation.text.contains("at the same instant"),
        "{}",
        violation.text
    );
    assert!(
        story
            .steps
            .iter()
            .any(|s| s.text.starts_with("the cause: ")),
        "{story:#?}"
    );
}

#[test]
fn a_zero_length_hold_at_the_start_of_another_only_touches() {
    // client 0  [-------]      2..5
    // client 1  |              granted at 2, its last event: 2 < 2 is false, no overlap
    let mut h = kill_client_history();
    h.acquire(1, "1.1", 0, 2, None)
        .acquire(0, "0.1", 1, 2, None)
        .release(0, "0.1", 5, 6)
        .final_read_agreeing(10);
    assert_eq!(overlaps(&h), vec![]);
}

#[test]
fn a_zero_length_hold_at_the_end_of_another_only_touches() {
    // client 0  [-------]      2..5 (release invoked at 5)
    // client 1          |      granted at 5, its last event
    let mut h = kill_client_history();
    h.acquire(0, "0.1", 1, 2, None)
        .acquire(1, "1.1", 3, 5, None)
        .release(0, "0.1", 5, 6)
        .final_read_agreeing(10);
    assert_eq!(overlaps(&h), vec![]);
}

#[test]
fn two_zero_length_holds_at_one_instant_only_touch() {
    // client 0  |    granted at 4, its last event
    // client 1  |    granted at 4, its last event: neither starts before the other ends
    let mut h = kill_client_history();
    h.acquire(0, "0.1", 1, 4, None)
        .acquire(1, "1.1", 2, 4, None)
        .final_read_agreeing(10);
    assert_eq!(overlaps(&h), vec![]);
}

#[test]
fn a_killed_clients_last_event_being_its_grant_inside_a_hold_is_an_overlap() {
    // client 0  [--w-------]     2..8, writes at 3
    // client 1      |            killed by the nemesis right after its grant at 4
    // client 2              [w]  later, cleanly
    let mut h = kill_client_history();
    h.acquire(0, "0.1", 1, 2, None)
        .resource(3, 0, "0.1", None, "write", true)
        .acquire(1, "1.1", 2, 4, None)
        .fault_with(
            4,
            Some(5),
            json!({"id": 1, "fault": "kill", "targets": ["client 1"]}),
        )
        .release(0, "0.1", 8, 9)
        .acquire(2, "2.1", 8, 10, None)
        .resource(11, 2, "2.1", None, "write", true)
        .release(2, "2.1", 12, 13)
        .final_read_agreeing(20);
    assert_eq!(
        overlaps(&h),
        vec![("0.1".to_string(), "1.1".to_string(), 4, 4)]
    );
    assert_eq!(check(&h.ops).valid, Validity::Invalid);
}

#[test]
fn a_release_invoked_as_the_next_grant_completes_still_only_touches() {
    // client 0  [-----]      release invoked at 5
    // client 1        [---]  granted at 5
    let mut h = History::with_setup("none", "none", None);
    h.acquire(0, "0.1", 1, 2, None)
        .acquire(1, "1.1", 3, 5, None)
        .release(0, "0.1", 5, 6)
        .client(1, 7, OpType::Invoke, F::Release, "1.1", None)
        .client(1, 8, OpType::Ok, F::Release, "1.1", None)
        .final_read_agreeing(10);
    assert_eq!(overlaps(&h), vec![]);
    assert_eq!(check(&h.ops).valid, Validity::Valid);
}
