//! The nemesis catalogue against real servers: each fault is recorded, takes effect, is healed,
//! and produces the violation the field expects, or none where the lock is safe.

use crate::common;

use std::process::Command;

use common::{fault_starts, run_line, Run};
use serde_json::Value;

fn starts_and_stops_match(r: &Run) {
    let history = r.history();
    let count = |f: &str| {
        history
            .iter()
            .filter(|op| op["process"] == "nemesis" && op["f"] == f)
            .count()
    };
    assert_eq!(count("start"), count("stop"), "a fault was never healed");
}

#[test]
fn a_clock_jump_on_the_holders_majority_breaks_redlock() {
    let r = run_line("--lock redlock --nemesis clock-holder --time-limit 8s --seed 31");
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "{}", r.stdout);
    assert!(r.stale_writes() > 0, "{}", r.stdout);
    let jumps = fault_starts(&r, "clock-holder");
    assert!(!jumps.is_empty());
    for jump in &jumps {
        // The servers that granted the lock (a majority) really read the jumped clock.
        assert!(
            jump["value"]["targets"].as_array().unwrap().len() >= 3,
            "{jump}"
        );
        assert_eq!(jump["value"]["effective"], true, "{jump}");
    }
    starts_and_stops_match(&r);
    // The holder's keys expired under it: its release finds them gone or another's, and says
    // so by its kind; lockpick's own Redlock gives a kind to every failed release.
    let history = r.history();
    let failed: Vec<&serde_json::Value> = history
        .iter()
        .filter(|op| op["f"] == "release" && op["type"] == "fail")
        .collect();
    for op in &failed {
        let kind = op["value"]["kind"].as_str();
        assert!(matches!(kind, Some("not-ours" | "refused")), "{op}");
    }
    let not_ours = failed.iter().filter(|op| op["value"]["kind"] == "not-ours");
    assert!(not_ours.count() > 0, "{}", r.stdout);
    assert_eq!(
        r.results["release_failures"]["not_ours"].as_u64().unwrap() as usize
            + r.results["release_failures"]["refused"].as_u64().unwrap() as usize,
        failed.len()
    );
}

#[test]
fn long_work_under_etcd_keep_alive_is_valid_without_faults() {
    // The baseline for the partition test: work longer than the lease is safe while the
    // keep-alives get through.
    let r = run_line("--lock etcd --work 2500ms --ttl 1s --time-limit 10s --seed 32");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.holds() >= 2, "{}", r.stdout);
}

#[test]
fn partitioning_the_holder_from_etcd_gives_overlaps_but_the_fence_holds() {
    let r = run_line(
        "--lock etcd --nemesis partition-holder --work 2500ms --ttl 1s --fault-duration 3s \
         --time-limit 12s --fencing on --seed 33",
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "{}", r.stdout);
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    assert_eq!(r.stale_reads(), 0, "{}", r.stdout);
    let cuts = fault_starts(&r, "partition-holder");
    assert!(
        cuts.iter().all(|c| c["value"]["effective"] == true),
        "{cuts:?}"
    );
    let dropped: u64 = r
        .history()
        .iter()
        .filter(|op| op["f"] == "stop" && op["value"]["fault"] == "partition-holder")
        .map(|op| op["value"]["dropped_packets"].as_u64().unwrap())
        .sum();
    assert!(dropped > 0, "the partition dropped nothing");
    starts_and_stops_match(&r);
}

#[test]
fn killing_a_redis_without_persistence_gives_two_holders() {
    let r = run_line(
        "--lock redis --nemesis kill-node --work 1s --ttl 5s --fault-duration 200ms \
         --fault-interval 1s --time-limit 10s --seed 35",
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "{}", r.stdout);
    let kills = fault_starts(&r, "kill");
    assert!(kills.iter().all(|k| k["value"]["effective"] == true));
    let restarts = r
        .history()
        .iter()
        .filter(|op| op["f"] == "stop" && op["value"]["restarted_pid"].is_u64())
        .count();
    assert_eq!(restarts, kills.len(), "every killed server is restarted");
}

