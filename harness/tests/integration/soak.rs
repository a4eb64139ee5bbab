//! No false alarms: correct, fenced locks under faults that cannot break them, and every lock
//! without faults, over several seeds, must show no stale write accepted and (without faults)
//! no overlapping holders. `lockpick check` on garbage never crashes.

use crate::common;

use common::{lockpick, run_line};

/// Runs the cells three at a time (each on its own nodes and subnet).
fn run_all(lines: Vec<String>) -> Vec<(String, common::Run)> {
    let mut results = Vec::new();
    for chunk in lines.chunks(3) {
        let done: Vec<(String, common::Run)> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|line| scope.spawn(move || (line.clone(), run_line(line))))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        results.extend(done);
    }
    results
}

#[test]
fn fenced_etcd_and_zookeeper_never_accept_a_stale_write_under_faults() {
    let mut lines = Vec::new();
    for lock in ["etcd", "zookeeper"] {
        for seed in [61, 62, 63] {
            lines.push(format!(
                "--lock {lock} --fencing on --nemesis pause-holder,partition-node,kill-node,\
                 delay-holder-write --fault-duration 2s --work 100ms --time-limit 8s --seed {seed}"
            ));
        }
    }
    let mut holds = 0;
    let mut holds_by_lock = std::collections::BTreeMap::new();
    for (line, r) in run_all(lines) {
        assert_ne!(r.code, 255, "{line}: {}", r.stderr);
        assert!(r.results["malformed"].is_null(), "{line}");
        assert_eq!(r.stale_writes(), 0, "{line}:\n{}", r.stdout);
        assert_eq!(r.stale_reads(), 0, "{line}:\n{}", r.stdout);
        // Under this many faults one run may hold the lock rarely or never (etcd lost members
        // for most of one 8 s run here; a loaded CI machine once kept ZooKeeper from granting
        // in one 8 s run, an honest UNKNOWN): each lock must be held across its seeds, and
        // the soak as a whole must exercise it.
        let lock = if line.contains("--lock etcd") {
            "etcd"
        } else {
            "zookeeper"
        };
        *holds_by_lock.entry(lock).or_insert(0) += r.holds();
        holds += r.holds();
    }
    eprintln!("{holds} holds in the whole soak: {holds_by_lock:?}");
    for (lock, n) in &holds_by_lock {
        assert!(*n > 0, "{lock} was never held in any seed of the soak");
    }
    assert!(
        holds >= 30,
        "only {holds} holds in the whole soak: it proves little"
    );
}

#[test]
fn no_lock_shows_a_violation_without_faults() {
    let lines = ["redis", "redlock", "rslock", "etcd", "zookeeper"]
        .iter()
        .flat_map(|lock| {
            [64, 65].map(|seed| format!("--lock {lock} --time-limit 5s --seed {seed}"))
        })
        .collect();
    for (line, r) in run_all(lines) {
        assert_eq!(r.code, 0, "{line}:\n{}\n{}", r.stdout, r.stderr);
        assert_eq!(r.overlaps(), 0, "{line}");
        assert_eq!(r.stale_writes(), 0, "{line}");
    }
}

#[test]
fn check_never_crashes_on_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for round in 0..40 {
        let mut bytes = Vec::new();
        for _ in 0..(round * 37 % 900) {
            // xorshift: reproducible garbage, some of it JSON-shaped.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let pick = b"{}[]\":,0123456789abcdefinvokeoktypeprocessf\n \xff\x00";
            bytes.push(pick[(seed % pick.len() as u64) as usize]);
        }
        let path = dir.path().join(format!("garbage-{round}.jsonl"));
        std::fs::write(&path, &bytes).unwrap();
        let output = lockpick().arg("check").arg(&path).output().unwrap();
        let code = output.status.code();
        assert!(
            code == Some(0) || code == Some(2),
            "garbage gave {code:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
