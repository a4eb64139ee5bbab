//! An overlap lost in a failover, told as such by `lockpick check` and `lockpick report` of a
//! stored history: the first grant came from the primary at 10.0.0.1, a `kill-leader` fault
//! recorded leadership moving to 10.0.0.2, and the new primary granted the lock again while the
//! first lease was certainly live. The history is written by hand (in the shape the leader
//! nemeses and the Sentinel lock record), so no server runs.

use crate::common;

use std::path::Path;

use common::lockpick;
use serde_json::{json, Value};

const MS: u64 = 1_000_000;

/// The lines of the history, numbered as the controller numbers them.
fn history() -> String {
    let mut lines: Vec<Value> = Vec::new();
    let mut push = |ms: u64, process: Value, kind: &str, f: &str, value: Value| {
        let index = lines.len();
        lines.push(
            json!({"index": index, "time": ms * MS, "process": process, "type": kind,
            "f": f, "value": value}),
        );
    };
    let setup = json!({"lock": "redis-sentinel", "token": "none", "ttl_ms": 1000,
        "fencing": "off", "nemesis": "kill-leader", "clients": 2, "seed": 1,
        "prefix": "lkp000000", "servers": ["10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"],
        "lease_silence_ms": 1000});
    push(0, json!("harness"), "info", "setup", setup);
    let granted = |acq: &str, ok: u64, primary: &str| {
        json!({"acquisition": acq, "token": null, "nodes": [primary],
            "lease": {"live_until": (ok + 990) * MS, "expires_by": (ok + 1010) * MS}})
    };
    let leader = |node: &str, ip: &str, term: u64| json!({"node": node, "address": format!("{ip}:6379"), "term": term});
    push(
        1,
        json!(0),
        "invoke",
        "acquire",
        json!({"acquisition": "0.1"}),
    );
    push(
        10,
        json!(0),
        "ok",
        "acquire",
        granted("0.1", 10, "10.0.0.1:6379"),
    );
    let fault = json!({"id": 1, "fault": "kill", "targets": ["n1"], "nemesis": "kill-leader",
        "effective": true});
    let mut start = fault.clone();
    start["leader"] = leader("n1", "10.0.0.1", 4);
    push(50, json!("nemesis"), "info", "start", start);
    push(
        200,
        json!(1),
        "invoke",
        "acquire",
        json!({"acquisition": "1.1"}),
    );
    push(
        210,
        json!(1),
        "ok",
        "acquire",
        granted("1.1", 210, "10.0.0.2:6379"),
    );
    let mut stop = fault;
    stop["leader_after"] = leader("n2", "10.0.0.2", 5);
    stop["leadership_moved"] = json!(true);
    push(400, json!("nemesis"), "info", "stop", stop);
    for (p, acq, at) in [(1, "1.1", 800), (0, "0.1", 900)] {
        push(
            at,
            json!(p),
            "invoke",
            "release",
            json!({"acquisition": acq}),
        );
        push(
            at + 1,
            json!(p),
            "ok",
            "release",
            json!({"acquisition": acq}),
        );
    }
    push(
        950,
        json!("harness"),
        "info",
        "run-end",
        json!({"interrupted": false, "crashed_clients": []}),
    );
    push(
        960,
        json!("harness"),
        "ok",
        "final-read",
        json!({"value": 0, "applied": 0}),
    );
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn stored_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("history.jsonl"), history()).unwrap();
    dir
}

fn check(dir: &Path, json: bool) -> (i32, String) {
    let mut command = lockpick();
    command.arg("check").arg(dir);
    if json {
        command.arg("--json");
    }
    let output = command.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).to_string(),
    )
}

#[test]
fn check_of_a_stored_history_tells_an_overlap_lost_in_a_failover() {
    let run = stored_run();
    let (code, out) = check(run.path(), false);
    assert_eq!(code, 1, "invalid: {out}");
    // The summary's count by cause, and the first violation's story with its cause.
    assert!(out.contains("1 lost in a failover"), "{out}");
    assert!(
        out.contains("held the lock at once for 0.590 s, from 0.210 s to 0.800 s (the lock was lost in a failover)"),
        "{out}"
    );
    assert!(
        out.contains(
            "the kill of n1 hit the leader n1 (10.0.0.1:6379, term 4): leadership moved to n2 \
             (10.0.0.2:6379, term 5), named at 0.400 s before the fault healed"
        ),
        "{out}"
    );
    assert!(
        out.contains("client 1 was granted by the new leader 10.0.0.2:6379"),
        "{out}"
    );
    assert!(
        out.contains("the cause: the lock was lost in a failover"),
        "{out}"
    );
    // results.json's shape: counted apart, with its class.
    let (_, json) = check(run.path(), true);
    let results: Value = serde_json::from_str(&json).unwrap();
    let overlaps = &results["overlapping_holders"];
    assert_eq!(overlaps["lost_in_failover"], 1, "{overlaps}");
    assert_eq!(overlaps["granted_under_live_lease"], 0, "{overlaps}");
    assert_eq!(overlaps["overlaps"][0]["cause"], "lost-in-failover");
}

#[test]
fn report_of_a_stored_history_tells_the_failover_and_marks_the_leader_change() {
    let run = stored_run();
    let output = lockpick().arg("report").arg(run.path()).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let page = std::fs::read_to_string(run.path().join("report.html")).unwrap();
    assert!(page.contains("the lock was lost in a failover"), "{page}");
    assert!(
        page.contains("class=\"leader-change\" data-fault=\"1\" data-from=\"n1\" data-to=\"n2\""),
        "{page}"
    );
    assert!(page.contains("n1 → n2"), "{page}");
    let junit = std::fs::read_to_string(run.path().join("junit.xml")).unwrap();
    assert!(junit.contains("lost in a failover"), "{junit}");
}
