//! `compare --shard`'s own refusals (a bad K/N, no seed: exit 254, nothing made), and a merge of
//! a comparison with an n/a cell and repeats against the unsharded one, on real Redis.

use crate::common;

use common::compared::{cells, json, lockpick_in, only_folder};
use serde_json::Value;

const MATRIX: &str = "locks = [\"redis\"]\nnemeses = [\"none\"]\nseed = 3\n";

#[test]
fn a_bad_shard_is_refused_before_anything_is_made() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    std::fs::write(dir.join("lockpick.toml"), MATRIX).unwrap();
    for shard in ["0/2", "3/2", "x/2", "1/0", "2", "1/2/3", "+1/2", "1/ 2"] {
        let done = lockpick_in(
            dir,
            &[
                "compare",
                "--matrix",
                "lockpick.toml",
                "--shard",
                shard,
                "--store",
                "s",
            ],
        );
        assert_eq!(done.code, 254, "--shard {shard}: {}", done.shown);
        assert!(
            done.shown.contains("K/N"),
            "--shard {shard}: {}",
            done.shown
        );
        assert!(!dir.join("s").exists(), "--shard {shard} made a store");
    }
    // Without a seed each shard would run another: refused.
    let done = lockpick_in(
        dir,
        &[
            "compare", "--locks", "redis", "--shard", "1/2", "--store", "s",
        ],
    );
    assert_eq!(done.code, 254, "{}", done.shown);
    assert!(done.shown.contains("needs a seed"), "{}", done.shown);
    assert!(!dir.join("s").exists());
}

#[test]
fn an_na_cell_and_repeats_merge_as_they_compare() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    // Redis runs one server: partition-halves is n/a for it. Two repeats of the other cell.
    let args = [
        "compare",
        "--locks",
        "redis",
        "--nemeses",
        "none,partition-halves",
        "--time-limit",
        "3s",
        "--clients",
        "2",
        "--quiet",
        "500ms",
        "--repeat",
        "2",
        "--seed",
        "9",
    ];
    let with = |extra: &[&str]| {
        let mut all = args.to_vec();
        all.extend(extra);
        lockpick_in(dir, &all)
    };
    let whole = with(&["--store", "whole"]);
    for k in ["1/2", "2/2"] {
        let to = format!("shard-{}", &k[..1]);
        let done = with(&["--shard", k, "--store", "s", "--report-to", &to]);
        assert!(done.code == 0 || done.code == 2, "{}", done.shown);
    }
    let merged = lockpick_in(dir, &["merge", "--store", "merged", "shard-1", "shard-2"]);
    assert_eq!(
        merged.code, whole.code,
        "{}\n---\n{}",
        whole.shown, merged.shown
    );
    let (w, m) = (
        json(&only_folder(&dir.join("whole"))),
        json(&only_folder(&dir.join("merged"))),
    );
    assert_eq!(cells(&w), cells(&m));
    let outcomes: Vec<&str> = (m["cells"].as_array().unwrap().iter())
        .map(|c| c["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["ran", "not-applicable"]);
    // Both repeats, with their seeds, as the whole comparison has them.
    let seeds = |v: &Value| -> Vec<Value> {
        (v["cells"][0]["repeats"].as_array().unwrap().iter())
            .map(|r| r["seed"].clone())
            .collect()
    };
    assert_eq!(seeds(&w).len(), 2);
    assert_eq!(seeds(&w), seeds(&m));
    assert_eq!(w["cells"][0]["reason"], m["cells"][0]["reason"]);
    assert_eq!(w["cells"][1]["reason"], m["cells"][1]["reason"]);
}
