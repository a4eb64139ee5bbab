//! Claims are claims, on a real redis-server: a client program that reports a lease ten times
//! longer than the `PX` it set is flagged as disagreeing with the server (its PTTL) in every
//! output, and its pause-holder overlaps are never blamed on a live lease; an honest program's
//! reports agree with every count the server gave.
//!
//! Needs Debian's python3-redis (`.ci/install-packages`).

use crate::common;

use std::path::Path;

use common::{lockpick, run, Run};

const CONTRADICTS: &str = "the client program reported lease bounds the server contradicts";

/// `program` (relative to the repository) with its arguments.
fn example(program: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    root.join(program).display().to_string()
}

/// A pause-holder run of `--lock exec:redis:<command>`: holders frozen 2.5 s past a 1 s lease.
fn paused(command: &str) -> (Run, tempfile::TempDir) {
    paused_with(command, "")
}

/// [`paused`] with more flags.
fn paused_with(command: &str, more: &str) -> (Run, tempfile::TempDir) {
    let store = tempfile::tempdir().unwrap();
    let lock = format!("exec:redis:{command}");
    let mut args = vec!["--lock", lock.as_str()];
    args.extend(
        "--nemesis pause-holder --clients 3 --ttl 1s --fault-duration 2500ms \
         --fault-interval 500ms --time-limit 10s"
            .split_whitespace(),
    );
    args.extend(more.split_whitespace());
    (run(store.path(), &args), store)
}

fn causes(r: &Run) -> Vec<String> {
    r.results["overlapping_holders"]["overlaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["cause"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_program_reporting_ten_times_its_lease_is_contradicted_by_the_server() {
    let (r, _store) = paused(&format!(
        "{} long-bounds",
        example("examples/broken/careless_redis.py")
    ));
    // Frozen holders outlive their real lease: the overlaps are real, and the verdict says so.
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let claims = &r.results["lease_claims"];
    let checked = claims["checked"].as_u64().unwrap();
    assert!(checked > 0, "{claims}");
    // Every grant the server counted had 1 s, never the 10 s reported.
    assert_eq!(claims["contradicted"].as_u64(), Some(checked), "{claims}");
    let first = claims["first"][0].as_str().unwrap();
    assert!(
        first.contains("client said live") && first.contains("server said"),
        "{first}"
    );
    // Its overlaps: never "granted under a live lease" on the strength of the lying report.
    let found = causes(&r);
    assert!(!found.is_empty(), "{}", r.stdout);
    assert!(
        !found.iter().any(|c| c == "granted-under-live-lease"),
        "{found:?}\n{}",
        r.stdout
    );
    assert!(found.iter().any(|c| c == "outlived-lease"), "{found:?}");
    // Every output tells it.
    assert!(
        r.stdout.contains(&format!("told: {CONTRADICTS}")),
        "{}",
        r.stdout
    );
    let read = |name: &str| std::fs::read_to_string(r.dir.join(name)).unwrap();
    let report = read("report.html");
    assert!(
        report.contains(r#"data-finding="contradicted""#),
        "no headline finding"
    );
    assert!(
        report.contains("The client program reported lease bounds"),
        "headline"
    );
    let junit = read("junit.xml");
    let parsed = quick_junit::Report::deserialize_from_str(&junit).unwrap();
    let verdict = parsed.test_suites[0]
        .test_cases
        .iter()
        .find(|c| c.name.as_str() == "verdict")
        .unwrap();
    let out = verdict.system_out.as_ref().map(|o| o.to_string());
    assert!(out.is_some_and(|o| o.contains(CONTRADICTS)), "{junit}");
    assert!(read("summary.md").contains(CONTRADICTS), "summary.md");
}

#[test]
fn an_honest_programs_reports_agree_with_the_server() {
    let (r, _store) = paused(&example("examples/python-redis/lock_client.py"));
    assert!((0..=2).contains(&r.code), "{}\n{}", r.stdout, r.stderr);
    let claims = &r.results["lease_claims"];
    assert!(claims["checked"].as_u64().unwrap() > 0, "{claims}");
    assert_eq!(claims["contradicted"].as_u64(), Some(0), "{claims}");
    assert!(!r.stdout.contains("contradicts"), "{}", r.stdout);
    assert!(!std::fs::read_to_string(r.dir.join("report.html"))
        .unwrap()
        .contains(r#"data-finding="contradicted""#));
}

#[test]
fn a_comparison_tells_the_contradiction_beside_the_cells_verdict() {
    let store = tempfile::tempdir().unwrap();
    let lock = format!(
        "exec:redis:{} long-bounds",
        example("examples/broken/careless_redis.py")
    );
    let output = lockpick()
        .args(["compare", "--locks", &lock, "--nemeses", "pause-holder"])
        .args(["--fencing", "off", "--time-limit", "6s", "--clients", "3"])
        .args(["--ttl", "1s", "--fault-duration", "2500ms"])
        .args(["--fault-interval", "500ms", "--store"])
        .arg(store.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The cell is invalid by its overlaps; the contradiction changes no verdict.
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let dir = std::fs::read_dir(store.path().join("compare"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for file in [
        "compare.md",
        "compare.html",
        "summary.md",
        "compare.json",
        "junit.xml",
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(text.contains(CONTRADICTS), "{file}:\n{text}");
    }
    common::junit_schema::validate(&dir.join("junit.xml")).unwrap();
}

#[test]
fn a_program_whose_extends_claim_ten_times_the_lease_is_contradicted_too() {
    // Honest grants; work longer than the lease makes lockpick's watchdog send `extend`, whose
    // answers claim 10 s: the renewals' own counts contradict them.
    let (r, _store) = paused_with(
        &format!(
            "{} long-extends",
            example("examples/broken/careless_redis.py")
        ),
        "--work 1500ms",
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let renewals_counted = r
        .history()
        .iter()
        .filter(|op| op["f"] == "renew" && op["value"]["server_lease"].is_object())
        .count();
    assert!(renewals_counted > 0, "no renewal was counted: {}", r.stdout);
    let claims = &r.results["lease_claims"];
    assert!(claims["contradicted"].as_u64().unwrap() > 0, "{claims}");
    let found = causes(&r);
    assert!(
        !found.iter().any(|c| c == "granted-under-live-lease"),
        "{found:?}\n{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!("told: {CONTRADICTS}")),
        "{}",
        r.stdout
    );
}
