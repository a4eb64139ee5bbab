//! Overlapping holders told apart by cause: the earlier holder outlived its lease, the later
//! grant came under a live lease, or the history cannot decide (and says why). Times here are
//! in milliseconds written as nanoseconds (`ms(3)`), since lease silence is given in ms.

use crate::common;

use common::History;
use lockpick_checkers::overlap_cause::OverlapCause;
use lockpick_checkers::overlapping_holders::Overlap;
use lockpick_checkers::{check, OpType, Process, Results, Validity, F};
use serde_json::json;

fn ms(n: u64) -> u64 {
    n * 1_000_000
}

/// Client 0 holds 0.1 from `ms(10)` to its release at `ms(900)`; client 1 is granted 1.1
/// (invoked at `b_invoked`, ok at `b_ok`) and releases at `ms(800)`.
fn overlap_of(mut h: History, lease: (u64, Option<u64>), b: (u64, u64)) -> History {
    h.acquire_leased(0, "0.1", (0, ms(10)), lease, None)
        .acquire(1, "1.1", b.0, b.1, None)
        .release(1, "1.1", ms(800), ms(801))
        .release(0, "0.1", ms(900), ms(901))
        .final_read_agreeing(ms(950));
    h
}

fn only_overlap(r: &Results) -> &Overlap {
    assert_eq!(r.valid, Validity::Invalid);
    let o = r.overlapping_holders.as_ref().unwrap();
    assert_eq!(o.overlaps.len(), 1, "{:#?}", o.overlaps);
    &o.overlaps[0]
}

fn pause_of_client_0(effective: bool) -> serde_json::Value {
    json!({"id": 1, "fault": "pause", "targets": ["client 0"], "effective": effective})
}

#[test]
fn a_holder_whose_recorded_lease_ended_before_the_next_grant_outlived_it() {
    // Redis-like: live until 100 ms, certainly gone by 110 ms; client 1 invoked at 150 ms.
    let h = History::with_setup("none", "none", None);
    let h = overlap_of(h, (ms(100), Some(ms(110))), (ms(150), ms(160)));
    let r = check(&h.ops);
    let o = only_overlap(&r);
    assert_eq!(o.cause, OverlapCause::OutlivedLease, "{}", o.why);
    let counts = r.overlapping_holders.as_ref().unwrap();
    assert_eq!(
        (
            counts.outlived_lease,
            counts.granted_under_live_lease,
            counts.undecidable
        ),
        (1, 0, 0)
    );
    let story = &r.stories[0];
    assert!(
        story.title.contains("the holder outlived its lease"),
        "{}",
        story.title
    );
    assert!(
        story
            .one_line()
            .contains("lease had certainly ended by 0.110 s"),
        "{}",
        story.one_line()
    );
    // Shortened for a comment, it keeps its first step, the cause and the violation.
    let short = story.shortened();
    let kept: Vec<&str> = short.split(" → ").collect();
    assert!(kept[0].starts_with("client 0 acquired the lock"), "{short}");
    assert!(
        short.contains("lease had certainly ended by 0.110 s"),
        "{short}"
    );
    assert!(
        short.contains("!! client 0 and client 1 both held the lock"),
        "{short}"
    );
    assert!(
        short.contains("the cause: the holder outlived its lease"),
        "{short}"
    );
    assert!(
        short.contains("more)"),
        "steps between are counted: {short}"
    );
    assert!(short.len() < story.one_line().len(), "{short}");
}

#[test]
fn a_grant_before_the_holders_lease_could_end_is_granted_under_a_live_lease() {
    // Client 0's lease is certainly live until 100 ms; client 1, invoked after client 0's ok,
    // was granted by 50 ms.
    let h = History::with_setup("none", "none", None);
    let h = overlap_of(h, (ms(100), Some(ms(110))), (ms(40), ms(50)));
    let r = check(&h.ops);
    let o = only_overlap(&r);
    assert_eq!(o.cause, OverlapCause::GrantedUnderLiveLease, "{}", o.why);
    assert_eq!(
        r.overlapping_holders
            .as_ref()
            .unwrap()
            .granted_under_live_lease,
        1
    );
    assert!(r.stories[0].title.contains("granted under a live lease"));
    assert!(r.stories[0]
        .one_line()
        .contains("certainly live until 0.100 s"));
}

