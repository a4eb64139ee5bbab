//! Reports people can read: the story in the terminal, the HTML report rendered by a real
//! headless Chromium, JUnit that parses as XML, the store's index, and `lockpick compare`.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::{lockpick, run_line};
use serde_json::json;

/// Opens `page` in headless Chromium and returns the DOM after its scripts ran.
fn rendered_dom(page: &Path, screenshot: Option<&Path>) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut command = Command::new("chromium");
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
        ])
        .args([
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--window-size=1300,1400");
    if let Some(png) = screenshot {
        let shot = Command::new("chromium")
            .args(command.get_args())
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", page.display()))
            .output()
            .expect("chromium runs (Debian package chromium)");
        assert!(
            png.exists(),
            "no screenshot: {}",
            String::from_utf8_lossy(&shot.stderr)
        );
    }
    let output = command
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (Debian package chromium)");
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn assert_rendered(dom: &str) {
    assert!(
        dom.contains("data-rendered=\"ok\""),
        "the page did not finish rendering"
    );
    assert!(!dom.contains("data-error"), "a script error happened");
    for part in [
        "id=\"timeline\"",
        "id=\"latency\"",
        "id=\"throughput\"",
        "id=\"stories\"",
    ] {
        assert!(dom.contains(part), "{part} is missing");
    }
}

#[test]
fn a_violating_runs_report_tells_its_story_and_renders_in_chromium() {
    let r = run_line("--lock redis --nemesis pause-holder --time-limit 6s --ttl 500ms --seed 51");
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("the story of the first violation"),
        "{}",
        r.stdout
    );
    // A frozen holder outlived its lease: the summary says so by cause, not by guess.
    assert!(r.stdout.contains("outlived their lease"), "{}", r.stdout);
    assert!(r.stdout.contains("a stale access"), "{}", r.stdout);
    let report = r.dir.join("report.html");
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        !html.contains("http://") || !html.contains("src=\"http"),
        "no network"
    );
    assert!(
        html.contains("a stale access"),
        "the report tells the stale write's story"
    );
    // summary.md quotes the story shortened to its first step, its cause and the violation,
    // and links no path relative to the store (dead in a pull-request comment).
    let summary = std::fs::read_to_string(r.dir.join("summary.md")).unwrap();
    let first = summary
        .lines()
        .find(|l| l.starts_with("**First violation**"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(first.contains("acquired the lock"), "{first}");
    assert!(first.contains("!! client"), "{first}");
    assert!(first.contains("lease had certainly ended"), "{first}");
    assert!(!summary.contains("](report.html)"), "{summary}");
    // Keep one screenshot of a violating run's report with the test output.
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("violating-report.png");
    let _ = std::fs::remove_file(&screenshot);
    let dom = rendered_dom(&report, Some(&screenshot));
    assert_rendered(&dom);
    assert!(
        std::fs::metadata(&screenshot).unwrap().len() > 10_000,
        "an empty screenshot"
    );

    // JUnit parses as XML: the verdict and two checkers fail (Redis gives no token to check), and
    // the first failure, the verdict, carries the story.
    let junit = r.dir.join("junit.xml");
    let parsed = Command::new("python3")
        .args([
            "-c",
            "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); \
                      f = d.getElementsByTagName('failure'); \
                      print(len(d.getElementsByTagName('testcase')), len(f)); \
                      print(f[0].firstChild.data)",
        ])
        .arg(&junit)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&parsed.stdout);
    assert!(
        parsed.status.success(),
        "junit.xml is not XML: {}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    // Cases: the verdict, overlaps, stale writes, tokens and the jam; three of them fail.
    assert!(text.starts_with("5 3"), "{text}");
    assert!(text.contains("acquired the lock"), "{text}");

    // The store's index lists the run.
    let index =
        std::fs::read_to_string(r.dir.parent().unwrap().parent().unwrap().join("index.html"))
            .unwrap();
    assert!(
        index.contains("redis-pause-holder") && index.contains("invalid"),
        "{index}"
    );
}

/// A history of `holds` serial holds by 5 clients, each with a read and a write.
fn synthetic_history(holds: u64) -> String {
    let mut lines = Vec::new();
    let mut push = |time: u64,
                    process: serde_json::Value,
                    kind: &str,
                    f: &str,
                    value: serde_json::Value| {
        let index = lines.len();
        lines.push(json!({"index": index, "time": time, "process": process, "type": kind, "f": f, "value": value}).to_string());
    };
    push(
        0,
        json!("harness"),
        "info",
        "setup",
        json!({"lock": "redis", "token": "none", "ttl_ms": 1000, "fencing": "off"}),
    );
    let mut seq = 0;
    let ms = 1_000_000;
    for i in 0..holds {
        let p = i % 5;
        let acq = format!("{p}.{i}");
        let t = 1 + i * 6 * ms;
        let v = json!({"acquisition": acq, "token": null});
        push(
            t,
            json!(p),
            "invoke",
            "acquire",
            json!({"acquisition": acq}),
        );
        push(t + ms, json!(p), "ok", "acquire", v.clone());
        for (offset, op) in [(2, "read"), (4, "write")] {
            push(t + offset * ms, json!(p), "invoke", op, v.clone());
            seq += 1;
            push(
                t + offset * ms,
                json!("resource"),
                "ok",
                "access",
                json!({"seq": seq, "process": p, "acquisition": acq, "token": null, "op": op, "value": 0}),
            );
            push(t + offset * ms, json!(p), "ok", op, v.clone());
        }
        push(
            t + 5 * ms,
            json!(p),
            "invoke",
            "release",
            json!({"acquisition": acq}),
        );
        push(
            t + 5 * ms,
            json!(p),
            "ok",
            "release",
            json!({"acquisition": acq}),
        );
    }
    lines.join("\n") + "\n"
}

#[test]
fn a_20000_operation_history_gives_a_small_report_that_renders() {
    let dir = tempfile::tempdir().unwrap();
    let history = synthetic_history(2100);
    assert!(history.lines().count() >= 20_000);
    std::fs::write(dir.path().join("history.jsonl"), history).unwrap();
    let output = lockpick().arg("report").arg(dir.path()).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = dir.path().join("report.html");
    let size = std::fs::metadata(&report).unwrap().len();
    assert!(size < 10_000_000, "the report is {size} bytes");
    let started = Instant::now();
    let dom = rendered_dom(&report, None);
    // A figure to read, not a bar to pass: timing belongs in benchmarks.
    eprintln!(
        "20,000-operation report: {size} bytes, rendered by Chromium in {:?}",
        started.elapsed()
    );
    assert!(dom.contains("data-rendered=\"ok\""));
    assert!(!dom.contains("data-error"));
}

#[test]
fn compare_shows_the_pattern_the_field_argues_about() {
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .args([
            "compare",
            "--locks",
            "redis,redlock,etcd,zookeeper",
            "--nemeses",
            "none,pause-holder",
        ])
        .args([
            "--fencing",
            "on",
            "--time-limit",
            "8s",
            "--parallel",
            "4",
            "--seed",
            "52",
            "--store",
        ])
        .arg(store.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Without a matrix file every cell is expected valid: the Redis family's cells are not.
    assert_eq!(
        output.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<Vec<String>> = stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| lock"))
        .map(|l| {
            l.split('|')
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 8, "{stdout}");
    for row in &rows {
        let (lock, nemesis) = (row[0].as_str(), row[1].as_str());
        let overlaps: u64 = row[4].parse().unwrap();
        let stale: u64 = row[5].parse().unwrap();
        // lock, nemesis, fencing, verdict, 7 counts (the last: jams), then acquisitions.
        let acquisitions: u64 = row[11].parse().unwrap();
        assert!(acquisitions > 5, "{row:?}");
        match (nemesis, lock) {
            ("none", _) => assert_eq!((overlaps, stale), (0, 0), "{row:?}"),
            ("pause-holder", "redis" | "redlock") => {
                assert!(
                    overlaps > 0 && stale > 0,
                    "the Redis family, fenced or not: {row:?}"
                )
            }
            ("pause-holder", _) => {
                assert!(overlaps > 0 && stale == 0, "tokens and a fence: {row:?}")
            }
            _ => unreachable!(),
        }
    }
    let compare = std::fs::read_dir(store.path().join("compare"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let html = std::fs::read_to_string(compare.join("compare.html")).unwrap();
    // Every cell links its report in the grid and in the table; the four invalid cells,
    // expected valid without a matrix, are listed first as broken, linked too.
    let broken = rows.iter().filter(|r| r[3] == "invalid").count();
    assert_eq!(broken, 4, "{stdout}");
    assert_eq!(
        html.matches("report.html").count(),
        16 + broken,
        "every cell links its report, in the grid and in the table"
    );
    assert!(compare.join("compare.md").exists());
}
