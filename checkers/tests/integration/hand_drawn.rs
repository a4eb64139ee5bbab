//! Small hand-drawn histories with known verdicts, one rule at a time. Times are in
//! milliseconds-as-nanoseconds (the checkers only compare them). In the timelines, `[` is an
//! acquire ok, `]` a release invoke, `w`/`r` an access the resource accepted, `x` one it
//! rejected, `~~~` a fault window, `?` an unknown outcome.

use crate::common;

use common::History;
use lockpick_checkers::{check, read_history, OpType, Validity, F};

#[test]
fn serial_holds_are_valid() {
    // client 0  [--w--]
    // client 1          [--w--]
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .resource(15, 0, "0.1", None, "write", true)
        .release(0, "0.1", 20, 22)
        .acquire(1, "1.1", 5, 25, None)
        .resource(30, 1, "1.1", None, "write", true)
        .release(1, "1.1", 40, 42)
        .final_read_agreeing(50);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Valid, "{r:#?}");
    assert_eq!(r.overlapping_holders.unwrap().holds, 2);
}

#[test]
fn a_frozen_holder_overlaps_the_next_holder() {
    // client 0  [~~~~~~~~~~~~~~~~~~~]      frozen from 12 to 55, releases at 60
    // client 1          [-----]            acquires at 30 after the lease expired
    //                   ^^^^^^^ overlap 30..45
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .fault(1, 12, 55, "client 0")
        .acquire(1, "1.1", 28, 30, None)
        .release(1, "1.1", 45, 46)
        .release(0, "0.1", 60, 61);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Invalid);
    let overlaps = r.overlapping_holders.unwrap().overlaps;
    assert_eq!(overlaps.len(), 1);
    let o = &overlaps[0];
    assert_eq!(
        (o.first.acquisition.as_str(), o.second.acquisition.as_str()),
        ("0.1", "1.1")
    );
    assert_eq!((o.from, o.to, o.length()), (30, 45, 15));
    assert_eq!(o.faults, vec!["pause of client 0".to_string()]);
}

#[test]
fn a_holder_that_never_releases_holds_until_its_last_event() {
    // client 0  [---r------- (crashed after its read at 50)
    // client 1        [----]
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .client(0, 50, OpType::Invoke, F::Read, "0.1", None)
        .acquire(1, "1.1", 20, 40, None)
        .release(1, "1.1", 70, 71);
    let r = check(&h.ops);
    let o = &r.overlapping_holders.as_ref().unwrap().overlaps;
    assert_eq!(o.len(), 1);
    assert_eq!((o[0].from, o[0].to), (40, 50));
    assert_eq!(r.incomplete, vec![2], "the read never completed");
}

#[test]
fn an_acquire_with_an_unknown_outcome_is_not_a_hold() {
    // client 0  ?(acquire timed out)
    // client 1     [-----]
    let mut h = History::default();
    h.client(0, 0, OpType::Invoke, F::Acquire, "0.1", None)
        .client(0, 20, OpType::Info, F::Acquire, "0.1", None)
        .acquire(1, "1.1", 5, 10, None)
        .release(1, "1.1", 50, 51)
        .acquire(0, "0.2", 52, 53, None)
        .release(0, "0.2", 60, 61)
        .final_read_agreeing(70);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.unknown_reasons);
    assert_eq!(r.overlapping_holders.unwrap().holds, 2);
}

#[test]
fn a_client_does_not_overlap_itself() {
    // client 0  [---]?[---]   the first release's outcome is unknown; its next hold starts later
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .client(0, 20, OpType::Invoke, F::Release, "0.1", None)
        .client(0, 30, OpType::Info, F::Release, "0.1", None)
        .acquire(0, "0.2", 31, 32, None)
        .release(0, "0.2", 40, 41)
        .acquire(1, "1.1", 42, 43, None)
        .release(1, "1.1", 50, 51)
        .final_read_agreeing(60);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.unknown_reasons);
}

#[test]
fn a_stale_write_without_tokens_is_found_by_real_time() {
    // client 0  [~~~~~~~~~~~~~~~~~~w]    frozen, then writes at 60
    // client 1        [--w--]            granted after client 0's grant, writes at 35
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .fault(1, 12, 55, "client 0")
        .acquire(1, "1.1", 25, 30, None)
        .resource(35, 1, "1.1", None, "write", true)
        .release(1, "1.1", 40, 41)
        .resource(60, 0, "0.1", None, "write", true)
        .release(0, "0.1", 62, 63);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Invalid);
    let stale = r.stale_accesses.unwrap();
    assert_eq!(
        (stale.stale_writes, stale.stale_reads, stale.rejected),
        (1, 0, 0)
    );
    let v = &stale.violations[0];
    assert_eq!(v.holder.acquisition, "0.1");
    assert_eq!(v.newer_holder.acquisition, "1.1");
    assert_eq!(v.faults, vec!["pause of client 0".to_string()]);
}

