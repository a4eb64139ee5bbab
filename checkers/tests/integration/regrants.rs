//! A renewal sent after its lease had certainly ended is a grant of its own: when it takes the
//! lock while another client's lease is live, that renewal, not the other client's legitimate
//! grant, is the grant that broke mutual exclusion. The shape of the bug lockpick found in a
//! client whose extend re-`SET`s the key without checking whose it is (and in one whose extend
//! is a blind `PEXPIRE`): the holder, frozen past its lease, wakes and "renews" at 2.965 s,
//! taking the key back from the client granted at 1.505 s.

use crate::common;

use common::History;
use lockpick_checkers::checks::Checker;
use lockpick_checkers::overlap_cause::OverlapCause;
use lockpick_checkers::{check, OpType, Process, Results, Validity, F};
use serde_json::json;

fn ms(n: u64) -> u64 {
    n * 1_000_000
}

/// A renewal line with the moment its request was sent.
fn renew_sent(h: &mut History, p: u64, acq: &str, (sent, at): (u64, u64), lease: (u64, u64)) {
    let value = json!({"acquisition": acq, "sent": sent,
        "lease": {"live_until": lease.0, "expires_by": lease.1}});
    h.push(at, Process::Client(p), OpType::Ok, F::Renew, value);
}

/// Client 0 granted at 0.460 s, its lease certainly ended by 1.462 s (frozen meanwhile); client
/// 1 granted at 1.505 s and renewing; client 0 wakes and renews at `renewal_sent`.
fn stolen_back(renewal_sent: u64) -> Results {
    check(&stolen_back_history(renewal_sent).ops)
}

fn lockpick_model_of(h: &History) -> lockpick_checkers::model::Model {
    lockpick_checkers::model::build(&h.ops).unwrap()
}

fn stolen_back_history(renewal_sent: u64) -> History {
    let mut h = History::with_setup("none", "pause-holder", Some(1000));
    h.acquire_leased(
        0,
        "0.1",
        (ms(450), ms(460)),
        (ms(1450), Some(ms(1462))),
        None,
    )
    .fault(1, ms(470), ms(2900), "client 0")
    .acquire_leased(
        1,
        "1.1",
        (ms(1500), ms(1505)),
        (ms(2500), Some(ms(2510))),
        None,
    );
    renew_sent(&mut h, 1, "1.1", (ms(1990), ms(1995)), (ms(2990), ms(3000)));
    renew_sent(
        &mut h,
        0,
        "0.1",
        (renewal_sent, renewal_sent + ms(5)),
        (renewal_sent + ms(998), renewal_sent + ms(1010)),
    );
    h.release(1, "1.1", ms(3100), ms(3101))
        .release(0, "0.1", ms(3200), ms(3201))
        .final_read_agreeing(ms(3300));
    h
}

#[test]
fn a_renewal_sent_after_its_lease_ended_is_the_grant_that_broke_mutual_exclusion() {
    let r = stolen_back(ms(2965));
    assert_eq!(r.valid, Validity::Invalid);
    let o = r.overlapping_holders.as_ref().unwrap();
    assert_eq!(o.overlaps.len(), 1, "{:#?}", o.overlaps);
    assert_eq!(o.granted_under_live_lease, 1);
    let overlap = &o.overlaps[0];
    assert_eq!(
        overlap.cause,
        OverlapCause::GrantedUnderLiveLease,
        "{}",
        overlap.why
    );
    let regrant = overlap.regrant.expect("the renewal is named");
    assert_eq!((regrant.sent, regrant.after_end), (ms(2965), ms(1462)));
    assert!(
        overlap.why.contains("renewal of 0.1 sent at 2.965 s")
            && overlap.why.contains("had certainly ended (by 1.462 s)")
            && overlap.why.contains("certainly live until 2.990 s"),
        "{}",
        overlap.why
    );
    // Client 1's grant is not blamed, and no lease of client 0 is dated from the renewal.
    assert!(!overlap.why.contains("3.963"), "{}", overlap.why);
    let story = r.stories.iter().find(|s| s.kind == "overlap").unwrap();
    let line = story.one_line();
    assert!(
        line.contains("client 0's lease had certainly ended by 1.462 s")
            && line.contains(
                "client 0 renewed at 2.965 s, after its lease had certainly ended by 1.462 s"
            ),
        "{line}"
    );
    assert!(!line.contains("live until 3.963"), "{line}");
    let short = story.shortened();
    assert!(short.contains("renewed at 2.965 s"), "{short}");
    let model = lockpick_model_of(&stolen_back_history(ms(2965)));
    let headline: Vec<String> = o.headline(&model).into_iter().map(|s| s.text).collect();
    assert!(
        headline
            .iter()
            .any(|s| s.contains("1 grant under a live lease came by a renewal")),
        "{headline:?}"
    );
    let terminal = o.summary_lines(None).join("\n");
    assert!(
        terminal.contains("the grant that broke it: client 0's renewal at 2.965 s"),
        "{terminal}"
    );
}

