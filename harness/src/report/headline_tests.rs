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
        let mut h = History::default();
        let setup = json!({"lock": "etcd", "token": token, "ttl_ms": 1000, "fencing": fencing});
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
