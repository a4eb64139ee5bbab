//! A jammed lock, from hand-drawn histories. Times are milliseconds written as ns × 10^6 so
//! that the default bounds (3 TTLs, at least 3 s; grace 5 s + 2 TTLs) apply as in a real run.
//! `[` acquire ok, `]` release invoke, `x` a refused acquire, `?` an acquire of unknown outcome.

use crate::common;

use common::History;
use lockpick_checkers::{check, OpType, Validity, F};
use serde_json::json;

const MS: u64 = 1_000_000;

fn setup() -> History {
    History::with_setup("none", "kill-client", None)
}

/// Refused attempts by `p`, one every 200 ms from `from` to `to` (ms).
fn refusals(h: &mut History, p: u64, from: u64, to: u64) {
    let mut t = from;
    let mut n = 0;
    while t + 100 <= to {
        let acq = format!("{p}.r{n}");
        h.client(p, t * MS, OpType::Invoke, F::Acquire, &acq, None)
            .client(p, (t + 100) * MS, OpType::Fail, F::Acquire, &acq, None);
        t += 200;
        n += 1;
    }
}

/// Client 0 takes the lock at 100 ms with a lease it says ends 1 s later, and dies (its last
/// event) at 300 ms.
fn a_holder_that_dies(h: &mut History) {
    h.acquire_leased(
        0,
        "0.1",
        (0, 100 * MS),
        (1_000 * MS, Some(1_100 * MS)),
        None,
    )
    .fault_with(
        300 * MS,
        Some(400 * MS),
        json!({"id": 1, "fault": "kill", "targets": ["client 0"]}),
    );
}

#[test]
fn a_lock_refused_to_everyone_long_after_the_dead_holders_lease_ended_is_jammed() {
    // client 0  [--- killed; its lease ends by 1.1 s
    // client 1          x x x x x x x x x x x ... until 10 s
    // client 2           x x x x x x x x x x ...
    let mut h = setup();
    a_holder_that_dies(&mut h);
    refusals(&mut h, 1, 1_200, 10_000);
    refusals(&mut h, 2, 1_300, 10_000);
    h.final_read_agreeing(11_000 * MS);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Invalid, "{:?}", r.unknown_reasons);
    let live = r.liveness.as_ref().unwrap();
    assert_eq!(live.jams.len(), 1, "{live:#?}");
    let jam = &live.jams[0];
    assert_eq!(jam.last_holder.acquisition, "0.1");
    assert_eq!(jam.free_from, 1_100 * MS);
    assert_eq!(jam.refused_clients, vec![1, 2]);
    assert!(jam.failed_attempts > 40, "{}", jam.failed_attempts);
    let story = r.stories.iter().find(|s| s.kind == "jam").unwrap();
    let text = story.one_line();
    assert!(text.contains("client 0 acquired the lock"), "{text}");
    assert!(text.contains("kill of client 0"), "{text}");
    assert!(
        text.contains("by its latest lease record: lockpick's own client's record"),
        "{text}"
    );
    assert!(text.contains("never granted again"), "{text}");
    assert!(story.steps.iter().any(|s| s.violation));
}

#[test]
fn a_lock_granted_again_after_the_dead_holders_lease_is_not_jammed() {
    // client 0  [--- killed; lease ends by 1.1 s
    // client 1         x x x [----]     refused until the lease ends, then granted
    let mut h = setup();
    a_holder_that_dies(&mut h);
    refusals(&mut h, 1, 400, 1_100);
    h.acquire(1, "1.1", 1_200 * MS, 1_300 * MS, None)
        .release(1, "1.1", 1_500 * MS, 1_600 * MS)
        .acquire(2, "2.1", 1_700 * MS, 1_800 * MS, None)
        .release(2, "2.1", 1_900 * MS, 2_000 * MS)
        .final_read_agreeing(3_000 * MS);
    let r = check(&h.ops);
    assert_eq!(r.liveness.unwrap().jams, vec![]);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.unknown_reasons);
}

#[test]
fn refusals_shorter_than_the_bound_are_no_jam() {
    // Refused from 1.1 s to 3.9 s (under the 3 s bound), then granted.
    let mut h = setup();
    a_holder_that_dies(&mut h);
    refusals(&mut h, 1, 1_200, 3_900);
    h.acquire(1, "1.1", 4_000 * MS, 4_050 * MS, None)
        .release(1, "1.1", 4_100 * MS, 4_200 * MS)
        .final_read_agreeing(5_000 * MS);
    assert_eq!(check(&h.ops).liveness.unwrap().jams, vec![]);
}

