//! `compare --shard K/N` + `lockpick merge` against one unsharded `compare` of the same matrix
//! and seed, on real Redis servers: the merge must give the same exit code, the same cells with
//! the same verdicts and judgements, the same JUnit cases and the same summary rows. What
//! depends on the runs' timing (counts, latencies, stories, durations, report paths) is left
//! out of the comparison explicitly; everything else must be equal. Then the merge's refusals:
//! a shard missing, given twice, of another seed, changed by hand, or not a shard at all.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::compared::{cells, json, lockpick_in, only_folder, read};
use serde_json::Value;

/// Four cells of a few seconds: two expected valid, one known unsafe, one that breaks its
/// expectation (Redis gives no token, so fencing cannot save it).
const MATRIX: &str = r#"
locks = ["redis"]
nemeses = ["none", "pause-holder"]
fencing = ["off", "on"]
seed = 64
parallel = 2

[knobs]
time-limit = "4s"
clients = 2
ttl = "500ms"
fault-duration = "1s"
fault-interval = "500ms"
quiet = "500ms"

[[expect]]
nemeses = ["pause-holder"]
expect = "invalid"
why = "known unsafe: a paused holder outlives its lease"

[[expect]]
nemeses = ["pause-holder"]
fencing = ["on"]
expect = "no stale write accepted"
why = "hoping the fence saves it"
"#;

