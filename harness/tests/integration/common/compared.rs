//! Running `lockpick compare` and `lockpick merge` in a folder and reading what they wrote, for
//! the shard and merge tests.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::lockpick;

/// How a command ended, and what it printed.
pub struct Done {
    pub code: i32,
    pub shown: String,
}

pub fn lockpick_in(dir: &Path, args: &[&str]) -> Done {
    let mut command = lockpick();
    command.current_dir(dir).args(args);
    for key in [
        "CI_JOB_URL",
        "GITHUB_SERVER_URL",
        "GITHUB_RUN_ID",
        "GITHUB_STEP_SUMMARY",
    ] {
        command.env_remove(key);
    }
    let output = command.output().unwrap();
    Done {
        code: output.status.code().unwrap_or(-1),
        shown: format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

pub fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{dir:?}/{file}: {e}"))
}

pub fn json(dir: &Path) -> Value {
    serde_json::from_str(&read(dir, "compare.json")).unwrap()
}

/// Each cell of `compare.json` without what depends on timing.
pub fn cells(compare: &Value) -> Vec<Value> {
    let keep = [
        "lock",
        "nemesis",
        "fencing",
        "verdict",
        "outcome",
        "judgement",
        "expected",
    ];
    let keep = keep.into_iter().chain(["why_expected", "seed"]);
    let keep: Vec<&str> = keep.collect();
    compare["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            keep.iter()
                .map(|k| (k.to_string(), c[*k].clone()))
                .collect()
        })
        .collect()
}

pub fn only_folder(store: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(store.join("compare"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}