#[test]
fn a_renewal_sent_while_its_lease_was_live_renews_it() {
    // Sent at 1.400 s, before the lease's end at 1.462 s, and recorded once client 0 woke: it
    // may have extended a live lease, so client 1's grant came under client 0's live lease.
    let r = stolen_back(ms(1400));
    let overlap = &r.overlapping_holders.as_ref().unwrap().overlaps[0];
    assert_eq!(overlap.regrant, None);
    assert_eq!(
        overlap.cause,
        OverlapCause::GrantedUnderLiveLease,
        "{}",
        overlap.why
    );
    assert!(
        overlap.why.contains("1.1 was granted by 1.505 s"),
        "{}",
        overlap.why
    );
}

#[test]
fn a_renewal_that_does_not_say_when_it_was_sent_renews_as_before() {
    // Histories written before `sent`: the renewal may have been in flight at the freeze.
    let mut h = History::with_setup("none", "pause-holder", Some(1000));
    h.acquire_leased(
        0,
        "0.1",
        (ms(450), ms(460)),
        (ms(1450), Some(ms(1462))),
        None,
    )
    .acquire_leased(
        1,
        "1.1",
        (ms(1500), ms(1505)),
        (ms(2500), Some(ms(2510))),
        None,
    )
    .renew(0, "0.1", ms(2970), ms(3963), Some(ms(3975)))
    .release(1, "1.1", ms(3100), ms(3101))
    .release(0, "0.1", ms(3200), ms(3201))
    .final_read_agreeing(ms(3300));
    let r = check(&h.ops);
    let overlap = &r.overlapping_holders.as_ref().unwrap().overlaps[0];
    assert_eq!(overlap.regrant, None);
}

#[test]
fn an_overlap_left_undecidable_by_an_unknown_renewal_says_so() {
    // Client 0's renewal at 0.800 s had an unknown outcome: its lease has no known end from
    // then on, so client 1's grant at 2.505 s cannot be told apart from a live-lease grant.
    let mut h = History::with_setup("none", "pause-holder", None);
    h.acquire_leased(
        0,
        "0.1",
        (ms(450), ms(460)),
        (ms(1450), Some(ms(1462))),
        None,
    )
    .renew(0, "0.1", ms(800), ms(1450), None)
    .acquire_leased(
        1,
        "1.1",
        (ms(2500), ms(2505)),
        (ms(3500), Some(ms(3510))),
        None,
    )
    .release(1, "1.1", ms(3100), ms(3101))
    .release(0, "0.1", ms(3200), ms(3201))
    .final_read_agreeing(ms(3300));
    let r = check(&h.ops);
    let o = r.overlapping_holders.as_ref().unwrap();
    let overlap = &o.overlaps[0];
    assert_eq!(overlap.cause, OverlapCause::Undecidable);
    assert_eq!(overlap.first.unknown_renewal_at(), Some(ms(800)));
    assert!(
        overlap
            .why
            .contains("a renewal of it was reported with an unknown outcome at 0.800 s"),
        "{}",
        overlap.why
    );
    let headline: Vec<String> = o
        .headline(&lockpick_model(&h))
        .into_iter()
        .map(|s| s.text)
        .collect();
    assert!(
        headline
            .iter()
            .any(|s| s.contains("a renewal of the earlier holder's lease had an unknown outcome")),
        "{headline:?}"
    );
}

fn lockpick_model(h: &History) -> lockpick_checkers::model::Model {
    lockpick_checkers::model::build(&h.ops).unwrap()
}
