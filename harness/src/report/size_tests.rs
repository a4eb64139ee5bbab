//! A report stays small at any history length: a generated million-operation history, with a
//! frozen holder every thousand holds, renders under 2 MB and still lists every violation.

use lockpick_checkers::model::Builder;
use lockpick_checkers::{Op, OpType, Process, F};
use serde_json::{json, Value};

use super::page::render_model;
use super::RunFacts;

const MS: u64 = 1_000_000;

/// Streams operations into the model builder, numbering them as the controller does; nothing
/// but the model is kept, so a million operations cost little.
struct Generator {
    builder: Builder,
    index: u64,
    seq: u64,
}

impl Generator {
    fn push(&mut self, time: u64, process: Process, kind: OpType, f: F, value: Value) {
        let mut op = Op::new(time, process, kind, f, value);
        op.index = self.index;
        self.index += 1;
        self.builder
            .push(&op)
            .expect("the generated history is well formed");
    }

    fn acquire(&mut self, t: u64, p: u64, acquisition: &str) {
        let a = json!({"acquisition": acquisition});
        self.push(t, Process::Client(p), OpType::Invoke, F::Acquire, a);
        let granted = json!({"acquisition": acquisition, "token": null});
        self.push(
            t + MS / 2,
            Process::Client(p),
            OpType::Ok,
            F::Acquire,
            granted,
        );
    }

    fn write(&mut self, t: u64, p: u64, acquisition: &str) {
        self.seq += 1;
        let access = json!({"seq": self.seq, "process": p, "acquisition": acquisition,
            "token": null, "op": "write", "value": self.seq});
        let resource = Process::named(Process::RESOURCE);
        self.push(t, resource, OpType::Ok, F::Access, access);
    }

    fn release(&mut self, t: u64, p: u64, acquisition: &str) {
        let a = json!({"acquisition": acquisition});
        self.push(t, Process::Client(p), OpType::Invoke, F::Release, a.clone());
        self.push(t, Process::Client(p), OpType::Ok, F::Release, a);
    }

    fn pause(&mut self, t: u64, kind: F, id: u64, p: u64) {
        let v = json!({"id": id, "fault": "pause", "targets": [format!("client {p}")]});
        self.push(t, Process::named(Process::NEMESIS), OpType::Info, kind, v);
    }
}

/// `operations` operations by 5 clients taking turns; every 1000th hold its client is frozen
/// while the next one takes the lock, then writes late: an overlap and a stale write.
fn history(operations: u64) -> lockpick_checkers::model::Model {
    let mut g = Generator {
        builder: Builder::default(),
        index: 0,
        seq: 0,
    };
    let setup = json!({"lock": "redis", "token": "none", "ttl_ms": 1000, "fencing": "off",
        "clients": 5, "nemesis": "pause-holder"});
    g.push(
        0,
        Process::named(Process::HARNESS),
        OpType::Info,
        F::Setup,
        setup,
    );
    let (mut i, mut t) = (0u64, MS);
    while g.index < operations {
        let p = i % 5;
        let a = format!("{p}.{i}");
        g.acquire(t, p, &a);
        if i % 1000 == 999 {
            g.pause(t + MS, F::Start, i, p);
            let (q, b) = ((i + 1) % 5, format!("{}.{}", (i + 1) % 5, i + 1));
            g.acquire(t + 2 * MS, q, &b);
            g.write(t + 3 * MS, q, &b);
            g.release(t + 4 * MS, q, &b);
            g.pause(t + 5 * MS, F::Stop, i, p);
            g.write(t + 5 * MS + MS / 2, p, &a);
            g.release(t + 6 * MS, p, &a);
            i += 2;
            t += 7 * MS;
        } else {
            g.write(t + MS, p, &a);
            g.release(t + 2 * MS, p, &a);
            i += 1;
            t += 3 * MS;
        }
    }
    g.builder
        .finish()
        .expect("the generated history is consistent")
}

#[test]
fn a_million_operation_report_stays_under_two_megabytes_with_every_violation_linked() {
    let model = history(1_000_000);
    let results = lockpick_checkers::check_model(&model);
    let overlaps = results.overlapping_holders.as_ref().unwrap().overlaps.len();
    let stale = results.stale_accesses.as_ref().unwrap().stale_writes;
    assert!(
        overlaps > 100 && stale > 100,
        "{overlaps} overlaps, {stale} stale writes"
    );
    let facts = RunFacts {
        lock: "redis".to_string(),
        clients: Some(5),
        ..RunFacts::default()
    };
    let page = render_model(&model, &results, &facts, "lockpick run");
    eprintln!("a 1M-operation report: {} bytes", page.len());
    assert!(page.len() < 2_000_000, "the report is {} bytes", page.len());
    // Every violation has its row, and its row links to its mark, which exists.
    for n in 1..=overlaps + stale {
        let row = format!("id=\"violation-{n}\"");
        let at = page
            .find(&row)
            .unwrap_or_else(|| panic!("no row for violation {n}"));
        let href = page[at..].split("href=\"#").nth(1).unwrap();
        let mark = &href[..href.find('"').unwrap()];
        assert!(
            page.contains(&format!("id=\"{mark}\"")),
            "violation {n}'s mark {mark}"
        );
    }
    // Every fault window is drawn on its own, with its label.
    assert_eq!(
        page.matches("class=\"fault-label\"").count(),
        model.faults.len()
    );
    // Busy lanes were merged rather than drawn hold by hold.
    assert!(page.contains("class=\"hold-run\""));
    assert!(page.matches("class=\"hold\"").count() < model.holds.len() / 10);
}
