//! Valid only when proven: a history that shows no violation is valid only when it holds
//! operations, its final read, every access record, two different holders, and evidence that
//! every nemesis asked for took effect. Otherwise it is unknown, with one line per reason.

use crate::common;

use common::History;
use lockpick_checkers::{check, check_reader, OpType, Process, Validity, F};
use serde_json::json;

/// client 0 [--w--] then client 1 [--w--], serial and correct.
fn two_serial_holders(h: &mut History) -> &mut History {
    h.acquire(0, "0.1", 10, 11, None)
        .resource(12, 0, "0.1", None, "write", true)
        .release(0, "0.1", 13, 14)
        .acquire(1, "1.1", 15, 16, None)
        .resource(17, 1, "1.1", None, "write", true)
        .release(1, "1.1", 18, 19)
}

fn pause(nemesis: Option<&str>, effective: Option<bool>) -> serde_json::Value {
    let mut value = json!({"id": 1, "fault": "pause", "targets": ["client 0"]});
    if let Some(name) = nemesis {
        value["nemesis"] = json!(name);
    }
    if let Some(effective) = effective {
        value["effective"] = json!(effective);
    }
    value
}

#[test]
fn a_complete_exercised_history_is_valid() {
    let mut h = History::with_setup("none", "pause-holder", None);
    two_serial_holders(&mut h)
        .fault_with(20, Some(25), pause(Some("pause-holder"), Some(true)))
        .final_read_agreeing(30);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.unknown_reasons);
    assert!(r.unknown_reasons.is_empty());
}

#[test]
fn an_empty_history_is_unknown_because_it_holds_no_operations() {
    for r in [
        check(&[]),
        check_reader(&b""[..]),
        check_reader(&b"\n\n"[..]),
    ] {
        assert_eq!(r.valid, Validity::Unknown);
        assert_eq!(r.unknown_reasons, vec!["the history holds no operations"]);
    }
}

#[test]
fn a_history_of_only_its_setup_line_is_unknown() {
    let h = History::with_setup("none", "none", None);
    let r = check_reader(h.text().as_bytes());
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(r.unknown_reasons, vec!["the history holds no operations"]);
}

#[test]
fn a_run_that_ended_before_its_final_read_is_unknown() {
    let mut h = History::with_setup("none", "none", None);
    two_serial_holders(&mut h);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(
        r.unknown_reasons,
        vec!["the run ended before its final read"]
    );
}

#[test]
fn a_failed_final_read_says_the_resource_died() {
    let mut h = History::with_setup("none", "none", None);
    two_serial_holders(&mut h).push(
        30,
        Process::named("harness"),
        OpType::Fail,
        F::FinalRead,
        json!({"error": "connection refused"}),
    );
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(
        r.unknown_reasons,
        vec!["the resource died: its final read failed: connection refused"]
    );
}

#[test]
fn an_access_record_missing_below_the_highest_seq_is_noticed_even_past_the_final_read() {
    // The final read saw 2 accesses; records 1, 2 and 4 are in the history; 3 was lost.
    let mut h = History::with_setup("none", "none", None);
    two_serial_holders(&mut h).final_read(30, 0, 2);
    h.seq += 1; // record 3 is never written
    h.resource(40, 1, "1.1", None, "write", true);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(r.unknown_reasons, vec!["access record 3 is missing"]);
    assert_eq!(
        r.final_read.unwrap().valid,
        Validity::Valid,
        "1 and 2 are there"
    );
}

#[test]
fn many_missing_records_are_told_on_one_line() {
    let mut h = History::with_setup("none", "none", None);
    two_serial_holders(&mut h).final_read(30, 0, 20);
    let r = check(&h.ops);
    assert_eq!(
        r.unknown_reasons,
        vec!["access records 3, 4, 5, 6, 7 and 13 more are missing (18 of 20)"]
    );
}

#[test]
fn a_lock_only_one_client_ever_held_is_unknown() {
    let mut h = History::with_setup("none", "none", None);
    h.acquire(2, "2.1", 10, 11, None)
        .resource(12, 2, "2.1", None, "write", true)
        .release(2, "2.1", 13, 14)
        .client(0, 15, OpType::Invoke, F::Acquire, "0.1", None)
        .client(0, 16, OpType::Fail, F::Acquire, "0.1", None)
        .final_read_agreeing(30);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(r.unknown_reasons, vec!["only client 2 ever held the lock"]);
}

#[test]
fn a_nemesis_that_never_took_effect_makes_the_history_unknown() {
    let mut h = History::with_setup("none", "pause-holder+kill-node", None);
    two_serial_holders(&mut h)
        .fault_with(20, Some(25), pause(Some("pause-holder"), Some(true)))
        .fault_with(
            26,
            Some(27),
            json!({"id": 2, "fault": "kill", "targets": ["n1"], "nemesis": "kill-node", "effective": false}),
        )
        .final_read_agreeing(30);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(
        r.unknown_reasons,
        vec!["the nemesis kill-node never took effect"]
    );
}

