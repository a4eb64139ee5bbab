use super::*;

fn cell(lock: &str, nemesis: &str, verdict: Option<Validity>, gate: Gate) -> SummaryCell {
    SummaryCell {
        lock: lock.to_string(),
        nemesis: nemesis.to_string(),
        fencing: "on".to_string(),
        verdict,
        repeats: None,
        na_reason: verdict.is_none().then(|| "it needs 5 servers".to_string()),
        expected: Some(("valid".to_string(), gate)),
        counts: Counts {
            overlaps: 2,
            token_violations: 1,
            ..Counts::default()
        },
        story: Some("client 1 paused | and woke".to_string()),
        report: verdict.map(|_| format!("../{lock}/report.html")),
    }
}

#[test]
fn the_grid_has_a_row_per_lock_a_column_per_nemesis_and_names_the_first_broken_cell() {
    let cells = [
        cell("redis", "none", Some(Validity::Valid), Gate::Met),
        cell(
            "redis",
            "pause-holder",
            Some(Validity::Invalid),
            Gate::Broken("expected valid, found invalid".into()),
        ),
        cell("etcd", "none", Some(Validity::Valid), Gate::Met),
        cell("etcd", "partition-ring", None, Gate::Met),
    ];
    let md = render("lockpick compare", &cells, &[]);
    let grid: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| ") && !l.contains("× "))
        .collect();
    assert_eq!(
        grid[0],
        "| lock (fencing on) | none | pause-holder | partition-ring |"
    );
    assert_eq!(grid.len(), 4, "{md}");
    assert!(
        grid[1].contains("[❌ invalid](../redis/report.html) · **NOT as expected**"),
        "{md}"
    );
    assert!(grid[2].contains("➖ n/a"), "{md}");
    assert!(md.contains(
        "**First expectation not met**: redis × pause-holder (fencing on): expected valid"
    ));
    assert!(md.contains("overlapping holders 8"), "{md}");
    assert!(md.contains("token violations 4"), "{md}");
    assert!(md.contains("n/a: it needs 5 servers"), "{md}");
    assert!(md.contains("client 1 paused \\| and woke") || !md.contains("First violation"));
}

#[test]
fn a_summary_is_appended_to_the_step_summary_file() {
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step.md");
    std::fs::write(&step, "before\n").unwrap();
    // Set for this test only: no other unit test reads it.
    std::env::set_var("GITHUB_STEP_SUMMARY", &step);
    publish(dir.path(), "## hello").unwrap();
    std::env::remove_var("GITHUB_STEP_SUMMARY");
    assert_eq!(
        std::fs::read_to_string(&step).unwrap(),
        "before\n## hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(SUMMARY)).unwrap(),
        "## hello"
    );
}

#[test]
fn a_runs_hostile_lock_name_story_and_notes_stay_text_in_its_summary() {
    let hostile = "exec:redis:./c '<img src=x onerror=alert(1)> @everyone </details>\n/approve'";
    let mut invalid = cell(hostile, "none\n/merge", Some(Validity::Invalid), Gate::Met);
    invalid.expected = None;
    // A run links its report only through `Links`, which percent-encodes the path.
    invalid.report = None;
    invalid.story = Some("client 1 said <b>@octocat</b>\n/approve #12".to_string());
    let notes = ["Not proven: a program said\n/approve https://evil.example".to_string()];
    let md = render(&format!("lockpick run {hostile}"), &[invalid], &notes);
    for line in md.lines() {
        assert!(!line.starts_with('/'), "{line:?} in\n{md}");
    }
    for raw in ["<img", "<b>", "@everyone", "@octocat", "https://", "#12"] {
        assert!(!md.contains(raw), "{raw} in\n{md}");
    }
    assert_eq!(md.matches("</details>").count(), 1, "{md}");
    assert!(md.contains("&lt;img src=x onerror=alert(1)&gt;"), "{md}");
}

/// A history in which the primary at 10.0.0.1 granted the lock, a leader fault recorded
/// leadership moving to 10.0.0.2, and the new primary granted it again under the live lease.
fn lost_in_a_failover() -> Results {
    use serde_json::json;
    let leader = |node: &str, ip: &str| json!({"node": node, "address": ip, "term": 1});
    let granted = |acq: &str, ok: u64, ip: &str| {
        json!({"acquisition": acq, "token": null, "nodes": [ip],
            "lease": {"live_until": ok + 990, "expires_by": ok + 1010}})
    };
    let fault = json!({"id": 1, "fault": "kill", "targets": ["n1"], "effective": true});
    let (mut start, mut stop) = (fault.clone(), fault);
    start["leader"] = leader("n1", "10.0.0.1:6379");
    stop["leader_after"] = leader("n2", "10.0.0.2:6379");
    stop["leadership_moved"] = json!(true);
    let lines = [
        (
            0,
            json!("harness"),
            "info",
            "setup",
            json!({"lock": "redis-sentinel", "token": "none",
            "ttl_ms": 1, "fencing": "off", "nemesis": "kill-leader"}),
        ),
        (
            1,
            json!(0),
            "invoke",
            "acquire",
            json!({"acquisition": "0.1"}),
        ),
        (
            10,
            json!(0),
            "ok",
            "acquire",
            granted("0.1", 10, "10.0.0.1:6379"),
        ),
        (50, json!("nemesis"), "info", "start", start),
        (
            200,
            json!(1),
            "invoke",
            "acquire",
            json!({"acquisition": "1.1"}),
        ),
        (
            210,
            json!(1),
            "ok",
            "acquire",
            granted("1.1", 210, "10.0.0.2:6379"),
        ),
        (400, json!("nemesis"), "info", "stop", stop),
        (
            800,
            json!(1),
            "invoke",
            "release",
            json!({"acquisition": "1.1"}),
        ),
        (
            900,
            json!(0),
            "invoke",
            "release",
            json!({"acquisition": "0.1"}),
        ),
    ];
    let text: String = lines
        .into_iter()
        .enumerate()
        .map(|(index, (time, process, kind, f, value))| {
            let line = json!({"index": index, "time": time, "process": process, "type": kind,
                "f": f, "value": value});
            format!("{line}\n")
        })
        .collect();
    lockpick_checkers::check_reader(text.as_bytes())
}

#[test]
fn a_summary_counts_and_tells_an_overlap_lost_in_a_failover() {
    let results = lost_in_a_failover();
    let mut run = cell(
        "redis-sentinel",
        "kill-leader",
        Some(results.valid),
        Gate::Met,
    );
    run.counts = Counts::of(&results);
    run.story = results.stories.first().map(|s| s.shortened());
    let md = render("lockpick run", &[run], &[]);
    assert!(md.contains("| lost in a failover |"), "{md}");
    assert!(md.contains("lost in a failover 1"), "{md}");
    assert!(
        md.contains("the cause: the lock was lost in a failover"),
        "{md}"
    );
}
