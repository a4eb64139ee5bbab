//! Claims are claims: an exec program's lease report checked against the server's own count
//! (`server_lease` on its acquire `ok`). A report the server contradicts is told, never a
//! violation by itself, and proves no live lease: the overlap's cause comes from the server's
//! count. Times are milliseconds written as nanoseconds.

use crate::common;

use common::History;
use lockpick_checkers::overlap_cause::OverlapCause;
use lockpick_checkers::{check, OpType, Process, Results, Validity, F};
use serde_json::{json, Value};

fn ms(n: u64) -> u64 {
    n * 1_000_000
}

/// An exec lock's history: client 0 granted at 10 ms reporting a lease live until
/// `reported_ms`, the server asked at 11 ms (`server`: its `server_lease`, or none); client 1
/// invoked at 1500 ms, granted at 1510 ms, while client 0 still believed it held the lock.
fn overlap(reported_ms: u64, server: Option<Value>) -> Results {
    let mut h = History::with_setup("none", "none", None);
    h.ops[0].value["lock"] = json!("exec:redis:./client.py");
    let mut a = json!({"acquisition": "0.1", "token": null,
        "lease": {"live_until": ms(reported_ms), "expires_by": ms(reported_ms + 10)}});
    if let Some(server) = server {
        a["server_lease"] = server;
    }
    h.client(0, 0, OpType::Invoke, F::Acquire, "0.1", None)
        .push(ms(10), Process::Client(0), OpType::Ok, F::Acquire, a)
        .acquire(1, "1.1", ms(1500), ms(1510), None)
        .release(1, "1.1", ms(1600), ms(1601))
        .release(0, "0.1", ms(1700), ms(1701))
        .final_read_agreeing(ms(1800));
    check(&h.ops)
}

/// The server's count asked at 11 ms: `remaining` ms left (ended by then), or no expiry.
fn counted(remaining: Option<u64>) -> Value {
    json!({"asked_at": ms(11), "remaining_ms": remaining,
        "ended_by": remaining.map(|r| ms(11 + r))})
}

fn only_cause(r: &Results) -> (OverlapCause, String) {
    assert_eq!(
        r.valid,
        Validity::Invalid,
        "two holders at once stay a violation"
    );
    let o = &r.overlapping_holders.as_ref().unwrap().overlaps;
    assert_eq!(o.len(), 1, "{o:#?}");
    (o[0].cause, o[0].why.clone())
}

#[test]
fn a_report_ten_times_the_servers_count_proves_no_live_lease() {
    // Reported live for 10 s; the server's key had 999 ms left: it had ended by 1010 ms.
    let r = overlap(10_010, Some(counted(Some(999))));
    let (cause, why) = only_cause(&r);
    assert_eq!(cause, OverlapCause::OutlivedLease, "{why}");
    assert!(why.contains("by the lock server's own count"), "{why}");
    assert!(why.contains("which the server contradicts"), "{why}");
    let claims = r.lease_claims.as_ref().unwrap();
    assert_eq!((claims.checked, claims.contradicted), (1, 1));
    let note = claims.note().unwrap();
    assert!(
        note.contains("the client program reported lease bounds the server contradicts"),
        "{note}"
    );
    assert!(
        note.contains("client said live 9999 ms more, server said 999 ms left"),
        "{note}"
    );
    // Told, not a reason to doubt the run: no verdict rests on the reported bounds.
    assert!(r.unknown_reasons.is_empty(), "{:?}", r.unknown_reasons);
    let story = r.stories.iter().find(|s| s.kind == "overlap").unwrap();
    assert!(
        story.one_line().contains("which the server contradicts"),
        "{}",
        story.one_line()
    );
}

#[test]
fn without_the_servers_word_the_same_report_reads_as_a_live_lease() {
    // What the cross-check prevents: the report alone makes the grant one under a live lease.
    let r = overlap(10_010, None);
    let (cause, why) = only_cause(&r);
    assert_eq!(cause, OverlapCause::GrantedUnderLiveLease, "{why}");
    let claims = r.lease_claims.as_ref().unwrap();
    assert_eq!((claims.checked, claims.contradicted), (0, 0));
    assert_eq!(claims.note(), None);
}

