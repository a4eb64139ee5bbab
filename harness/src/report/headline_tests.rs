//! The headline's sentences for small hand-made histories: what a reader must not miss, for
//! each kind of run.

use lockpick_checkers::{model, Op, OpType, Process, F};
use serde_json::{json, Value};

use super::*;

const MS: u64 = 1_000_000;

#[derive(Default)]
struct History(Vec<Op>);

impl History {
    fn push(&mut self, ms: u64, process: Process, kind: OpType, f: F, value: Value) {
        let mut op = Op::new(ms * MS, process, kind, f, value);
        op.index = self.0.len() as u64;
        self.0.push(op);
    }

    fn setup(token: &str, fencing: &str) -> History {
        History::setup_of("etcd", token, fencing)
    }

    fn setup_of(lock: &str, token: &str, fencing: &str) -> History {
        let mut h = History::default();
        let setup = json!({"lock": lock, "token": token, "ttl_ms": 1000, "fencing": fencing});
        h.push(
            0,
            Process::named(Process::HARNESS),
            OpType::Info,
            F::Setup,
            setup,
        );
        h
    }

    fn acquire(&mut self, ms: u64, p: u64, acquisition: &str, token: Option<u64>) {
        let c = Process::Client(p);
        let a = json!({"acquisition": acquisition});
        self.push(ms, c.clone(), OpType::Invoke, F::Acquire, a);
        let granted = json!({"acquisition": acquisition, "token": token});
        self.push(ms, c, OpType::Ok, F::Acquire, granted);
    }

    fn release(&mut self, ms: u64, p: u64, acquisition: &str) {
        let a = json!({"acquisition": acquisition});
        self.push(
            ms,
            Process::Client(p),
            OpType::Invoke,
            F::Release,
            a.clone(),
        );
        self.push(ms, Process::Client(p), OpType::Ok, F::Release, a);
    }

    fn write(
        &mut self,
        ms: u64,
        seq: u64,
        p: u64,
        acquisition: &str,
        token: Option<u64>,
        ok: bool,
    ) {
        let v = json!({"seq": seq, "process": p, "acquisition": acquisition, "token": token,
            "op": "write", "value": seq});
        let outcome = if ok { OpType::Ok } else { OpType::Fail };
        self.push(ms, Process::named(Process::RESOURCE), outcome, F::Access, v);
    }

    /// Client 0 holds from 0.1 s to 0.4 s; client 1 from 0.2 s to 0.3 s and writes; then
    /// client 0 writes late, at 0.35 s, which the resource takes or refuses.
    fn overlap(token: &str, fencing: &str, tokens: [Option<u64>; 2], late_ok: bool) -> Vec<String> {
        let mut h = History::setup(token, fencing);
        h.acquire(100, 0, "0.1", tokens[0]);
        h.acquire(200, 1, "1.1", tokens[1]);
        h.write(250, 1, 1, "1.1", tokens[1], true);
        h.release(300, 1, "1.1");
        h.write(350, 2, 0, "0.1", tokens[0], late_ok);
        h.release(400, 0, "0.1");
        let model = model::build(&h.0).unwrap();
        let results = lockpick_checkers::check(&h.0);
        findings(&model, &results)
            .into_iter()
            .map(|f| format!("{}: {}", f.kind, f.text))
            .collect()
    }
}

#[test]
fn a_fenced_run_with_overlaps_says_the_fence_held() {
    let said = History::overlap("revision", "on", [Some(1), Some(2)], false);
    assert!(
        said[0].starts_with("overlap: 1 pair of overlapping holders, "),
        "{said:?}"
    );
    assert!(
        said.contains(
            &"fence: The fence held: it rejected 1 stale access (1 write) and accepted none"
                .to_string()
        ),
        "{said:?}"
    );
}

#[test]
fn an_unfenced_run_says_the_stale_write_got_through() {
    let said = History::overlap("none", "off", [None, None], true);
    let fence = said
        .iter()
        .find(|s| s.starts_with("fence: "))
        .expect("a fence sentence");
    assert!(
        fence.contains("accepted 1 stale write from a holder already overtaken (fencing was off)"),
        "{said:?}"
    );
}

#[test]
fn a_fence_that_lets_a_stale_write_through_failed() {
    // Tokens, fencing on, and yet the resource took the older token's write.
    let said = History::overlap("revision", "on", [Some(1), Some(2)], true);
    assert!(
        said.iter()
            .any(|s| s.starts_with("fence: The fence failed: it accepted 1 stale write")),
        "{said:?}"
    );
}

/// Clients 0 and 1 acquire at 0.1 s and 0.2 s with `lease`s live 50 ms and ending by
/// `expires_by_ms` after their grant (or with no known end), then release: the overlap's
/// headline sentence.
fn overlap_sentence_of(lock: &str, expires_by_ms: Option<u64>) -> String {
    let mut h = History::setup_of(lock, "none", "off");
    for (ms, p, a) in [(100, 0, "0.1"), (200, 1, "1.1")] {
        let c = Process::Client(p);
        h.push(
            ms,
            c.clone(),
            OpType::Invoke,
            F::Acquire,
            json!({"acquisition": a}),
        );
        let ends = expires_by_ms.map(|e| (ms + e) * MS);
        let lease = json!({"live_until": (ms + 50) * MS, "expires_by": ends});
        let granted = json!({"acquisition": a, "token": null, "lease": lease});
        h.push(ms, c, OpType::Ok, F::Acquire, granted);
    }
    h.release(300, 1, "1.1");
    h.release(400, 0, "0.1");
    let model = model::build(&h.0).unwrap();
    let results = lockpick_checkers::check(&h.0);
    let said = findings(&model, &results);
    let overlap = said
        .iter()
        .find(|f| f.kind == "overlap")
        .expect("an overlap");
    overlap.text.clone()
}

#[test]
fn a_program_that_reports_no_lease_end_is_told_what_is_missing_not_cannot_tell() {
    // A client program whose library renews in the background and reports nothing: its
    // grants say how long they are live, never when they end, so no freeze proves anything.
    let said = overlap_sentence_of("exec:redis:./client.py", None);
    assert!(
        said.starts_with(
            "1 pair of overlapping holders, of undecidable cause: the client program reported no \
             end of the earlier holder's lease"
        ),
        "{said}"
    );
    assert!(said.contains("`renewed`"), "{said}");
    assert!(!said.contains("cannot tell"), "{said}");
    let own = overlap_sentence_of("etcd", None);
    assert!(
        own.contains("of undecidable cause: no record bounds when the earlier holder's lease"),
        "{own}"
    );
}

#[test]
fn lease_bounds_that_leave_the_cause_open_are_told_as_such() {
    // 0.1's lease may last until 0.9 s, and 1.1 was granted at 0.2 s.
    let said = overlap_sentence_of("etcd", Some(800));
    assert!(
        said.contains("of undecidable cause: the recorded lease bounds leave open whether"),
        "{said}"
    );
}

#[test]
fn an_unknown_run_says_why_it_is_not_proven() {
    let h = History::setup("none", "off");
    let model = model::build(&h.0).unwrap();
    let results = lockpick_checkers::check(&h.0);
    assert_eq!(results.valid, Validity::Unknown);
    let said = findings(&model, &results);
    assert!(!results.unknown_reasons.is_empty());
    for reason in &results.unknown_reasons {
        let sentence = format!("not proven: {reason}");
        assert!(
            said.iter()
                .any(|f| f.kind == "unproven" && f.text == sentence),
            "{said:?}"
        );
    }
}