/// JUnit's cases: suite, name and the kind of each result, read with python's XML parser.
fn junit_cases(path: &Path) -> Value {
    let script = r#"
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = sorted([suite.get("name"), case.get("name"),
                [[r.tag, r.get("type")] for r in case if r.tag in ("failure", "error", "skipped")]]
               for suite in root.iter("testsuite") for case in suite.iter("testcase"))
print(json.dumps({"tests": root.get("tests"), "failures": root.get("failures"),
                  "errors": root.get("errors"), "cases": cases}))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What `summary.md` says that does not depend on timing: its heading, the counts of cells by
/// state and verdict, the names of the cells it lists as broken or unproven, the grid, and the
/// first five columns (cell, state, verdict, expected, why) of every cell's row.
fn summary_facts(summary: &str) -> Vec<String> {
    let mut facts = Vec::new();
    let mut in_grid = false;
    for line in summary.lines() {
        if line.starts_with("## ") {
            facts.push(line.to_string());
        } else if line.starts_with("**") {
            facts.push(line.split(" · overlapping").next().unwrap().to_string());
        } else if let Some(cell) = line.strip_prefix("- **") {
            facts.push(format!("listed {}", cell.split("**").next().unwrap()));
        } else if line.starts_with("### The grid") {
            in_grid = true;
        } else if line.starts_with("<details>") {
            in_grid = false;
        } else if in_grid && line.starts_with('|') {
            facts.push(line.to_string());
        } else if line.starts_with("| ") && line.contains(" × ") {
            let columns: Vec<&str> = line.split(" | ").take(5).collect();
            facts.push(columns.join(" | "));
        }
    }
    facts.sort();
    facts
}

/// `compare.md`'s rows: every column but the timing-dependent figures (columns 5 to 15).
fn table_rows(table: &str) -> Vec<String> {
    let mut rows: Vec<String> = table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| lock "))
        .map(|l| {
            let c: Vec<&str> = l.split(" | ").collect();
            [&c[..4], &c[15..]].concat().join(" | ")
        })
        .collect();
    rows.sort();
    rows
}

fn title(page: &str) -> String {
    let start = page.find("<title>").unwrap() + "<title>".len();
    page[start..start + page[start..].find("</title>").unwrap()].to_string()
}

#[test]
fn four_shards_merged_write_what_one_compare_of_the_same_seed_writes() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    std::fs::write(dir.join("lockpick.toml"), MATRIX).unwrap();
    let compare = |extra: &[&str]| {
        let mut args = vec!["compare", "--matrix", "lockpick.toml"];
        args.extend(extra);
        lockpick_in(dir, &args)
    };

    let whole = compare(&["--store", "whole"]);
    let whole_dir = only_folder(&dir.join("whole"));
    let mut shards = Vec::new();
    for k in 1..=4 {
        let (store, to) = (format!("store-{k}"), format!("shard-{k}"));
        let shard = format!("{k}/4");
        let done = compare(&["--shard", &shard, "--store", &store, "--report-to", &to]);
        // One cell each: the split gives every shard one of the four equal cells.
        let part = json(&dir.join(&to));
        assert_eq!(part["cells"].as_array().unwrap().len(), 1, "{}", done.shown);
        assert_eq!(part["shard"]["k"], k);
        shards.push(to);
    }
    // Given in any order.
    let mut merge_args = vec!["merge", "--store", "merged", "--report-to", "merged-out"];
    merge_args.extend(shards.iter().rev().map(String::as_str));
    let merged = lockpick_in(dir, &merge_args);
    let merged_dir = only_folder(&dir.join("merged"));

    assert_eq!(
        merged.code, whole.code,
        "{}\n---\n{}",
        whole.shown, merged.shown
    );
    assert_eq!(
        whole.code, 1,
        "a cell breaks its expectation: {}",
        whole.shown
    );
    let (w, m) = (json(&whole_dir), json(&merged_dir));
    for key in ["seed", "matrix", "interrupted", "exit_code"] {
        assert_eq!(w[key], m[key], "{key}");
    }
    assert!(m.get("shard").is_none(), "the merge is a whole comparison");
    assert_eq!(cells(&w), cells(&m));
    let judgements: Vec<&str> = (w["cells"].as_array().unwrap().iter())
        .map(|c| c["judgement"].as_str().unwrap())
        .collect();
    assert!(
        judgements.contains(&"broken") && judgements.contains(&"holds"),
        "{judgements:?}"
    );
    assert_eq!(
        junit_cases(&whole_dir.join("junit.xml")),
        junit_cases(&merged_dir.join("junit.xml"))
    );
    let (ws, ms) = (
        read(&whole_dir, "summary.md"),
        read(&merged_dir, "summary.md"),
    );
    assert_eq!(summary_facts(&ws), summary_facts(&ms), "{ws}\n---\n{ms}");
    // Heading, counts, the broken cell, the grid (4 lines), the 4 rows.
    assert_eq!(summary_facts(&ws).len(), 11, "{ws}");
    let (wt, mt) = (
        read(&whole_dir, "compare.md"),
        read(&merged_dir, "compare.md"),
    );
    assert_eq!(table_rows(&wt), table_rows(&mt));
    assert_eq!(table_rows(&wt).len(), 4);
    let (wp, mp) = (
        read(&whole_dir, "compare.html"),
        read(&merged_dir, "compare.html"),
    );
    assert_eq!(title(&wp), title(&mp));
    // The artifact folder: the merged outputs as real files, no links.
    for file in [
        "summary.md",
        "junit.xml",
        "compare.json",
        "compare.html",
        "compare.md",
    ] {
        let meta = std::fs::symlink_metadata(dir.join("merged-out").join(file)).unwrap();
        assert!(meta.file_type().is_file(), "{file}");
        assert_eq!(read(&dir.join("merged-out"), file), read(&merged_dir, file));
    }

    // The merged comparison keeps the runs it judged, and its summary names them within the
    // published artifact: a broken cell's reproduction and shrink lines point into `runs/`.
    let out = dir.join("merged-out");
    let summary = read(&out, "summary.md");
    let reproduce = (summary.lines())
        .find(|l| l.contains("reproduce with"))
        .unwrap_or_else(|| panic!("no reproduce line: {summary}"));
    assert!(reproduce.contains("runs/"), "{reproduce}");
    let shrink = (summary.lines())
        .find(|l| l.contains("lockpick shrink"))
        .unwrap_or_else(|| panic!("no shrink line: {summary}"));
    let kept = shrink
        .split('`')
        .nth(1)
        .and_then(|c| c.strip_prefix("lockpick shrink "))
        .unwrap_or_else(|| panic!("{shrink}"));
    assert!(kept.starts_with("runs/"), "{shrink}");
    assert!(
        !shrink.contains(dir.to_str().unwrap()),
        "an absolute path: {shrink}"
    );
    for file in [
        "history.jsonl",
        "command.txt",
        "schedule.json",
        "results.json",
    ] {
        assert!(out.join(kept).join(file).is_file(), "{kept}/{file}");
    }

    refusals(dir, &shards);
    forgeries(dir, &shards);
}

/// A copy of shard folder `from` as `to`, with `change` made to its `compare.json`.
fn forged(dir: &Path, from: &str, to: &str, change: impl Fn(String) -> String) {
    let copy = Command::new("cp")
        .args(["-r", from, to])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(copy.success());
    let text = change(read(&dir.join(to), "compare.json"));
    std::fs::write(dir.join(to).join("compare.json"), text).unwrap();
}