#[test]
fn a_renewal_moves_the_lease_and_with_it_the_cause() {
    // Without its renewal client 0's lease ended by 130 ms, before client 1's invoke at 140 ms;
    // the renewal at 90 ms kept it certainly live until 190 ms, past client 1's grant.
    let plain = History::with_setup("none", "none", None);
    let plain = overlap_of(plain, (ms(100), Some(ms(130))), (ms(140), ms(150)));
    assert_eq!(
        only_overlap(&check(&plain.ops)).cause,
        OverlapCause::OutlivedLease
    );

    let mut renewed = History::with_setup("none", "none", None);
    renewed
        .acquire_leased(0, "0.1", (0, ms(10)), (ms(100), Some(ms(130))), None)
        .renew(0, "0.1", ms(90), ms(190), Some(ms(220)))
        .acquire(1, "1.1", ms(140), ms(150), None)
        .release(1, "1.1", ms(800), ms(801))
        .release(0, "0.1", ms(900), ms(901))
        .final_read_agreeing(ms(950));
    let r = check(&renewed.ops);
    let o = only_overlap(&r);
    assert_eq!(o.cause, OverlapCause::GrantedUnderLiveLease, "{}", o.why);
    assert_eq!(o.first.renewals, 1);
}

#[test]
fn a_lease_without_an_upper_bound_is_undecidable() {
    // ZooKeeper-like: the library pings on its own, so nothing bounds the lease.
    let h = History::with_setup("none", "none", None);
    let h = overlap_of(h, (ms(100), None), (ms(150), ms(160)));
    let o = only_overlap(&check(&h.ops)).clone();
    assert_eq!(o.cause, OverlapCause::Undecidable);
    assert_eq!(o.why, "no upper bound on the lease of 0.1");
}

#[test]
fn a_holder_frozen_past_its_lease_silence_outlived_its_lease() {
    // Unbounded lease, but client 0 was frozen from 20 ms until after client 1's invoke at
    // 2000 ms, and a lease outlives its holder's last run by at most 1500 ms. (The fault line
    // comes first in the file: lines need not arrive in time order.)
    let mut h = History::with_setup("none", "pause-holder", Some(1500));
    h.fault_with(ms(20), Some(ms(2050)), pause_of_client_0(true));
    let h = overlap_of_late(h);
    let o = only_overlap(&check(&h.ops)).clone();
    assert_eq!(o.cause, OverlapCause::OutlivedLease, "{}", o.why);
    assert!(
        o.why.contains("client 0 was frozen from 0.020 s"),
        "{}",
        o.why
    );
}

/// A client program whose library renews in the background and reports each renewal: acquired
/// at 10 ms (gone by 1010 ms unless renewed), renewed as reported at 700 ms (`expires_by`
/// given, or none for an unknown outcome), frozen from 750 ms to 3000 ms; client 1 invoked at
/// `b_invoked`. No lease silence: only the reports bound the lease.
fn reported_renewal_then_frozen(renewal_ends: Option<u64>, b_invoked: u64) -> Overlap {
    let mut h = History::with_setup("none", "pause-holder", None);
    h.acquire_leased(0, "0.1", (0, ms(10)), (ms(1000), Some(ms(1010))), None)
        .renew(0, "0.1", ms(700), ms(1000), renewal_ends)
        .fault_with(ms(750), Some(ms(3000)), pause_of_client_0(true))
        .acquire(1, "1.1", b_invoked, b_invoked + ms(5), None)
        .release(1, "1.1", ms(2900), ms(2901))
        .release(0, "0.1", ms(3100), ms(3101))
        .final_read_agreeing(ms(3200));
    only_overlap(&check(&h.ops)).clone()
}

#[test]
fn a_frozen_holder_outlived_the_lease_its_last_reported_renewal_bounds() {
    // The renewal at 700 ms moved the end to 1700 ms: a grant at 1750 ms came after it.
    let o = reported_renewal_then_frozen(Some(ms(1700)), ms(1750));
    assert_eq!(o.cause, OverlapCause::OutlivedLease, "{}", o.why);
    assert!(o.why.contains("ended by 1.700 s"), "{}", o.why);
    // A grant at 1500 ms is past the acquire's bound but not the renewal's: not decidable.
    let o = reported_renewal_then_frozen(Some(ms(1700)), ms(1500));
    assert_eq!(o.cause, OverlapCause::Undecidable, "{}", o.why);
    // A renewal of unknown outcome leaves the lease unbounded, however long the freeze.
    let o = reported_renewal_then_frozen(None, ms(2500));
    assert_eq!(o.cause, OverlapCause::Undecidable, "{}", o.why);
    assert!(
        o.why.starts_with(
            "no upper bound on the lease of 0.1: a renewal of it was reported with an unknown \
             outcome at 0.700 s"
        ),
        "{}",
        o.why
    );
}

