//! An overlap lost in a failover: the earlier grant came from one server, the later one from
//! another while the earlier lease was certainly live, and the leader nemeses' records prove
//! leadership moved from the one to the other in between. Told as such only when all of it is
//! proven; otherwise the overlap keeps its cause (here: granted under a live lease). Times are
//! milliseconds written as nanoseconds.

use crate::common;

use common::History;
use lockpick_checkers::overlap_cause::OverlapCause;
use lockpick_checkers::overlapping_holders::Overlap;
use lockpick_checkers::{check, check_reader, OpType, Process, Results, Validity, F};
use serde_json::{json, Value};

const X: &str = "10.0.0.1:6379";
const Y: &str = "10.0.0.2:6379";
const Z: &str = "10.0.0.3:6379";

fn ms(n: u64) -> u64 {
    n * 1_000_000
}

fn leader(node: &str, address: &str, term: u64) -> Value {
    json!({"node": node, "address": address, "term": term})
}

/// A leader fault's start and stop: `leader` on the start, `leader_after` and
/// `leadership_moved` on the stop, as the leader nemeses write them.
fn leader_fault(
    h: &mut History,
    id: u64,
    (start, stop): (u64, u64),
    before: Value,
    after: Value,
    moved: Value,
) {
    let fault = json!({"id": id, "fault": "kill", "targets": ["n1"], "nemesis": "kill-leader",
        "effective": true});
    let mut opened = fault.clone();
    opened["leader"] = before;
    let mut closed = fault;
    closed["leader_after"] = after;
    closed["leadership_moved"] = moved;
    let nemesis = Process::named("nemesis");
    h.push(start, nemesis.clone(), OpType::Info, F::Start, opened);
    h.push(stop, nemesis, OpType::Info, F::Stop, closed);
}

/// A granted acquire whose `ok` names the servers that granted it.
fn granted(h: &mut History, p: u64, acq: &str, (invoked, ok): (u64, u64), nodes: Value) {
    h.client(p, invoked, OpType::Invoke, F::Acquire, acq, None);
    let value = json!({"acquisition": acq, "token": null, "nodes": nodes,
        "lease": {"live_until": ok + ms(990), "expires_by": ok + ms(1010)}});
    h.push(ok, Process::Client(p), OpType::Ok, F::Acquire, value);
}

/// Client 0 is granted by `X` at 10 ms (lease certainly live until 1000 ms); `faults` adds the
/// leadership evidence; client 1 is granted by `b_nodes` at 210 ms (its attempt invoked at
/// 200 ms), and both release after.
fn failover_history(b_nodes: Value, faults: impl FnOnce(&mut History)) -> History {
    let mut h = History::with_setup("none", "kill-leader", Some(1000));
    granted(&mut h, 0, "0.1", (0, ms(10)), json!([X]));
    faults(&mut h);
    granted(&mut h, 1, "1.1", (ms(200), ms(210)), b_nodes);
    h.release(1, "1.1", ms(800), ms(801))
        .release(0, "0.1", ms(900), ms(901))
        .final_read_agreeing(ms(950));
    h
}

/// The one overlap, judged from the operations and again from their JSON lines: both ways
/// must agree.
fn only_overlap(h: &History) -> (Overlap, Results) {
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Invalid, "{:?}", r.unknown_reasons);
    let streamed = check_reader(h.text().as_bytes());
    assert_eq!(streamed.overlapping_holders, r.overlapping_holders);
    let o = r.overlapping_holders.as_ref().unwrap();
    assert_eq!(o.overlaps.len(), 1, "{:#?}", o.overlaps);
    (o.overlaps[0].clone(), r)
}

/// The move from n1 to n2 between the grants: opened at 50 ms, healed at 400 ms.
fn moved_from_x_to_y(h: &mut History) {
    let (before, after) = (leader("n1", X, 1), leader("n2", Y, 2));
    leader_fault(h, 1, (ms(50), ms(400)), before, after, json!(true));
}