/// A shard whose record says what its own histories do not show is refused, however its
/// fingerprint reads: the merge judges every repeat again from the history the shard kept.
fn forgeries(dir: &Path, shards: &[String]) {
    let refused = |given: &[String], words: &str| {
        let mut all = vec!["merge", "--store", "forged-store"];
        all.extend(given.iter().map(String::as_str));
        let done = lockpick_in(dir, &all);
        assert_eq!(done.code, 254, "{given:?}: {}", done.shown);
        assert!(
            done.shown.contains(words),
            "{given:?}: wanted {words:?} in {}",
            done.shown
        );
        assert_eq!(
            done.shown.trim().lines().count(),
            1,
            "one line: {}",
            done.shown
        );
        assert!(!dir.join("forged-store").exists(), "{given:?} left a store");
    };
    let record = |s: &str| read(&dir.join(s), "compare.json");
    let with = |k: usize, forged_as: &str| {
        let mut given = shards.to_vec();
        given[k] = forged_as.to_string();
        given
    };
    // The shard whose cell was invalid, told as valid: what held the forged gate green.
    let invalid = (0..shards.len())
        .find(|&k| record(&shards[k]).contains("\"verdict\": \"invalid\""))
        .expect("a shard with an invalid cell");
    forged(dir, &shards[invalid], "flipped", |t| {
        t.replace("\"verdict\": \"invalid\"", "\"verdict\": \"valid\"")
    });
    refused(
        &with(invalid, "flipped"),
        "its record says valid (overlapping holders",
    );
    // A valid cell with 99 stale writes written into its record.
    let valid = (0..shards.len())
        .find(|&k| record(&shards[k]).contains("\"verdict\": \"valid\""))
        .expect("a shard with a valid cell");
    forged(dir, &shards[valid], "ninety-nine", |t| {
        t.replace("\"stale_writes\": 0", "\"stale_writes\": 99")
    });
    refused(&with(valid, "ninety-nine"), "stale writes accepted 99");
    // A count past the largest there is is no count at all.
    forged(dir, &shards[valid], "too-many", |t| {
        t.replace(
            "\"stale_writes\": 0",
            "\"stale_writes\": 18446744073709551616",
        )
    });
    refused(&with(valid, "too-many"), "cannot be read");
    // A record with its kept runs taken away proves nothing.
    forged(dir, &shards[invalid], "no-runs", |t| t);
    std::fs::remove_dir_all(dir.join("no-runs").join("runs")).unwrap();
    refused(&with(invalid, "no-runs"), "is missing");
    // Another cell's history put in the place of the invalid one's.
    forged(dir, &shards[invalid], "swapped", |t| t);
    let theirs = only_child(&dir.join(&shards[valid]).join("runs"));
    let ours = only_child(&dir.join("swapped").join("runs"));
    std::fs::remove_dir_all(&ours).unwrap();
    let copy = Command::new("cp")
        .arg("-r")
        .arg(&theirs)
        .arg(&ours)
        .status();
    assert!(copy.unwrap().success());
    refused(
        &with(invalid, "swapped"),
        "was not run with the cell's command",
    );
}

fn only_child(dir: &Path) -> std::path::PathBuf {
    let mut children: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(children.len(), 1, "{children:?}");
    children.pop().unwrap()
}

/// Every bad set of shards is refused with its reason, exit 254, and no store made.
fn refusals(dir: &Path, shards: &[String]) {
    let refused = |args: &[&str], words: &str| {
        let mut all = vec!["merge", "--store", "refused"];
        all.extend(args);
        let done = lockpick_in(dir, &all);
        assert_eq!(done.code, 254, "{args:?}: {}", done.shown);
        assert!(
            done.shown.contains(words),
            "{args:?}: wanted {words:?} in {}",
            done.shown
        );
        assert!(!dir.join("refused").exists(), "{args:?} left a store");
    };
    let s: Vec<&str> = shards.iter().map(String::as_str).collect();
    refused(&s[..3], "shard 4/4 missing");
    refused(&[s[0], s[1], s[2], s[3], s[1]], "shard 2/4 is given twice");
    refused(&[s[0], s[1], s[2], "merged-out"], "not a shard's");
    refused(&[s[0], s[1], s[2], "no-such-folder"], "does not exist");

    // A shard of another seed: one more real run of a single cell.
    let other = lockpick_in(
        dir,
        &[
            "compare",
            "--matrix",
            "lockpick.toml",
            "--seed",
            "65",
            "--shard",
            "4/4",
        ],
    );
    let other_dir = only_folder(&dir.join("store"));
    assert!(other.code >= 0, "{}", other.shown);
    let other_dir = other_dir.to_str().unwrap();
    refused(
        &[s[0], s[1], s[2], other_dir],
        "shards of different comparisons (seed 64 and seed 65)",
    );

    // A shard changed by hand: its expectation no longer matches its fingerprint.
    let edited = dir.join("edited");
    std::fs::create_dir(&edited).unwrap();
    let text =
        read(&dir.join(s[3]), "compare.json").replace("\"no stale write accepted\"", "\"valid\"");
    std::fs::write(edited.join("compare.json"), text).unwrap();
    refused(
        &[s[0], s[1], s[2], "edited"],
        "does not match its fingerprint",
    );
}
