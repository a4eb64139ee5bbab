//! An acquisition granted twice makes the history malformed at the second grant's line, the
//! earliest line at fault, whatever follows: more lines, a broken line, a lookup of that
//! acquisition, thousands of holds (the index enters its holds when asked, not at each grant).

use crate::common;

use common::History;
use lockpick_checkers::{check, check_reader, Validity};

fn malformed_line(h: &History, tail: &str) -> (usize, String) {
    let mut text = h.text();
    text.push_str(tail);
    let streamed = check_reader(text.as_bytes());
    assert_eq!(streamed.valid, Validity::Unknown);
    let m = streamed.malformed.unwrap();
    // The operations read up to the line at fault, that one included.
    assert_eq!(streamed.operations, m.line);
    if tail.is_empty() {
        // The same history in memory says the same.
        assert_eq!(check(&h.ops).malformed.as_ref(), Some(&m));
    }
    (m.line, m.reason)
}

#[test]
fn the_second_grant_is_the_line_at_fault_when_the_history_goes_on() {
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .release(0, "0.1", 20, 21)
        .acquire(1, "0.1", 30, 40, None)
        .release(1, "0.1", 50, 51)
        .acquire(2, "2.1", 60, 70, None);
    let (line, reason) = malformed_line(&h, "");
    assert_eq!(line, 6, "{reason}");
    assert_eq!(reason, "acquisition 0.1 granted twice");
}

#[test]
fn the_second_grant_comes_before_a_later_broken_line() {
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .acquire(1, "0.1", 30, 40, None);
    assert_eq!(
        malformed_line(&h, "{\"index\": 4, \"time\": 50, \"proc\n").0,
        4
    );
    // And before a later line that makes no sense (a completion never invoked).
    h.client(
        3,
        60,
        lockpick_checkers::OpType::Ok,
        lockpick_checkers::F::Release,
        "3.1",
        None,
    );
    assert_eq!(malformed_line(&h, "").0, 4);
}

#[test]
fn a_lookup_of_an_acquisition_granted_twice_finds_the_second_grant_at_fault() {
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .acquire(1, "0.1", 20, 30, None)
        // Client 0 no longer holds it (it acquired again), so its release is looked up.
        .acquire(0, "0.2", 40, 50, None)
        .release(2, "0.1", 60, 61);
    assert_eq!(malformed_line(&h, "").0, 4);
}

#[test]
fn among_thousands_of_holds_the_first_second_grant_is_at_fault() {
    let mut h = History::default();
    for i in 0..6_000u64 {
        let p = i % 3;
        let acq = match i {
            4_500 => "1.1000".to_string(),
            5_000 => "1.7".to_string(),
            _ => format!("{p}.{i}"),
        };
        let t = i * 100;
        h.acquire(p, &acq, t, t + 10, None)
            .release(p, &acq, t + 20, t + 30);
    }
    // Hold 4500's grant: four lines a hold, the ok the second.
    let (line, reason) = malformed_line(&h, "");
    assert_eq!(line, 4 * 4_500 + 2, "{reason}");
    assert_eq!(reason, "acquisition 1.1000 granted twice");
}
