//! Tokens as a promise, the tie-break of the stale-access order, and stale reads told apart
//! from stale writes.

use crate::common;

use common::History;
use lockpick_checkers::checks::Checker;
use lockpick_checkers::{check, OpType, Validity, F};

#[test]
fn two_acquisitions_with_the_same_token_is_token_reused() {
    // client 0 [--]        token 5
    // client 1      [--]   token 5 again: a fence cannot tell them apart
    let mut h = History::with_setup("revision", "none", None);
    h.acquire(0, "0.1", 10, 11, Some(5))
        .release(0, "0.1", 12, 13)
        .acquire(1, "1.1", 14, 15, Some(5))
        .release(1, "1.1", 16, 17)
        .final_read_agreeing(20);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Invalid);
    let t = r.token_violations.unwrap();
    assert_eq!((t.checked, t.reused, t.went_backwards), (true, 1, 0));
    assert_eq!(t.violations[0].earlier.acquisition, "0.1");
    assert_eq!(t.violations[0].later.acquisition, "1.1");
    let story = &r.stories[0];
    assert_eq!(story.kind, "token-reused");
    assert!(story.title.contains("token reused"), "{}", story.title);
}

#[test]
fn a_token_that_goes_down_in_certain_grant_order_went_backwards() {
    // client 0 [--]        token 9, ok at 11
    // client 1      [--]   invoked at 14, after that ok, yet token 7
    let mut h = History::with_setup("revision", "none", None);
    h.acquire(0, "0.1", 10, 11, Some(9))
        .release(0, "0.1", 12, 13)
        .acquire(1, "1.1", 14, 15, Some(7))
        .release(1, "1.1", 16, 17)
        .final_read_agreeing(20);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Invalid);
    let t = r.token_violations.unwrap();
    assert_eq!((t.reused, t.went_backwards), (0, 1));
    assert_eq!(r.stories[0].kind, "token-went-backwards");
    assert!(r.stories[0].one_line().contains("token went backwards"));
}

#[test]
fn a_lower_token_in_an_uncertain_grant_order_is_no_violation() {
    // client 1 invoked at 5, before client 0's grant was known at 11: either may have been
    // granted first, so its lower token proves nothing.
    let mut h = History::with_setup("revision", "none", None);
    h.acquire(0, "0.1", 10, 11, Some(9))
        .release(0, "0.1", 12, 13)
        .acquire(1, "1.1", 5, 15, Some(7))
        .release(1, "1.1", 16, 17)
        .final_read_agreeing(20);
    let r = check(&h.ops);
    assert_eq!(r.token_violations.unwrap().violations, vec![]);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.unknown_reasons);
}

#[test]
fn a_queued_grant_after_bound_makes_the_order_certain() {
    // client 1 invoked at 5, but its `granted_after` (12) is after client 0's ok at 11.
    let mut h = History::with_setup("revision", "none", None);
    h.acquire(0, "0.1", 10, 11, Some(9))
        .release(0, "0.1", 12, 13)
        .client(1, 5, OpType::Invoke, F::Acquire, "1.1", None)
        .push(
            15,
            lockpick_checkers::Process::Client(1),
            OpType::Ok,
            F::Acquire,
            serde_json::json!({"acquisition": "1.1", "token": 7, "granted_after": 12}),
        )
        .release(1, "1.1", 16, 17)
        .final_read_agreeing(20);
    assert_eq!(check(&h.ops).token_violations.unwrap().went_backwards, 1);
}

#[test]
fn a_lock_without_tokens_makes_no_token_promise() {
    let mut h = History::with_setup("none", "none", None);
    h.acquire(0, "0.1", 10, 11, Some(5))
        .release(0, "0.1", 12, 13)
        .acquire(1, "1.1", 14, 15, Some(5))
        .release(1, "1.1", 16, 17)
        .final_read_agreeing(20);
    let r = check(&h.ops);
    assert!(!r.token_violations.unwrap().checked);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.unknown_reasons);
}

