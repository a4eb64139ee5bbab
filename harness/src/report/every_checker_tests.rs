//! Every output shows every checker through the seam (`Results::checkers`): one hand-made
//! history breaks all of them (two overlapping holders with the same token, a stale write and a
//! stale read the resource accepted, then a lock refused to everyone while free), and the
//! terminal summary, the report's table, headline and footnotes, and JUnit each tell every
//! checker's part.

use lockpick_checkers::checks::Finding;
use lockpick_checkers::{model, Op, OpType, Process, Results, F};
use serde_json::{json, Value};

use super::page::render_model;
use super::{junit, summary, RunFacts};

const MS: u64 = 1_000_000;

fn history() -> Vec<Op> {
    let mut ops = Vec::new();
    let mut push = |ms: u64, process: Process, kind: OpType, f: F, value: Value| {
        let mut op = Op::new(ms * MS, process, kind, f, value);
        op.index = ops.len() as u64;
        ops.push(op);
    };
    let setup = json!({"lock": "etcd", "token": "create revision", "ttl_ms": 1000,
        "fencing": "off"});
    push(
        0,
        Process::named(Process::HARNESS),
        OpType::Info,
        F::Setup,
        setup,
    );
    let acquire = |push: &mut dyn FnMut(u64, Process, OpType, F, Value), ms, p, acq: &str| {
        let a = json!({"acquisition": acq});
        push(ms, Process::Client(p), OpType::Invoke, F::Acquire, a);
        let granted = json!({"acquisition": acq, "token": 7});
        push(ms, Process::Client(p), OpType::Ok, F::Acquire, granted);
    };
    acquire(&mut push, 100, 0, "0.1");
    acquire(&mut push, 200, 1, "1.1");
    // Client 0 writes and then reads after client 1's write: a stale write and a stale read.
    for (ms, seq, p, acq, op) in [
        (250, 1, 1, "1.1", "write"),
        (350, 2, 0, "0.1", "write"),
        (360, 3, 0, "0.1", "read"),
    ] {
        let v = json!({"seq": seq, "process": p, "acquisition": acq, "token": 7,
            "op": op, "value": 2});
        push(
            ms,
            Process::named(Process::RESOURCE),
            OpType::Ok,
            F::Access,
            v,
        );
    }
    for (ms, p, acq) in [(300, 1, "1.1"), (400, 0, "0.1")] {
        let a = json!({"acquisition": acq});
        push(
            ms,
            Process::Client(p),
            OpType::Invoke,
            F::Release,
            a.clone(),
        );
        push(ms, Process::Client(p), OpType::Ok, F::Release, a);
    }
    // Free from 0.4 s, yet refused to everyone for 6 s: a jam (the bound is 3 s).
    for n in 0..30 {
        let ms = 500 + n * 200;
        let acq = format!("1.{}", n + 2);
        let a = json!({"acquisition": acq});
        push(
            ms,
            Process::Client(1),
            OpType::Invoke,
            F::Acquire,
            a.clone(),
        );
        push(ms + 1, Process::Client(1), OpType::Fail, F::Acquire, a);
    }
    ops
}

fn checked() -> (model::Model, Results) {
    let ops = history();
    let mut results = lockpick_checkers::check(&ops);
    // Unavailability that server faults excuse, told beside the jam (this history has no
    // server fault to excuse any).
    results.liveness.as_mut().unwrap().excused_wait = 2_500_000_000;
    (model::build(&ops).unwrap(), results)
}

#[test]
fn the_history_breaks_every_checker() {
    let (_, results) = checked();
    let checkers = results.checkers();
    assert_eq!(checkers.len(), 4);
    for checker in checkers {
        assert!(
            matches!(checker.finding(), Finding::Broken(_)),
            "{}: {:?}",
            checker.name(),
            checker.finding()
        );
    }
}

#[test]
fn every_output_tells_every_checker() {
    let (model, results) = checked();
    let terminal = summary::render(&results);
    let page = render_model(&model, &results, &RunFacts::default(), "lockpick run");
    let headline = super::headline::findings(&model, &results);
    let junit = junit::junit(&results, &RunFacts::default()).unwrap();
    assert_eq!(results.checkers().len(), 4);
    for checker in results.checkers() {
        let name = checker.name();
        let lines = checker.summary_lines(results.setup.as_ref());
        assert!(!lines.is_empty(), "{name}: no summary line");
        for line in lines {
            assert!(terminal.contains(&line), "{name}: {line}\n{terminal}");
        }
        let rows = checker.table_rows();
        assert!(!rows.is_empty(), "{name}: no row in the report's table");
        for (what, n) in rows {
            let row = format!("<th>{what}</th><td>{n}</td>");
            assert!(page.contains(&row), "{name}: {row} not on the page");
        }
        let sentences = checker.headline(&model);
        assert!(!sentences.is_empty(), "{name}: nothing in the headline");
        for s in sentences.into_iter().chain(checker.footnotes(&model)) {
            assert!(headline.contains(&s), "{name}: {s:?} not in {headline:?}");
        }
        let case = format!("<testcase name=\"{name}\"");
        assert!(junit.contains(&case), "{name} has no JUnit case\n{junit}");
    }
    // What each checker tells, as a reader sees it (the table once left jams out).
    for row in [
        "<th>times the lock jammed</th><td>1</td>",
        "<th>longest refused while free, during server faults</th><td>2.500 s</td>",
        "<th>stale reads accepted</th><td>1</td>",
    ] {
        assert!(page.contains(row), "{row} not on the page");
    }
    for line in [
        "  lock jammed: 1 time(s)",
        "  unavailable (expected, not a jam)",
    ] {
        assert!(terminal.contains(line), "{line:?} not in\n{terminal}");
    }
    // Most important first; then why the run is not proven (it has no final read).
    let kinds: Vec<&str> = headline.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            "overlap",
            "fence",
            "tokens",
            "jam",
            "unavailable",
            "stale-reads",
            "unproven"
        ]
    );
}