#[test]
fn a_grant_by_the_new_leader_after_a_proven_failover_was_lost_in_the_failover() {
    let (o, r) = only_overlap(&failover_history(json!([Y]), moved_from_x_to_y));
    assert_eq!(o.cause, OverlapCause::LostInFailover, "{}", o.why);
    assert_eq!(o.cause.describe(), "the lock was lost in a failover");
    assert!(
        o.why.starts_with(
            "1.1 was granted by the new leader 10.0.0.2:6379 by 0.210 s while the lease of 0.1, \
             granted by 10.0.0.1:6379, was certainly live until 1.000 s: leadership moved"
        ),
        "{}",
        o.why
    );
    assert!(
        o.why.contains(
            "leadership moved from n1 (10.0.0.1:6379, term 1) to n2 (10.0.0.2:6379, term 2)"
        ),
        "{}",
        o.why
    );
    let counts = r.overlapping_holders.as_ref().unwrap();
    assert_eq!(
        (counts.granted_under_live_lease, counts.lost_in_failover),
        (0, 1)
    );
    let story = &r.stories[0];
    assert!(
        story.title.contains("(the lock was lost in a failover)"),
        "{}",
        story.title
    );
    let short = story.shortened();
    for words in [
        "certainly live until",
        "the kill of n1 hit the leader n1 (10.0.0.1:6379, term 1): leadership moved to n2",
        "client 1 was granted by the new leader 10.0.0.2:6379",
        "the cause: the lock was lost in a failover",
    ] {
        assert!(short.contains(words), "{words}: {short}");
    }
    // Told in the terminal's lines too.
    let lines: Vec<String> = r
        .checkers()
        .iter()
        .flat_map(|c| c.summary_lines(r.setup.as_ref()))
        .collect();
    assert!(
        lines.iter().any(|l| l.contains("1 lost in a failover")),
        "{lines:?}"
    );
    // Results read back as they were written.
    let back: Results = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    let back = back.overlapping_holders.unwrap();
    assert_eq!(
        (back.lost_in_failover, back.overlaps[0].cause),
        (1, o.cause)
    );
    assert_eq!(back.overlaps[0].first.granted_by(), Some(X));
}

#[test]
fn a_chain_of_moves_through_a_third_server_is_a_failover_too() {
    let h = failover_history(json!([Y]), |h| {
        let (x, z, y) = (leader("n1", X, 1), leader("n3", Z, 2), leader("n2", Y, 3));
        leader_fault(h, 1, (ms(50), ms(100)), x, z.clone(), json!(true));
        leader_fault(h, 2, (ms(120), ms(180)), z, y, json!(true));
    });
    let (o, r) = only_overlap(&h);
    assert_eq!(o.cause, OverlapCause::LostInFailover, "{}", o.why);
    let told = r.stories[0].one_line();
    assert!(told.contains("to n3 (10.0.0.3:6379, term 2)"), "{told}");
    assert!(
        told.contains("hit the leader n3 (10.0.0.3:6379, term 2): leadership moved to n2"),
        "{told}"
    );
}

/// Every way the proof falls short keeps the overlap's cause as the lease evidence gives it.
fn stays_granted_under_a_live_lease(h: &History) {
    let (o, r) = only_overlap(h);
    assert_eq!(o.cause, OverlapCause::GrantedUnderLiveLease, "{}", o.why);
    assert_eq!(r.overlapping_holders.as_ref().unwrap().lost_in_failover, 0);
    assert!(!r.stories[0].one_line().contains("failover"));
}

#[test]
fn a_second_grant_by_the_same_server_is_no_failover() {
    stays_granted_under_a_live_lease(&failover_history(json!([X]), moved_from_x_to_y));
}

#[test]
fn without_leadership_evidence_there_is_no_failover() {
    stays_granted_under_a_live_lease(&failover_history(json!([Y]), |_| {}));
    // A fault that names no leader (an older nemesis) proves nothing either.
    stays_granted_under_a_live_lease(&failover_history(json!([Y]), |h| {
        h.fault_with(
            ms(50),
            Some(ms(400)),
            json!({"id": 1, "fault": "kill", "targets": ["n1"]}),
        );
    }));
}