#[test]
fn a_delayed_write_is_accepted_without_fencing() {
    let r = run_line("--lock zookeeper --nemesis delay-holder-write --time-limit 10s --seed 36");
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stale_writes() > 0, "{}", r.stdout);
    let delays = fault_starts(&r, "delay");
    assert!(!delays.is_empty());
    starts_and_stops_match(&r);
}

#[test]
fn a_delayed_write_is_rejected_with_fencing() {
    let r = run_line(
        "--lock zookeeper --nemesis delay-holder-write --time-limit 10s --seed 36 --fencing on",
    );
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    assert!(r.rejected() > 0, "{}", r.stdout);
}

fn schedule_of(line: &str) -> (Run, String) {
    let r = run_line(line);
    let schedule = std::fs::read_to_string(r.dir.join("schedule.json")).unwrap();
    (r, schedule)
}

#[test]
fn the_same_seed_gives_the_same_fault_schedule() {
    let nemeses = "pause-node,partition-node,kill-node,loss,clock-forward,kill-client";
    let line = |seed: u64| {
        format!("--nemesis {nemeses} --time-limit 5s --fault-duration 300ms --seed {seed}")
    };
    let (first, a) = schedule_of(&line(41));
    let (_, b) = schedule_of(&line(41));
    let (_, c) = schedule_of(&line(42));
    assert_eq!(a, b, "same seed, different schedules");
    assert_ne!(a, c, "different seeds, same schedule");
    assert!(a.matches("\"nemesis\"").count() >= 6, "{a}");
    // A stored schedule replays exactly, whatever the seed.
    let path = first.dir.join("schedule.json");
    let (_, replayed) = schedule_of(&format!(
        "--time-limit 5s --fault-duration 300ms --seed 43 --schedule {}",
        path.display()
    ));
    assert_eq!(
        a.replace("\"seed\": 41", ""),
        replayed.replace("\"seed\": 41", "")
    );
}

#[test]
fn every_partition_takes_effect_and_heals_and_the_host_is_untouched() {
    let host_rules = || {
        Command::new("nft")
            .args(["list", "ruleset"])
            .output()
            .unwrap()
            .stdout
    };
    let before = host_rules();
    let r = run_line(
        "--lock redlock --nemesis partition-node,partition-halves,partition-ring,partition-bridge,\
         partition-client,partition-one-way,loss --time-limit 8s --fault-duration 700ms \
         --fault-interval 700ms --seed 37 --partition-mode reject",
    );
    assert_ne!(r.code, 255, "{}\n{}", r.stdout, r.stderr);
    for fault in [
        "partition-node",
        "partition-halves",
        "partition-ring",
        "partition-bridge",
        "partition-client",
        "partition-one-way",
    ] {
        let starts = fault_starts(&r, fault);
        assert!(!starts.is_empty(), "{fault} never ran");
        for start in starts {
            assert_eq!(start["value"]["effective"], true, "{start}");
            assert_eq!(start["value"]["mode"], "reject");
        }
    }
    assert!(!fault_starts(&r, "loss").is_empty());
    starts_and_stops_match(&r);
    assert_eq!(before, host_rules(), "the host's nft ruleset changed");
}

