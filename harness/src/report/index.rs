//! The store's index page, `<store>/index.html`: every run, newest first, with its verdict and
//! a link to its report.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;
use maud::{html, PreEscaped, DOCTYPE};
use serde_json::Value;

use super::{REPORT, STYLE};
use crate::store;

/// One finished run in the store.
#[derive(Debug, PartialEq)]
pub struct StoredRun {
    /// The run folder's name: its start time, so that names sort by age.
    pub stamp: String,
    /// The run's group, `redis-pause-holder`.
    pub name: String,
    pub dir: PathBuf,
    pub verdict: String,
}

/// The finished runs of a store (those with results), newest first.
pub fn runs(store: &Path) -> Result<Vec<StoredRun>> {
    let mut runs = Vec::new();
    for group in fs::read_dir(store)?.flatten() {
        let Ok(entries) = fs::read_dir(group.path()) else {
            continue;
        };
        for run in entries.flatten() {
            let dir = run.path();
            if dir.is_symlink() || !dir.is_dir() {
                continue;
            }
            let Ok(text) = fs::read_to_string(dir.join(store::RESULTS)) else {
                continue;
            };
            let results: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            runs.push(StoredRun {
                stamp: run.file_name().to_string_lossy().to_string(),
                name: group.file_name().to_string_lossy().to_string(),
                verdict: results["valid"].as_str().unwrap_or("unknown").to_string(),
                dir,
            });
        }
    }
    runs.sort_by(|a, b| b.stamp.cmp(&a.stamp));
    Ok(runs)
}

/// The index page of `store`, listing `runs`, with links relative to the store.
pub fn render(store: &Path, runs: &[StoredRun]) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "lockpick runs" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { "lockpick runs" }
                table {
                    tr { th { "when" } th { "run" } th { "verdict" } }
                    @for run in runs {
                        @let link = run.dir.strip_prefix(store).unwrap_or(&run.dir).join(REPORT);
                        tr {
                            td { (run.stamp) }
                            td { a href=(link.display()) { (run.name) } }
                            td class=(run.verdict) { (run.verdict) }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(store: &Path, group: &str, stamp: &str, verdict: &str) {
        let dir = store.join(group).join(stamp);
        fs::create_dir_all(&dir).unwrap();
        let results = serde_json::json!({"valid": verdict}).to_string();
        fs::write(dir.join(store::RESULTS), results).unwrap();
    }

    #[test]
    fn the_index_lists_finished_runs_newest_first_with_relative_links() {
        let store = tempfile::tempdir().unwrap();
        finished(store.path(), "redis-none", "20250101T000000.000Z", "valid");
        finished(
            store.path(),
            "redis-pause-holder",
            "20250102T000000.000Z",
            "invalid",
        );
        // A run still going has no results yet, and `latest` links are not runs.
        fs::create_dir_all(store.path().join("etcd-none/20250103T000000.000Z")).unwrap();
        std::os::unix::fs::symlink(
            "20250101T000000.000Z",
            store.path().join("redis-none/latest"),
        )
        .unwrap();
        let runs = runs(store.path()).unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["redis-pause-holder", "redis-none"]);
        let page = render(store.path(), &runs);
        assert!(page.contains(r#"<a href="redis-pause-holder/20250102T000000.000Z/report.html">"#));
        assert!(page.contains(r#"<td class="invalid">invalid</td>"#));
        assert!(page.contains(STYLE.lines().next().unwrap()));
    }
}