#[test]
fn a_fault_whose_stop_says_it_had_no_effect_did_not_take_effect() {
    let mut h = History::with_setup("none", "delay-holder-write", None);
    let start = json!({"id": 1, "fault": "delay", "targets": ["client 0"], "nemesis": "delay-holder-write"});
    let mut stop = start.clone();
    stop["effective"] = json!(false);
    two_serial_holders(&mut h)
        .push(20, Process::named("nemesis"), OpType::Info, F::Start, start)
        .push(25, Process::named("nemesis"), OpType::Info, F::Stop, stop)
        .final_read_agreeing(30);
    let r = check(&h.ops);
    assert_eq!(
        r.unknown_reasons,
        vec!["the nemesis delay-holder-write never took effect"]
    );
}

#[test]
fn an_older_history_without_nemesis_names_needs_only_some_fault_to_start() {
    let mut with_fault = History::with_setup("none", "pause-holder", None);
    two_serial_holders(&mut with_fault)
        .fault_with(20, Some(25), pause(None, None))
        .final_read_agreeing(30);
    assert_eq!(check(&with_fault.ops).valid, Validity::Valid);

    let mut without = History::with_setup("none", "pause-holder", None);
    two_serial_holders(&mut without).final_read_agreeing(30);
    let r = check(&without.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(
        r.unknown_reasons,
        vec!["the nemesis pause-holder never took effect"]
    );
}

#[test]
fn clock_holder_that_never_took_effect_on_a_client_program_says_what_it_aims_at() {
    // An exec lock's grants name no servers unless the program says `granted_by`: the reason
    // says so; on lockpick's own lock it does not.
    let reasons = |lock: &str| {
        let mut h = History::with_setup("none", "clock-holder", None);
        h.ops[0].value["lock"] = json!(lock);
        two_serial_holders(&mut h).final_read_agreeing(30);
        check(&h.ops).unknown_reasons
    };
    assert_eq!(
        reasons("exec:redis:./client.py"),
        vec![
            "the nemesis clock-holder never took effect (it aims at the servers a grant names, \
             and a client program names them only in its acquire's `granted_by`)"
        ]
    );
    assert_eq!(
        reasons("redlock"),
        vec!["the nemesis clock-holder never took effect"]
    );
}

#[test]
fn a_violation_in_a_partial_history_stays_invalid_and_keeps_its_reasons() {
    // client 0 [--------w]   writes after client 1 was granted: a stale write, proven
    // client 1     [w]       and the run ended before its final read
    let mut h = History::with_setup("none", "none", None);
    h.acquire(0, "0.1", 0, 10, None)
        .acquire(1, "1.1", 20, 25, None)
        .resource(30, 1, "1.1", None, "write", true)
        .release(1, "1.1", 35, 36)
        .resource(40, 0, "0.1", None, "write", true);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(
        r.unknown_reasons,
        vec!["the run ended before its final read"]
    );
}

#[test]
fn an_endless_line_like_dev_zero_ends_unknown_with_its_line_number() {
    let zeros = std::io::BufReader::new(std::io::repeat(0));
    let r = check_reader(zeros);
    assert_eq!(r.valid, Validity::Unknown);
    let malformed = r.malformed.unwrap();
    assert_eq!(malformed.line, 1);
    assert!(malformed.reason.contains("longer than"), "{malformed}");
    assert_eq!(r.unknown_reasons.len(), 1);
}

#[test]
fn a_fault_without_evidence_that_it_took_effect_proves_nothing() {
    let mut h = History::with_setup("none", "pause-holder", None);
    two_serial_holders(&mut h)
        .fault_with(20, Some(25), pause(Some("pause-holder"), None))
        .final_read_agreeing(30);
    let r = check(&h.ops);
    assert_eq!(r.valid, Validity::Unknown);
    assert!(
        r.unknown_reasons
            .iter()
            .any(|w| w.contains("pause-holder never took effect")),
        "{:?}",
        r.unknown_reasons
    );
}

#[test]
fn a_run_that_ended_with_a_crashed_client_or_an_interruption_is_unknown() {
    for (value, says) in [
        (
            json!({"interrupted": false, "crashed_clients": ["client 1 exited with 101"]}),
            "crashed or hung",
        ),
        (
            json!({"interrupted": true, "crashed_clients": []}),
            "interrupted",
        ),
    ] {
        let mut h = History::with_setup("none", "none", None);
        two_serial_holders(&mut h).push(
            20,
            Process::named("harness"),
            OpType::Info,
            F::RunEnd,
            value,
        );
        h.final_read_agreeing(30);
        let r = check(&h.ops);
        assert_eq!(r.valid, Validity::Unknown, "{says}");
        assert!(
            r.unknown_reasons.iter().any(|w| w.contains(says)),
            "{:?}",
            r.unknown_reasons
        );
    }
}