#[test]
fn server_clock_jumps_read_back_on_redis() {
    let r = run_line(
        "--lock redlock --nemesis clock-forward,clock-backward,clock-strobe --clock-jump 5s \
         --time-limit 6s --fault-duration 500ms --fault-interval 500ms --seed 38",
    );
    assert_ne!(r.code, 255, "{}\n{}", r.stdout, r.stderr);
    let mut alone = 0;
    for (fault, sign) in [
        ("clock-forward", 1),
        ("clock-backward", -1),
        ("clock-strobe", 1),
    ] {
        let jumps = fault_starts(&r, fault);
        assert!(!jumps.is_empty(), "{fault} never ran");
        for jump in jumps {
            // Jumps on one server stack: the evidence is the sum of the shifts open on it,
            // read back from the server's own clock.
            let measured = jump["value"]["measured_offset_ms"].as_i64().unwrap();
            let expected = jump["value"]["expected_offset_ms"].as_i64().unwrap();
            assert!((measured - expected).abs() < 500, "{jump}");
            assert_eq!(jump["value"]["effective"], true, "{jump}");
            if expected == sign * 5000 {
                alone += 1;
            }
        }
    }
    assert!(alone > 0, "no jump was measured on its own");
    starts_and_stops_match(&r);
}

/// The completions of the delayed client's operations invoked after the delay `start` and
/// answered within the first half of its duration (and before it was healed, should the run's
/// end have cut it short).
fn ops_answered_early<'h>(history: &'h [Value], start: &Value) -> Vec<&'h Value> {
    let process = start["value"]["targets"][0]
        .as_str()
        .and_then(|t| t.strip_prefix("client "))
        .and_then(|n| n.parse::<u64>().ok())
        .expect("a delay aims at one client");
    let began = start["time"].as_u64().unwrap();
    let half = start["value"]["delay_ms"].as_u64().unwrap() * 1_000_000 / 2;
    let healed = history
        .iter()
        .find(|op| {
            op["process"] == "nemesis"
                && op["f"] == "stop"
                && op["value"]["id"] == start["value"]["id"]
        })
        .and_then(|stop| stop["time"].as_u64())
        .expect("every delay is healed");
    let until = healed.min(began + half);
    // A completion answers the client's last invocation of the same function (renewals
    // running beside an operation complete without one).
    let mut invoked: Option<(u64, &Value)> = None;
    let mut early = Vec::new();
    for op in history.iter().filter(|op| op["process"] == process) {
        let time = op["time"].as_u64().unwrap();
        if op["type"] == "invoke" {
            invoked = Some((time, &op["f"]));
        } else if invoked.is_some_and(|(at, f)| at > began && *f == op["f"]) && time < until {
            early.push(op);
        }
    }
    early
}

#[test]
fn delaying_a_client_holds_its_requests_behind_the_proxy() {
    // With a proxy in front of every server, the lock-aware clock jump still finds the servers
    // that granted the holder's lock.
    let r =
        run_line("--lock redlock --nemesis delay-client,clock-holder --time-limit 8s --seed 39");
    assert_ne!(r.code, 255, "{}\n{}", r.stdout, r.stderr);
    let delays = fault_starts(&r, "delay");
    assert!(!delays.is_empty());
    assert!(
        delays.iter().all(|d| d["value"]["links"] == 6),
        "{delays:?}"
    );
    let history = r.history();
    let held: Vec<_> = history
        .iter()
        .filter(|op| op["f"] == "stop" && op["value"]["fault"] == "delay")
        .collect();
    assert!(
        held.iter().all(|op| op["value"]["effective"] == true),
        "{held:?}"
    );
    // Every chunk the client sends while delayed is held for the whole --delay, and the fault
    // stays for its duration, so an operation invoked after a delay began and answered within its
    // first half was answered without the servers: a timeout, never a success. (Whether the
    // client was holding when the delay began, and so had a release to lose, is chance.)
    let answered_unheard = delays
        .iter()
        .flat_map(|start| ops_answered_early(&history, start))
        .collect::<Vec<_>>();
    assert!(!answered_unheard.is_empty(), "{delays:?}");
    assert!(
        answered_unheard.iter().all(|op| op["type"] != "ok"),
        "{answered_unheard:?}"
    );
    let jumps = fault_starts(&r, "clock-holder");
    assert!(jumps
        .iter()
        .all(|j| j["value"]["targets"].as_array().unwrap().len() >= 3));
    starts_and_stops_match(&r);
}