#[test]
fn an_honest_report_agrees_and_the_tighter_bound_decides() {
    let r = overlap(1_010, Some(counted(Some(999))));
    let (cause, why) = only_cause(&r);
    assert_eq!(cause, OverlapCause::OutlivedLease, "{why}");
    assert!(!why.contains("contradicts"), "{why}");
    let claims = r.lease_claims.as_ref().unwrap();
    assert_eq!((claims.checked, claims.contradicted), (1, 0));
    assert_eq!(claims.note(), None);
}

#[test]
fn a_bounded_report_against_a_key_with_no_expiry_is_told_and_stays_the_programs_word() {
    let r = overlap(1_010, Some(counted(None)));
    let claims = r.lease_claims.as_ref().unwrap();
    assert_eq!(claims.contradicted, 1);
    assert!(
        claims.first[0].contains("server said the key has no expiry"),
        "{:?}",
        claims.first
    );
    let (cause, why) = only_cause(&r);
    assert_ne!(cause, OverlapCause::GrantedUnderLiveLease, "{why}");
    assert!(
        why.contains("the client program's report, which the server contradicts"),
        "{why}"
    );
}

#[test]
fn a_servers_count_out_of_range_is_malformed_not_a_verdict() {
    let huge = json!({"asked_at": ms(11), "remaining_ms": 1, "ended_by": 1u64 << 60});
    let r = overlap(1_010, Some(huge));
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.malformed.is_some(), "{:?}", r.unknown_reasons);
    let mut wrong = counted(Some(999));
    wrong["asked_at"] = json!("soon");
    assert!(overlap(1_010, Some(wrong)).malformed.is_some());
}

#[test]
fn a_count_given_only_as_its_bound_still_says_how_long() {
    let bound_only = json!({"asked_at": ms(11), "ended_by": ms(1_010)});
    let r = overlap(10_010, Some(bound_only));
    let claims = r.lease_claims.as_ref().unwrap();
    assert!(
        claims.first[0].contains("server said 999 ms left"),
        "{:?}",
        claims.first
    );
    let (cause, why) = only_cause(&r);
    assert_eq!(cause, OverlapCause::OutlivedLease, "{why}");
}

#[test]
fn a_renewal_the_server_contradicts_proves_no_live_lease_either() {
    // An honest grant, then a renewal at 500 ms claiming 10 s while the server counted 1 s.
    let mut h = History::with_setup("none", "none", None);
    h.ops[0].value["lock"] = json!("exec:redis:./client.py");
    let a = json!({"acquisition": "0.1", "token": null,
        "lease": {"live_until": ms(1_000), "expires_by": ms(1_010)},
        "server_lease": counted(Some(999))});
    let renew = json!({"acquisition": "0.1",
        "lease": {"live_until": ms(10_500), "expires_by": ms(10_510)},
        "server_lease": {"asked_at": ms(501), "remaining_ms": 999, "ended_by": ms(1_500)}});
    h.client(0, 0, OpType::Invoke, F::Acquire, "0.1", None)
        .push(ms(10), Process::Client(0), OpType::Ok, F::Acquire, a)
        .push(ms(501), Process::Client(0), OpType::Ok, F::Renew, renew)
        .acquire(1, "1.1", ms(2000), ms(2010), None)
        .release(1, "1.1", ms(2100), ms(2101))
        .release(0, "0.1", ms(2200), ms(2201))
        .final_read_agreeing(ms(2300));
    let r = check(&h.ops);
    let (cause, why) = only_cause(&r);
    assert_eq!(cause, OverlapCause::OutlivedLease, "{why}");
    assert!(why.contains("its key had 999 ms left at 0.501 s"), "{why}");
    let claims = r.lease_claims.as_ref().unwrap();
    assert_eq!((claims.checked, claims.contradicted), (1, 1));
    // The same renewal without the server's count: the report reads as a live lease.
    let mut h2 = h;
    let i = h2.ops.iter().position(|op| op.f == F::Renew).unwrap();
    h2.ops[i]
        .value
        .as_object_mut()
        .unwrap()
        .remove("server_lease");
    let (cause, why) = only_cause(&check(&h2.ops));
    assert_eq!(cause, OverlapCause::GrantedUnderLiveLease, "{why}");
}
