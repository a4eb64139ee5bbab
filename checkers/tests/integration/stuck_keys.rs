//! A key the lock server holds with no expiry while nobody holds the lock jams it for good: the
//! holder of a no-expiry lock killed while holding it, and sherlock's acquire with `expire=1.0`
//! (its `SETNX` applied, its `EXPIRE` refused: the key stays forever, and nobody was ever
//! granted the lock). Times are ms written as ns × 10^6.

use crate::common;

use common::History;
use lockpick_checkers::stuck_keys::JamCause;
use lockpick_checkers::{check, OpType, Process, Validity, F};
use serde_json::json;

const MS: u64 = 1_000_000;

/// Refused attempts by `p`, one every 200 ms from `from` to `to` (ms).
fn refusals(h: &mut History, p: u64, from: u64, to: u64) {
    let mut t = from;
    let mut n = 0;
    while t + 100 <= to {
        let acq = format!("{p}.r{n}");
        h.client(p, t * MS, OpType::Invoke, F::Acquire, &acq, None);
        h.push(
            (t + 100) * MS,
            Process::Client(p),
            OpType::Fail,
            F::Acquire,
            json!({"acquisition": acq, "error": "held by another client"}),
        );
        t += 200;
        n += 1;
    }
}

fn exec_setup() -> History {
    let mut h = History::default();
    let value = json!({"lock": "exec:redis:./no_expiry.py", "token": "none", "ttl_ms": 1000,
        "fencing": "off", "nemesis": "kill-client", "lease_silence_ms": null});
    h.push(0, Process::named("harness"), OpType::Info, F::Setup, value);
    h
}

#[test]
fn a_holder_killed_while_the_server_held_its_key_with_no_expiry_jammed_the_lock() {
    // The program said its lease ends within 1 s; the server said the key has no expiry.
    let mut h = exec_setup();
    h.client(0, 0, OpType::Invoke, F::Acquire, "0.1", None);
    h.push(
        100 * MS,
        Process::Client(0),
        OpType::Ok,
        F::Acquire,
        json!({"acquisition": "0.1", "token": null,
            "lease": {"live_until": 1_000 * MS, "expires_by": 1_100 * MS},
            "server_lease": {"asked_at": 102 * MS, "remaining_ms": null, "ended_by": null}}),
    )
    .fault_with(
        300 * MS,
        Some(400 * MS),
        json!({"id": 1, "fault": "kill", "targets": ["client 0"], "effective": true}),
    );
    refusals(&mut h, 1, 500, 5_000);
    refusals(&mut h, 2, 600, 5_000);
    h.final_read_agreeing(5_100 * MS);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Invalid, "{:?}", r.unknown_reasons);
    let jam = &r.liveness.as_ref().unwrap().jams[0];
    assert_eq!(
        jam.cause,
        JamCause::HolderKeyWithoutExpiry { asked_at: 102 * MS }
    );
    // Nobody held it from the holder's last event, not from the end its program claimed.
    assert_eq!(jam.free_from, 100 * MS);
    let story = r.stories.iter().find(|s| s.kind == "jam").unwrap();
    let text = story.one_line();
    assert!(text.contains("held its key with no expiry"), "{text}");
    assert!(!text.contains("certainly ended"), "{text}");
    assert!(
        story.title.contains("let go of a key with no expiry"),
        "{}",
        story.title
    );
}

#[test]
fn an_acquire_that_failed_half_way_and_left_a_key_with_no_expiry_jammed_the_lock() {
    let mut h = exec_setup();
    h.client(0, 0, OpType::Invoke, F::Acquire, "0.1", None);
    h.push(
        20 * MS,
        Process::Client(0),
        OpType::Info,
        F::Acquire,
        json!({"acquisition": "0.1", "token": null,
            "error": "ResponseError: value is not an integer or out of range",
            "server_lease": {"asked_at": 22 * MS, "remaining_ms": null, "ended_by": null}}),
    );
    refusals(&mut h, 1, 100, 4_500);
    refusals(&mut h, 0, 150, 4_500);
    h.final_read_agreeing(4_600 * MS);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Invalid, "{:?}", r.unknown_reasons);
    let jam = &r.liveness.as_ref().unwrap().jams[0];
    assert!(
        matches!(
            jam.cause,
            JamCause::AttemptLeftKey {
                process: 0,
                unknown: true,
                ..
            }
        ),
        "{:?}",
        jam.cause
    );
    // The client's error is in the reasons and in the story.
    assert!(
        r.unknown_reasons
            .iter()
            .any(|reason| reason.contains("no client ever held the lock")
                && reason.contains("ResponseError: value is not an integer")),
        "{:?}",
        r.unknown_reasons
    );
    let story = r.stories.iter().find(|s| s.kind == "jam").unwrap();
    let text = story.one_line();
    assert!(text.contains("ResponseError"), "{text}");
    assert!(text.contains("left it behind"), "{text}");
}

#[test]
fn an_unknown_acquire_without_the_servers_word_still_excuses_the_refusals() {
    // The same, but the server was not asked: the attempt may hold a lease of any length.
    let mut h = exec_setup();
    h.client(0, 0, OpType::Invoke, F::Acquire, "0.1", None);
    h.push(
        20 * MS,
        Process::Client(0),
        OpType::Info,
        F::Acquire,
        json!({"acquisition": "0.1", "token": null, "error": "TimeoutError"}),
    );
    refusals(&mut h, 1, 100, 4_500);
    h.final_read_agreeing(4_600 * MS);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert!(r.liveness.as_ref().unwrap().jams.is_empty());
}