#[test]
fn when_tokens_tie_the_stale_write_order_falls_back_to_real_time() {
    // client 0 [~~~~~~~~~~~w]   token 5, writes last
    // client 1      [w]         token 5 too, granted after client 0's ok
    let mut h = History::with_setup("revision", "none", None);
    h.acquire(0, "0.1", 0, 10, Some(5))
        .acquire(1, "1.1", 20, 25, Some(5))
        .resource(30, 1, "1.1", Some(5), "write", true)
        .release(1, "1.1", 35, 36)
        .resource(40, 0, "0.1", Some(5), "write", true)
        .release(0, "0.1", 45, 46)
        .final_read_agreeing(50);
    let r = check(&h.ops);
    let stale = r.stale_accesses.unwrap();
    assert_eq!(stale.stale_writes, 1);
    assert_eq!(stale.violations[0].holder.acquisition, "0.1");
    assert_eq!(r.token_violations.unwrap().reused, 1);
}

#[test]
fn a_stale_read_alone_is_counted_and_told_but_not_invalid() {
    // client 0 [-r-]               its read, held in a proxy, lands at 20
    // client 1        [w]          granted at 16, wrote at 17
    // resource          w  r       the stale read is accepted after client 1's write
    let mut h = History::with_setup("none", "none", None);
    h.acquire(0, "0.1", 0, 10, None)
        .client(0, 12, OpType::Invoke, F::Read, "0.1", None)
        .client(0, 13, OpType::Info, F::Read, "0.1", None)
        .release(0, "0.1", 14, 15)
        .acquire(1, "1.1", 15, 16, None)
        .resource(17, 1, "1.1", None, "write", true)
        .release(1, "1.1", 18, 19)
        .resource(20, 0, "0.1", None, "read", true)
        .final_read_agreeing(30);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.unknown_reasons);
    assert_eq!(r.stale_reads_accepted, 1);
    let stale = r.stale_accesses.unwrap();
    assert_eq!((stale.stale_writes, stale.stale_reads), (0, 1));
    assert_eq!(stale.valid, Validity::Valid);
    assert_eq!(r.stories.len(), 1);
    assert_eq!(r.stories[0].kind, "stale-read");
}

#[test]
fn one_client_handed_its_own_token_again_broke_no_promise() {
    // client 0 [--] token 5, then again token 5 (its library re-took the lock with the same
    // session); client 1 [--] token 6 after both.
    let mut h = History::with_setup("revision", "none", None);
    h.acquire(0, "0.1", 10, 11, Some(5))
        .release(0, "0.1", 12, 13)
        .acquire(0, "0.2", 14, 15, Some(5))
        .release(0, "0.2", 16, 17)
        .acquire(1, "1.1", 18, 19, Some(6))
        .release(1, "1.1", 20, 21)
        .final_read_agreeing(30);
    let r = check(&h.ops);
    let t = r.token_violations.unwrap();
    assert_eq!((t.reused, t.went_backwards), (0, 0));
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.unknown_reasons);
}

#[test]
fn a_clients_own_old_token_after_a_higher_one_went_backwards_and_says_why() {
    // client 0 [--] token 5; client 1 [--] token 6; client 0 [--] token 5 again: not a reuse
    // (no other client had 5), but a lower token after a higher one.
    let mut h = History::with_setup("revision", "none", None);
    h.acquire(0, "0.1", 10, 11, Some(5))
        .release(0, "0.1", 12, 13)
        .acquire(1, "1.1", 14, 15, Some(6))
        .release(1, "1.1", 16, 17)
        .acquire(0, "0.2", 18, 19, Some(5))
        .release(0, "0.2", 20, 21)
        .final_read_agreeing(30);
    let r = check(&h.ops);
    let t = r.token_violations.as_ref().unwrap();
    assert_eq!((t.reused, t.went_backwards, t.own_token_again), (0, 1, 1));
    let line = t.summary_lines(None).join("\n");
    assert!(
        line.contains(
            "0 reused, 1 went backwards (1 of them a client handed its own earlier token again"
        ),
        "{line}"
    );
    assert!(
        line.contains("reused counts only a token two clients share"),
        "{line}"
    );
}