#[test]
fn leadership_that_moved_to_a_third_server_explains_nothing() {
    stays_granted_under_a_live_lease(&failover_history(json!([Y]), |h| {
        let (x, z) = (leader("n1", X, 1), leader("n3", Z, 2));
        leader_fault(h, 1, (ms(50), ms(400)), x, z, json!(true));
    }));
}

#[test]
fn leadership_that_did_not_move_or_whose_move_is_unknown_explains_nothing() {
    for moved in [json!(false), json!(null), json!("yes"), json!(1)] {
        stays_granted_under_a_live_lease(&failover_history(json!([Y]), |h| {
            let (x, y) = (leader("n1", X, 1), leader("n2", Y, 2));
            leader_fault(h, 1, (ms(50), ms(400)), x, y, moved.clone());
        }));
    }
}

#[test]
fn a_move_opened_after_the_later_attempt_began_explains_nothing() {
    stays_granted_under_a_live_lease(&failover_history(json!([Y]), |h| {
        let (x, y) = (leader("n1", X, 1), leader("n2", Y, 2));
        leader_fault(h, 1, (ms(205), ms(400)), x, y, json!(true));
    }));
}

/// A split brain: leadership had moved from n1 to n2 before client 0's grant, which the
/// deposed n1 still gave; n2 never had it, and granted client 1 under client 0's live lease.
#[test]
fn a_grant_by_a_deposed_leader_was_lost_in_the_failover_too() {
    let (o, r) = only_overlap(&failover_history(json!([Y]), |h| {
        let (x, y) = (leader("n1", X, 1), leader("n2", Y, 2));
        leader_fault(h, 1, (ms(5), ms(100)), x, y, json!(true));
    }));
    assert_eq!(o.cause, OverlapCause::LostInFailover, "{}", o.why);
    let counts = r.overlapping_holders.as_ref().unwrap();
    assert_eq!(
        (counts.granted_under_live_lease, counts.lost_in_failover),
        (0, 1)
    );
}

#[test]
fn malformed_leadership_fields_are_ignored_never_a_malformed_history() {
    let good = || leader("n2", Y, 2);
    let broken: Vec<(Value, Value)> = vec![
        (json!("n1"), good()),
        (json!({"node": "n1", "address": 6379}), good()),
        (json!({"node": "n1", "address": X, "term": "one"}), good()),
        (leader("n1", X, 1), json!({"node": "n2"})),
        (leader("n1", X, 1), json!([Y])),
        (
            json!({"node": {"deep": [1, 2, 3]}, "address": null}),
            json!(null),
        ),
    ];
    for (before, after) in broken {
        stays_granted_under_a_live_lease(&failover_history(json!([Y]), |h| {
            leader_fault(
                h,
                1,
                (ms(50), ms(400)),
                before.clone(),
                after.clone(),
                json!(true),
            );
        }));
    }
    // A grant's `nodes` of another shape, or naming several servers, names no one server.
    for nodes in [
        json!(Y),
        json!([1]),
        json!({"a": Y}),
        json!([Y, Z]),
        json!([""]),
    ] {
        stays_granted_under_a_live_lease(&failover_history(nodes, moved_from_x_to_y));
    }
}

#[test]
fn an_earlier_holder_that_outlived_its_lease_is_not_a_failover() {
    // Client 1's attempt begins at 1500 ms, after client 0's lease certainly ended at 1020 ms:
    // the failover did not break mutual exclusion, the lease ran out.
    let mut h = History::with_setup("none", "kill-leader", Some(1000));
    granted(&mut h, 0, "0.1", (0, ms(10)), json!([X]));
    moved_from_x_to_y(&mut h);
    granted(&mut h, 1, "1.1", (ms(1500), ms(1510)), json!([Y]));
    h.release(1, "1.1", ms(1800), ms(1801))
        .release(0, "0.1", ms(1900), ms(1901))
        .final_read_agreeing(ms(1950));
    let (o, _) = only_overlap(&h);
    assert_eq!(o.cause, OverlapCause::OutlivedLease, "{}", o.why);
}