/// Like `overlap_of` with an unbounded lease, the next grant invoked at 2000 ms.
fn overlap_of_late(mut h: History) -> History {
    h.acquire_leased(0, "0.1", (0, ms(10)), (ms(1000), None), None)
        .acquire(1, "1.1", ms(2000), ms(2010), None)
        .release(1, "1.1", ms(2100), ms(2101))
        .release(0, "0.1", ms(2200), ms(2201))
        .final_read_agreeing(ms(2300));
    h
}

#[test]
fn a_freeze_that_ended_before_the_next_grant_proves_nothing() {
    let mut h = History::with_setup("none", "pause-holder", Some(1500));
    h.fault_with(ms(20), Some(ms(500)), pause_of_client_0(true));
    let o = only_overlap(&check(&overlap_of_late(h).ops)).clone();
    assert_eq!(o.cause, OverlapCause::Undecidable, "{}", o.why);
}

#[test]
fn a_freeze_not_seen_to_take_effect_proves_nothing() {
    let mut h = History::with_setup("none", "pause-holder", Some(1500));
    h.fault_with(ms(20), None, pause_of_client_0(false));
    let o = only_overlap(&check(&overlap_of_late(h).ops)).clone();
    assert_eq!(o.cause, OverlapCause::Undecidable, "{}", o.why);
}

#[test]
fn a_hold_without_a_recorded_lease_is_undecidable() {
    let mut h = History::with_setup("none", "none", None);
    h.acquire(0, "0.1", 0, ms(10), None)
        .acquire(1, "1.1", ms(150), ms(160), None)
        .release(1, "1.1", ms(800), ms(801))
        .release(0, "0.1", ms(900), ms(901));
    let o = only_overlap(&check(&h.ops)).clone();
    assert_eq!(o.cause, OverlapCause::Undecidable);
    assert_eq!(o.why, "no lease was recorded for acquisition 0.1");
}

#[test]
fn an_uncertain_grant_order_is_not_called_a_grant_under_a_live_lease() {
    // Client 1 was invoked (at 5 ms) before client 0's ok (at 10 ms) and recorded no lease: it
    // may have been granted first, its lease gone before client 0's grant.
    let h = History::with_setup("none", "none", None);
    let h = overlap_of(h, (ms(100), Some(ms(110))), (ms(5), ms(50)));
    let o = only_overlap(&check(&h.ops)).clone();
    assert_eq!(o.cause, OverlapCause::Undecidable);
    assert!(
        o.why.contains("grant order of 0.1 and 1.1 is uncertain"),
        "{}",
        o.why
    );
}

#[test]
fn a_renewal_of_an_acquisition_never_granted_makes_the_history_unknown() {
    let mut h = History::with_setup("none", "none", None);
    h.acquire(0, "0.1", 0, 10, None)
        .renew(0, "0.7", 20, 30, None);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(r.malformed.unwrap().line, 4);
}

/// A history whose setup names `lock`.
fn with_lock(lock: &str) -> History {
    let mut h = History::with_setup("none", "none", None);
    h.ops[0].value["lock"] = json!(lock);
    h
}

#[test]
fn a_grant_under_a_live_lease_blames_the_service_for_our_clients_and_either_for_a_program() {
    // Client 1 granted at 50 ms while client 0's lease was certainly live until 500 ms.
    for (lock, blamed) in [
        ("redis", "the lock service broke mutual exclusion"),
        (
            "exec:redis:./unsafe_release.py",
            "the lock (service or client) broke mutual exclusion",
        ),
    ] {
        let h = overlap_of(with_lock(lock), (ms(500), Some(ms(510))), (ms(40), ms(50)));
        let r = check(&h.ops);
        let o = only_overlap(&r);
        assert_eq!(o.cause, OverlapCause::GrantedUnderLiveLease, "{}", o.why);
        assert!(o.why.contains(blamed), "{lock}: {}", o.why);
        assert!(
            o.why
                .contains("a second grant while the first lease was live"),
            "{}",
            o.why
        );
    }
}