#[test]
fn a_fenced_resource_rejecting_the_lower_token_is_valid_for_stale_writes() {
    // client 0  [~~~~~~~~~~~~~~~~~~x]    token 33, rejected at 60
    // client 1        [--w--]            token 34
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, Some(33))
        .acquire(1, "1.1", 25, 30, Some(34))
        .resource(35, 1, "1.1", Some(34), "write", true)
        .release(1, "1.1", 40, 41)
        .resource(60, 0, "0.1", Some(33), "write", false)
        .release(0, "0.1", 62, 63);
    let r = check(&h.ops);
    let stale = r.stale_accesses.unwrap();
    assert_eq!(stale.valid, Validity::Valid);
    assert_eq!(stale.rejected, 1);
    // The holds still overlapped: fencing protects the resource, not the lock.
    assert_eq!(r.overlapping_holders.unwrap().valid, Validity::Invalid);
}

#[test]
fn tokens_decide_the_order_even_when_times_cannot() {
    // client 1 invoked (at 5) before client 0's grant was known (at 10): real time cannot order
    // them, but token 34 > 33 can.
    // client 0   [--------r]   token 33, read accepted at 60
    // client 1     [--w]       token 34, write accepted at 35
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, Some(33))
        .acquire(1, "1.1", 5, 30, Some(34))
        .resource(35, 1, "1.1", Some(34), "write", true)
        .release(1, "1.1", 40, 41)
        .resource(60, 0, "0.1", Some(33), "read", true)
        .release(0, "0.1", 62, 63);
    let stale = check(&h.ops).stale_accesses.unwrap();
    assert_eq!((stale.stale_writes, stale.stale_reads), (0, 1));
}

#[test]
fn an_uncertain_grant_order_is_not_called_stale() {
    // client 0  [-----------w]   invoked at 0, ok at 10
    // client 1   [--w]           invoked at 5: its grant may have come first, so no stale write
    //                            can be proven, though the holds plainly overlap
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .acquire(1, "1.1", 5, 12, None)
        .resource(20, 1, "1.1", None, "write", true)
        .release(1, "1.1", 25, 26)
        .resource(30, 0, "0.1", None, "write", true)
        .release(0, "0.1", 35, 36);
    let r = check(&h.ops);
    assert_eq!(r.stale_accesses.unwrap().valid, Validity::Valid);
    assert_eq!(r.overlapping_holders.unwrap().valid, Validity::Invalid);
}

#[test]
fn an_access_from_an_acquisition_never_granted_makes_the_history_unknown() {
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .resource(15, 7, "7.1", None, "write", true);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(r.malformed.unwrap().line, 3);
}

#[test]
fn a_completion_without_an_invoke_makes_the_history_unknown() {
    let mut h = History::default();
    h.client(0, 10, OpType::Ok, F::Acquire, "0.1", None);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(r.malformed.unwrap().line, 1);
}

#[test]
fn a_broken_line_in_a_file_is_unknown_never_invalid() {
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .acquire(1, "1.1", 20, 30, None);
    let mut text: String = h.ops.iter().map(|op| op.to_json_line() + "\n").collect();
    text.push_str("{\"index\": 4, \"time\": 40, \"proc");
    let r = lockpick_checkers::check_reader(text.as_bytes());
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(r.malformed.unwrap().line, 5);
    assert!(read_history(text.as_bytes()).is_err());
}

#[test]
fn a_final_read_that_matches_the_history_keeps_it_valid() {
    // client 0  [--w--]            the resource applied 2 accesses (value 0); the final read
    // client 1          [--w--]    agrees
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .resource(15, 0, "0.1", None, "write", true)
        .release(0, "0.1", 20, 22)
        .acquire(1, "1.1", 23, 24, None)
        .resource(25, 1, "1.1", None, "write", true)
        .release(1, "1.1", 26, 27)
        .final_read(30, 0, 2);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.unknown_reasons);
    assert_eq!(r.final_read.unwrap().recorded, 2);
}

#[test]
fn a_final_read_showing_unrecorded_accesses_makes_the_history_unknown_not_invalid() {
    // The resource says it applied 2 accesses; the history holds 1: a record was lost.
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .resource(15, 0, "0.1", None, "write", true)
        .release(0, "0.1", 20, 22)
        .final_read(30, 0, 2);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    let f = r.final_read.unwrap();
    assert_eq!((f.applied, f.recorded), (2, 1));
}

#[test]
fn an_access_landing_after_the_final_read_is_not_a_gap() {
    // A write held in a delay proxy lands after the final read: its number is past `applied`.
    let mut h = History::default();
    h.acquire(0, "0.1", 0, 10, None)
        .resource(15, 0, "0.1", None, "write", true)
        .release(0, "0.1", 20, 22)
        .final_read(30, 0, 1)
        .resource(40, 0, "0.1", None, "write", true);
    assert_eq!(check(&h.ops).final_read.unwrap().valid, Validity::Valid);
}