#[test]
fn refusals_while_a_server_is_paused_and_soon_after_are_expected_not_a_jam() {
    // A server paused from 1 s to 6 s; refusals until 12 s are inside the pause plus its
    // grace (5 s + 2 TTLs), so nothing is flagged.
    let mut h = setup();
    a_holder_that_dies(&mut h);
    h.fault_with(
        1_000 * MS,
        Some(6_000 * MS),
        json!({"id": 2, "fault": "pause", "targets": ["n1"]}),
    );
    refusals(&mut h, 1, 1_200, 12_000);
    h.final_read_agreeing(13_000 * MS);
    let r = check(&h.ops);
    let live = r.liveness.unwrap();
    assert_eq!(live.jams, vec![]);
    // Told, not flagged: refused from 1.1 s to the last refusal's answer at 11.9 s.
    assert_eq!(live.excused_wait, (11_900 - 1_100) * MS);
}

#[test]
fn refusals_long_after_a_server_fault_healed_are_a_jam() {
    // The same pause, but refusals go on until 30 s: far past the grace.
    let mut h = setup();
    a_holder_that_dies(&mut h);
    h.fault_with(
        1_000 * MS,
        Some(6_000 * MS),
        json!({"id": 2, "fault": "pause", "targets": ["n1"]}),
    );
    refusals(&mut h, 1, 1_200, 30_000);
    h.final_read_agreeing(31_000 * MS);
    let jams = check(&h.ops).liveness.unwrap().jams;
    assert_eq!(jams.len(), 1);
    assert!(jams[0].unexcused > 15_000 * MS, "{}", jams[0].unexcused);
}

#[test]
fn a_holder_whose_lease_end_is_unknown_is_never_called_jammed() {
    // client 0 takes the lock without recording any lease bound, and dies: nothing proves the
    // lock was ever free again, so the refusals prove no jam.
    let mut h = setup();
    h.acquire(0, "0.1", 0, 100 * MS, None).fault_with(
        300 * MS,
        Some(400 * MS),
        json!({"id": 1, "fault": "kill", "targets": ["client 0"]}),
    );
    refusals(&mut h, 1, 1_200, 20_000);
    h.final_read_agreeing(21_000 * MS);
    assert_eq!(check(&h.ops).liveness.unwrap().jams, vec![]);
}

#[test]
fn an_acquire_of_unknown_outcome_may_hold_the_lock_for_a_lease() {
    // client 2's acquire at 1.2 s timed out: it may have taken the lock, for at most the longest
    // lease the run recorded (1 s) after its completion, so refusals until 4 s prove nothing;
    // refusals until 20 s still prove a jam after that.
    let mut h = setup();
    a_holder_that_dies(&mut h);
    h.client(2, 1_200 * MS, OpType::Invoke, F::Acquire, "2.1", None)
        .client(2, 1_700 * MS, OpType::Info, F::Acquire, "2.1", None);
    refusals(&mut h, 1, 1_200, 4_000);
    h.final_read_agreeing(5_000 * MS);
    assert_eq!(check(&h.ops).liveness.unwrap().jams, vec![]);

    let mut h = setup();
    a_holder_that_dies(&mut h);
    h.client(2, 1_200 * MS, OpType::Invoke, F::Acquire, "2.1", None)
        .client(2, 1_700 * MS, OpType::Info, F::Acquire, "2.1", None);
    refusals(&mut h, 1, 1_200, 20_000);
    h.final_read_agreeing(21_000 * MS);
    let jams = check(&h.ops).liveness.unwrap().jams;
    assert_eq!(jams.len(), 1);
    assert!(jams[0].unexcused < 18_300 * MS, "{}", jams[0].unexcused);
}

#[test]
fn a_busy_lock_handed_from_client_to_client_is_not_jammed() {
    // Long refusals while others hold the lock in turn are contention, not a jam.
    let mut h = setup();
    let mut t = 0;
    for n in 0..40u64 {
        let p = n % 2;
        let acq = format!("{p}.{n}");
        h.acquire_leased(
            p,
            &acq,
            (t * MS, (t + 10) * MS),
            ((t + 1_000) * MS, Some((t + 1_010) * MS)),
            None,
        );
        h.client(
            2,
            (t + 20) * MS,
            OpType::Invoke,
            F::Acquire,
            &format!("2.{n}"),
            None,
        )
        .client(
            2,
            (t + 30) * MS,
            OpType::Fail,
            F::Acquire,
            &format!("2.{n}"),
            None,
        );
        h.release(p, &acq, (t + 400) * MS, (t + 410) * MS);
        t += 500;
    }
    h.final_read_agreeing((t + 100) * MS);
    assert_eq!(check(&h.ops).liveness.unwrap().jams, vec![]);
}

