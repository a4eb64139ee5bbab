//! `lockpick bench --quick`: every part of the benchmark runs and its figures come out as one
//! line of JSON with every section in place. Only the shape is checked, never the speed.

use crate::common;

use common::lockpick;
use serde_json::Value;

#[test]
fn the_quick_bench_prints_every_section() {
    let output = lockpick()
        .args(["bench", "--quick"])
        .output()
        .expect("lockpick runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "lockpick bench --quick failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    let figures: Value = serde_json::from_str(last).expect("the last line is JSON");
    assert_eq!(figures["quick"], true);

    let checker = figures["checker"].as_array().expect("checker figures");
    assert!(checker.iter().any(|r| r["shape"] == "correct"));
    assert!(checker.iter().any(|r| r["shape"] == "overlapping"));
    for row in checker {
        assert!(row["lines"].as_u64().unwrap() >= 10_000, "{row}");
        for part in ["check", "parse_limit"] {
            assert!(row[part]["seconds"].as_f64().unwrap() > 0.0, "{row}");
            assert!(row[part]["cpu_seconds"].as_f64().unwrap() > 0.0, "{row}");
            assert!(row[part]["peak_bytes"].as_u64().unwrap() > 0, "{row}");
        }
        let expected = if row["shape"] == "correct" {
            "valid"
        } else {
            "invalid"
        };
        assert_eq!(row["verdict"], expected, "{row}");
    }

    let report = &figures["report"][0];
    assert!(report["report_bytes"].as_u64().unwrap() > 0, "{report}");
    let controller = &figures["controller"];
    assert!(controller["lines"].as_u64().unwrap() > 0, "{controller}");
    assert!(
        controller["cpu_us_per_line"].as_f64().is_some(),
        "{controller}"
    );

    let services: Vec<&str> = figures["startup"]
        .as_array()
        .expect("start-up figures")
        .iter()
        .map(|r| r["service"].as_str().unwrap())
        .collect();
    assert!(services.contains(&"redis-server"), "{services:?}");

    let violations = figures["violations"].as_array().expect("violation figures");
    for lock in ["redis", "redlock"] {
        for nemesis in ["pause-holder", "pause-node"] {
            let row = violations
                .iter()
                .find(|r| r["lock"] == lock && r["nemesis"] == nemesis)
                .unwrap_or_else(|| panic!("no row for {lock} {nemesis}"));
            assert_eq!(row["seeds"], 2, "{row}");
            let found = row["found"].as_u64().unwrap();
            assert!(found <= 2, "{row}");
            assert_eq!(row["median_seconds"].is_null(), found == 0, "{row}");
        }
    }
    // Each shifted round counted only once the shift showed (the bench fails otherwise).
    let clock_shift = figures["clock_shift"]
        .as_array()
        .expect("clock shift figures");
    assert_eq!(clock_shift.len(), 5, "{clock_shift:?}");
    assert!(
        clock_shift.iter().any(|r| r["what"]
            .as_str()
            .is_some_and(|w| w.starts_with("etcd put"))),
        "{clock_shift:?}"
    );
    for row in clock_shift {
        assert!(row["plain"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["shifted"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["median_paired_overhead_percent"].is_f64(), "{row}");
    }
    // Every table is printed before the JSON.
    for title in [
        "checker",
        "report",
        "controller",
        "service start-up",
        "time to first",
        "clock shift",
    ] {
        assert!(stdout.contains(title), "no {title} table:\n{stdout}");
    }
}

#[test]
fn the_stability_bench_counts_the_runs_off_their_expectation() {
    let output = lockpick()
        .args(["bench", "stability", "--quick", "--seeds", "1"])
        .output()
        .expect("lockpick runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    let figures: Value = serde_json::from_str(last).expect("the last line is JSON");
    let rows = figures["stability"].as_array().expect("stability figures");
    assert_eq!(
        rows.len(),
        10,
        "5 locks, with and without pause-holder: {stdout}"
    );
    let off: u64 = rows.iter().map(|r| r["off"].as_u64().unwrap()).sum();
    assert!(
        stdout.contains(&format!("off their expectation: {off} of 10 runs")),
        "{stdout}"
    );
    // Every built-in lock gives its expected answer: the bench prints 0 and exits 0.
    assert_eq!(off, 0, "{stdout}");
    assert_eq!(output.status.code(), Some(0), "{stdout}");
}

#[test]
fn the_gate_bench_runs_the_example_gate_one_at_a_time_and_automatic_with_the_same_verdicts() {
    let output = lockpick()
        .args(["bench", "gate", "--quick"])
        .output()
        .expect("lockpick runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    let figures: Value = serde_json::from_str(last).expect("the last line is JSON");
    let rows = figures["gate"].as_array().expect("gate figures");
    assert_eq!(rows.len(), 2, "{figures}");
    assert_eq!(
        (&rows[0]["parallel"], &rows[1]["parallel"]),
        (&"--parallel 1".into(), &"automatic".into())
    );
    assert_eq!(rows[0]["at_once"], 1, "{figures}");
    assert!(rows[1]["at_once"].as_u64().unwrap() >= 1, "{figures}");
    assert!(
        rows[1]["reason"]
            .as_str()
            .unwrap()
            .starts_with("automatic: "),
        "{figures}"
    );
    for row in rows {
        assert_eq!(row["cells"], 10, "{row}");
        assert!(row["wall_seconds"].as_f64().unwrap() > 0.0, "{row}");
    }
    assert_eq!(rows[0]["verdicts"], rows[1]["verdicts"]);
    assert_eq!(rows[1]["identical"], true, "{figures}");
    assert!(stdout.contains("the example gate"), "{stdout}");
}