#[test]
fn a_lease_bound_says_whose_word_it_is() {
    for (lock, word) in [
        ("redis", "lockpick's own client's record"),
        ("exec:redis:./client.py", "the client program's report"),
    ] {
        let h = overlap_of(
            with_lock(lock),
            (ms(100), Some(ms(110))),
            (ms(150), ms(160)),
        );
        let r = check(&h.ops);
        let o = only_overlap(&r);
        assert_eq!(o.cause, OverlapCause::OutlivedLease, "{}", o.why);
        assert!(o.why.contains(word), "{lock}: {}", o.why);
    }
}

/// Client 0 holds token 5 (lease live until 100 ms, no upper bound), client 1 gets token 7 at
/// `b_ok`, its grant saying (or not) that every lower token's entry was gone.
fn queued_overlap(b_ok: u64, lower_tokens_gone: bool) -> Results {
    let mut h = History::with_setup("revision", "none", None);
    let lease = json!({"live_until": ms(100), "expires_by": null});
    let a = json!({"acquisition": "0.1", "token": 5, "lease": lease});
    let b = json!({"acquisition": "1.1", "token": 7, "lower_tokens_gone": lower_tokens_gone,
        "lease": {"live_until": b_ok + ms(1000), "expires_by": null}});
    h.client(0, 0, OpType::Invoke, F::Acquire, "0.1", None)
        .push(ms(10), Process::Client(0), OpType::Ok, F::Acquire, a)
        .client(1, ms(5), OpType::Invoke, F::Acquire, "1.1", None)
        .push(b_ok, Process::Client(1), OpType::Ok, F::Acquire, b)
        .release(1, "1.1", ms(800), ms(801))
        .release(0, "0.1", ms(900), ms(901))
        .final_read_agreeing(ms(950));
    check(&h.ops)
}

#[test]
fn a_grant_the_service_made_once_every_lower_token_was_gone_outlived_the_earlier_lease() {
    // Without the service's word, a lease with no upper bound and a waiter queued since 5 ms
    // leave the cause open.
    let r = queued_overlap(ms(300), false);
    assert_eq!(only_overlap(&r).cause, OverlapCause::Undecidable);
    let r = queued_overlap(ms(300), true);
    let o = only_overlap(&r);
    assert_eq!(o.cause, OverlapCause::OutlivedLease, "{}", o.why);
    assert!(o.why.contains("token 5"), "{}", o.why);
    // Granted while the earlier lease was certainly live by its own protocol: the service
    // dropped a live lease's entry.
    let r = queued_overlap(ms(50), true);
    let o = only_overlap(&r);
    assert_eq!(o.cause, OverlapCause::GrantedUnderLiveLease, "{}", o.why);
}

#[test]
fn a_failed_release_is_told_in_the_story_and_changes_no_cause() {
    // As above, but client 0's release completes `fail`: the story says so and of which kind;
    // the cause is the lease record's, as with a release `ok`.
    for (kind, words) in [
        (Some("not-ours"), "the lock was no longer ours"),
        (Some("not-held"), "nothing was held, nothing sent"),
        (None, "no kind given"),
    ] {
        let mut h = History::with_setup("none", "none", None);
        h.acquire_leased(0, "0.1", (0, ms(10)), (ms(100), Some(ms(110))), None)
            .acquire(1, "1.1", ms(150), ms(160), None)
            .release(1, "1.1", ms(800), ms(801))
            .client(0, ms(900), OpType::Invoke, F::Release, "0.1", None);
        let mut failed = json!({"acquisition": "0.1", "token": null, "error": "no"});
        if let Some(kind) = kind {
            failed["kind"] = json!(kind);
        }
        h.push(
            ms(901),
            Process::Client(0),
            OpType::Fail,
            F::Release,
            failed,
        )
        .final_read_agreeing(ms(950));
        let r = check(&h.ops);
        assert_eq!(only_overlap(&r).cause, OverlapCause::OutlivedLease);
        let told =
            format!("client 0 released the lock at 0.900 s, and the release failed ({words})");
        let story = r.stories[0].one_line();
        assert!(story.contains(&told), "{story}");
    }
}