#[test]
fn refused_to_everyone_at_the_end_for_less_than_the_bound_is_not_proven_live() {
    // Two clients held it in turn; then client 1 died holding it, and the run ended 2 s into the
    // refusals: no jam is proven, and the lock is not called live either.
    let mut h = setup();
    h.acquire_leased(
        0,
        "0.1",
        (0, 100 * MS),
        (1_000 * MS, Some(1_100 * MS)),
        None,
    )
    .release(0, "0.1", 200 * MS, 210 * MS)
    .acquire_leased(
        1,
        "1.1",
        (250 * MS, 300 * MS),
        (1_200 * MS, Some(1_300 * MS)),
        None,
    )
    .fault_with(
        400 * MS,
        Some(500 * MS),
        json!({"id": 1, "fault": "kill", "targets": ["client 1"]}),
    );
    refusals(&mut h, 2, 1_400, 3_400);
    h.final_read_agreeing(3_500 * MS);
    let r = check(&h.ops);
    let live = r.liveness.as_ref().unwrap();
    assert_eq!(live.jams, vec![]);
    assert!(live.unproven.is_some());
    assert_eq!(r.valid, Validity::Unknown);
    assert!(
        r.unknown_reasons
            .iter()
            .any(|u| u.contains("refused to everyone")),
        "{:?}",
        r.unknown_reasons
    );
}

#[test]
fn the_setup_lines_jam_bound_replaces_the_default() {
    // Refused for 8.8 s after the lease ended: a jam by the default bound (3 s), none under a
    // bound of 10 s, where it is told as not proven instead (the run ended refusing).
    let history = |bound: Option<u64>| {
        let mut h = setup();
        h.ops[0].value["jam_bound_ms"] = json!(bound);
        a_holder_that_dies(&mut h);
        refusals(&mut h, 1, 1_200, 10_000);
        h.final_read_agreeing(11_000 * MS);
        check(&h.ops)
    };
    assert_eq!(history(None).liveness.unwrap().jams.len(), 1);
    let r = history(Some(10_000));
    let live = r.liveness.unwrap();
    assert_eq!((live.bound_ms, live.jams.len()), (10_000, 0));
    assert!(live.unproven.is_some());
}

/// Client 0 holds a lease with no known end and releases it at 200 ms, completing with
/// `release` (`ok`, or `fail` with `kind`); clients 1 and 2 are refused from 400 ms to 10 s.
fn refused_after_a_release(kind: OpType, fail_kind: Option<&str>) -> lockpick_checkers::Results {
    let mut h = setup();
    h.acquire_leased(0, "0.1", (0, 100 * MS), (1_000 * MS, None), None)
        .client(0, 200 * MS, OpType::Invoke, F::Release, "0.1", None);
    let mut done = json!({"acquisition": "0.1", "token": null});
    if let Some(fail_kind) = fail_kind {
        done["kind"] = json!(fail_kind);
        done["error"] = json!("the program said so");
    }
    h.push(
        210 * MS,
        lockpick_checkers::Process::Client(0),
        kind,
        F::Release,
        done,
    );
    refusals(&mut h, 1, 400, 10_000);
    refusals(&mut h, 2, 500, 10_000);
    h.final_read_agreeing(11_000 * MS);
    check(&h.ops)
}

#[test]
fn a_failed_release_of_any_kind_is_not_read_as_the_lease_ended() {
    // client 0  [-] release ok / fail (lease of no known end)
    // client 1       x x x x x x x ... until 10 s
    // A release `ok` lets the lock go: the refusals after it are a jam. A `fail`, whatever its
    // kind, proves nothing of the lease: "not-held" (nothing was sent) least of all.
    let released = refused_after_a_release(OpType::Ok, None);
    assert_eq!(released.liveness.as_ref().unwrap().jams.len(), 1);
    assert_eq!(released.valid, Validity::Invalid);
    assert_eq!(released.release_failures.total(), 0);
    for kind in [Some("not-ours"), Some("not-held"), Some("refused"), None] {
        let r = refused_after_a_release(OpType::Fail, kind);
        assert_eq!(r.liveness.as_ref().unwrap().jams, vec![], "{kind:?}");
        assert_ne!(r.valid, Validity::Invalid, "{kind:?}");
        let failures = r.release_failures;
        assert_eq!(failures.total(), 1, "{kind:?}");
        let counted = match kind {
            Some("not-ours") => failures.not_ours,
            Some("not-held") => failures.not_held,
            Some(_) => failures.refused,
            None => failures.unsaid,
        };
        assert_eq!(counted, 1, "{kind:?}: {failures:?}");
    }
    // A kind no client gives is a malformed line, not a guess.
    let r = refused_after_a_release(OpType::Fail, Some("expired"));
    assert!(r.malformed.is_some(), "{:?}", r.unknown_reasons);
}
