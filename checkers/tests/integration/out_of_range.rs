//! Numbers no real run can hold make a history malformed, never a verdict: a final read that
//! claims u64::MAX applied accesses once made a history VALID, and one acquire time at 2^63
//! made a valid history INVALID with a story that contradicted itself.

use crate::common;

use common::History;
use lockpick_checkers::{check, check_reader, Validity};

/// Two serial holders, a fault that took effect and a final read that agrees: VALID.
fn valid() -> History {
    let mut h = History::with_setup("none", "none", None);
    h.acquire(0, "0.1", 10, 11, None)
        .resource(12, 0, "0.1", None, "write", true)
        .release(0, "0.1", 13, 14)
        .acquire(1, "1.1", 15, 16, None)
        .resource(17, 1, "1.1", None, "write", true)
        .release(1, "1.1", 18, 19)
        .final_read_agreeing(30);
    h
}

/// Checks `h`, changed by `change`, both in memory and from its text: unknown, malformed at
/// `line`, for a reason that says `why`.
fn malformed_at(change: impl Fn(&mut History), line: usize, why: &str) {
    let mut h = valid();
    change(&mut h);
    for r in [check(&h.ops), check_reader(h.text().as_bytes())] {
        assert_eq!(r.valid, Validity::Unknown, "{:?}", r.unknown_reasons);
        let malformed = r.malformed.expect("malformed");
        assert_eq!(malformed.line, line, "{malformed}");
        assert!(malformed.reason.contains(why), "{malformed}");
    }
}

#[test]
fn the_unchanged_history_is_valid() {
    let h = valid();
    assert_eq!(check(&h.ops).valid, Validity::Valid);
    assert_eq!(check_reader(h.text().as_bytes()).valid, Validity::Valid);
}

#[test]
fn a_final_read_of_u64_max_applied_accesses_is_malformed() {
    let final_read = 12; // index 11
    malformed_at(
        |h| h.ops[11].value["applied"] = u64::MAX.into(),
        final_read,
        "applied 18446744073709551615 is out of range",
    );
}

#[test]
fn a_time_at_or_beyond_2_to_the_63_is_malformed() {
    for time in [u64::MAX, 1 << 63, (1 << 53) + 1] {
        // Client 1's acquire ok, line 8.
        malformed_at(|h| h.ops[7].time = time, 8, "out of range");
    }
}

#[test]
fn a_client_time_that_goes_back_is_malformed() {
    // Client 1's acquire ok far ahead of its release invoke.
    malformed_at(|h| h.ops[7].time = 1 << 40, 10, "time goes back");
    // A completion before its invoke.
    malformed_at(|h| h.ops[7].time = 1, 8, "time goes back");
}

#[test]
fn a_sequence_number_or_lease_out_of_range_is_malformed() {
    malformed_at(|h| h.ops[3].value["seq"] = u64::MAX.into(), 4, "seq");
    malformed_at(
        |h| h.ops[2].value["lease"] = serde_json::json!({"live_until": u64::MAX}),
        3,
        "live_until",
    );
    malformed_at(
        |h| h.ops[2].value["granted_after"] = (1u64 << 60).into(),
        3,
        "granted_after",
    );
}
