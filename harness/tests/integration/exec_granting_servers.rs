//! What an exec client program says of its grants and its failed releases reaches the
//! nemeses and the outputs: `clock-holder` jumps the clocks of exactly the servers a program's
//! acquire names in `granted_by`, and a release `fail` keeps its `kind` in the history,
//! results.json and the summary. Over the `redlock` npm package (examples/node-redlock), on
//! five real redis-servers.
//!
//! Needs Debian's nodejs (`.ci/install-packages`).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::run;
use serde_json::Value;

/// The Node example over the `redlock` npm package, installed once per test binary from its
/// vendored tarballs, offline.
fn node_redlock_client() -> &'static str {
    static INSTALLED: OnceLock<String> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("exec-granting/node-redlock");
        let status = Command::new(root.join("examples/node-redlock/install.sh"))
            .arg(&dir)
            .status()
            .expect("the install script runs");
        assert!(status.success(), "the redlock example does not install");
        dir.join("lock_client.js").to_string_lossy().to_string()
    })
}

#[test]
fn clock_holder_jumps_the_clocks_of_the_servers_an_exec_redlock_grant_names() {
    let store = tempfile::tempdir().unwrap();
    let lock = format!("exec:redlock:{}", node_redlock_client());
    let line = "--nemesis clock-holder --time-limit 8s --seed 31";
    let mut args = vec!["--lock", lock.as_str()];
    args.extend(line.split_whitespace());
    let r = run(store.path(), &args);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "{}", r.stdout);
    let history = r.history();
    // The setup's servers are n1, n2, ... in order: a fault names nodes, a grant addresses.
    let servers: Vec<&str> = history[0]["value"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let node = |address: &Value| {
        let i = servers.iter().position(|s| *s == address.as_str().unwrap());
        format!("n{}", i.expect("a grant names only the run's servers") + 1)
    };
    let granted: BTreeMap<String, BTreeSet<String>> = history
        .iter()
        .filter(|op| op["f"] == "acquire" && op["type"] == "ok")
        .map(|op| {
            let nodes = op["value"]["nodes"]
                .as_array()
                .expect("the program names them");
            let acquisition = op["value"]["acquisition"].as_str().unwrap().to_string();
            (acquisition, nodes.iter().map(node).collect())
        })
        .collect();
    for (acquisition, nodes) in &granted {
        assert!(nodes.len() >= 3, "{acquisition}: not a majority: {nodes:?}");
    }
    let jumps: Vec<&Value> = history
        .iter()
        .filter(|op| op["f"] == "start" && op["value"]["fault"] == "clock-holder")
        .collect();
    assert!(!jumps.is_empty(), "no clock-holder fault:\n{}", r.stdout);
    for jump in jumps {
        let trigger = jump["value"]["trigger"].as_str().unwrap();
        let acquisition = trigger.strip_prefix("holder of acquisition ").unwrap();
        let targets: BTreeSet<String> = jump["value"]["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect();
        assert_eq!(&targets, &granted[acquisition], "{jump}");
        assert_eq!(jump["value"]["effective"], true, "{jump}");
    }
    // A holder whose keys expired early under it finds them gone or another's at its release
    // (`not-ours`), or has already let go after its extend failed (`not-held`): each fail says
    // which, and results.json, the summary and the report count them by kind.
    let failed: Vec<&Value> = history
        .iter()
        .filter(|op| op["f"] == "release" && op["type"] == "fail")
        .collect();
    assert!(!failed.is_empty(), "no release failed:\n{}", r.stdout);
    let counted = &r.results["release_failures"];
    let mut told = Vec::new();
    for (kind, field, words) in [
        ("not-ours", "not_ours", "the lock was no longer ours"),
        ("not-held", "not_held", "nothing was held, nothing sent"),
    ] {
        let n = failed
            .iter()
            .filter(|op| op["value"]["kind"] == kind)
            .count();
        assert_eq!(counted[field], n, "{kind}: {counted}");
        if n > 0 {
            told.push(format!("{words}: {n}"));
        }
    }
    assert_eq!(counted["refused"], 0, "{counted}");
    assert_eq!(
        counted["unsaid"], 0,
        "the program gives every kind: {counted}"
    );
    let told = format!("{} ({})", failed.len(), told.join("; "));
    let line = format!("releases failed: {told}");
    assert!(r.stdout.contains(&line), "{line} missing:\n{}", r.stdout);
    let report = std::fs::read_to_string(r.dir.join("report.html")).unwrap();
    assert!(
        report.contains("releases failed"),
        "the report does not tell them"
    );
    assert!(report.contains(&told), "{told} not in the report");
}
