//! Every output shows every checker through the seam (`Results::checkers`): one hand-made
//! history breaks all of them (two overlapping holders with the same token, a stale write the
//! resource accepted, then a lock refused to everyone while free), and the terminal summary, the
//! report's table and headline, and JUnit each tell every checker's part.

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
    for (ms, seq, p, acq) in [(250, 1, 1, "1.1"), (350, 2, 0, "0.1")] {
        let v = json!({"seq": seq, "process": p, "acquisition": acq, "token": 7,
            "op": "write", "value": seq});
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
    (model::build(&ops).unwrap(), lockpick_checkers::check(&ops))
}

#[test]
fn the_history_breaks_every_checker() {
    let (_, results) = checked();
    let checks = results.checks();
    assert_eq!(checks.len(), 4);
    for check in checks {
        assert!(
            matches!(check.finding, Finding::Broken(_)),
            "{}: {:?}",
            check.name,
            check.finding
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
        for s in sentences {
            assert!(headline.contains(&s), "{name}: {s:?} not in {headline:?}");
        }
        assert!(junit.contains(name), "{name} has no JUnit case\n{junit}");
    }
    // The report's table counts the jam (it once left jams out).
    assert!(page.contains("<th>times the lock jammed</th><td>1</td>"));
}
