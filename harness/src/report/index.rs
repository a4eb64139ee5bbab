//! The store's index page, `<store>/index.html`: every run, newest first, with its lock,
//! nemesis, fencing, seed, verdict and counts and a link to its report; then every comparison
//! with its seed, its verdicts and whether its expectations held. A small inline script filters
//! the runs by lock, nemesis, fencing and verdict (without it, every row shows).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;
use lockpick_checkers::Results;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde::Deserialize;
use serde_json::Value;

use super::counts::{Counts, FIGURES};
use super::{REPORT, STYLE};
use crate::bad_input::{read_run_file, MAX_RESULTS_BYTES};
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
    pub lock: String,
    /// `none`, or the nemeses joined by `+`.
    pub nemesis: String,
    pub fencing: String,
    pub seed: Option<u64>,
    pub counts: Counts,
}

/// One finished comparison in the store.
#[derive(Debug, PartialEq)]
pub struct StoredCompare {
    pub stamp: String,
    pub dir: PathBuf,
    pub seed: Option<u64>,
    pub exit_code: Option<u64>,
    pub matrix: Option<String>,
    /// Cells by verdict: valid, invalid, unknown, n/a.
    pub verdicts: [usize; 4],
    /// Expectations broken and unproven.
    pub broken: usize,
    pub unproven: usize,
}

/// A stored `results.json`, as far as the index reads it: the checkers' results, and the run's
/// facts beside them (`run`). Every part may be missing from an older file.
#[derive(Deserialize)]
struct StoredResults {
    #[serde(default)]
    run: StoredRunFacts,
    #[serde(flatten)]
    results: Results,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct StoredRunFacts {
    seed: Option<u64>,
    config: StoredConfig,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct StoredConfig {
    lock: Option<String>,
    nemeses: Vec<String>,
    fencing: Option<String>,
}

impl StoredRun {
    fn read(group: &str, stamp: String, dir: PathBuf, stored: StoredResults) -> StoredRun {
        let StoredResults { run, results } = stored;
        let word = |v: Option<String>| v.unwrap_or_else(|| "?".to_string());
        StoredRun {
            stamp,
            name: group.to_string(),
            dir,
            verdict: results.valid.name().to_string(),
            lock: word(run.config.lock),
            nemesis: if run.config.nemeses.is_empty() {
                "none".to_string()
            } else {
                run.config.nemeses.join("+")
            },
            fencing: word(run.config.fencing),
            seed: run.seed,
            counts: Counts::of(&results),
        }
    }
}

/// The finished runs of a store (those with results), newest first.
pub fn runs(store: &Path) -> Result<Vec<StoredRun>> {
    let mut runs = Vec::new();
    for group in fs::read_dir(store)?.flatten() {
        let Ok(entries) = fs::read_dir(group.path()) else {
            continue;
        };
        let group = group.file_name().to_string_lossy().to_string();
        for run in entries.flatten() {
            let dir = run.path();
            if dir.is_symlink() || !dir.is_dir() {
                continue;
            }
            // Bounded and never through a link, FIFO or device: another run's folder must not
            // stop or swell the index this run writes.
            let Ok(text) = read_run_file(&dir, store::RESULTS, MAX_RESULTS_BYTES) else {
                continue;
            };
            let file = dir.join(store::RESULTS);
            // A stored file is hostile input: one that does not read is left out of the index,
            // and said, rather than shown with a verdict it does not give.
            let stored: StoredResults = match serde_json::from_str(&text) {
                Ok(stored) => stored,
                Err(e) => {
                    crate::tell!(
                        "lockpick: the index leaves out {file:?}, which does not read: {e}"
                    );
                    continue;
                }
            };
            let stamp = run.file_name().to_string_lossy().to_string();
            runs.push(StoredRun::read(&group, stamp, dir, stored));
        }
    }
    runs.sort_by(|a, b| b.stamp.cmp(&a.stamp));
    Ok(runs)
}

/// The finished comparisons of a store (those with `compare.json`), newest first.
pub fn compares(store: &Path) -> Vec<StoredCompare> {
    let Ok(entries) = fs::read_dir(store.join("compare")) else {
        return Vec::new();
    };
    let mut compares: Vec<StoredCompare> = entries
        .flatten()
        .filter_map(|entry| {
            let dir = entry.path();
            let text = read_run_file(&dir, crate::store::COMPARE_JSON, MAX_RESULTS_BYTES).ok()?;
            let json: Value = serde_json::from_str(&text).ok()?;
            let cells = json["cells"].as_array().cloned().unwrap_or_default();
            let with = |key: &str, value: &str| cells.iter().filter(|c| c[key] == value).count();
            Some(StoredCompare {
                stamp: entry.file_name().to_string_lossy().to_string(),
                seed: json["seed"].as_u64(),
                exit_code: json["exit_code"].as_u64(),
                matrix: json["matrix"].as_str().map(str::to_string),
                verdicts: [
                    with("verdict", "valid"),
                    with("verdict", "invalid"),
                    with("verdict", "unknown"),
                    with("outcome", "not-applicable"),
                ],
                broken: with("judgement", "broken"),
                unproven: with("judgement", "unproven"),
                dir,
            })
        })
        .collect();
    compares.sort_by(|a, b| b.stamp.cmp(&a.stamp));
    compares
}

/// Filters rows by the value of each `select[data-filter]`; every row shows without script.
const FILTER_SCRIPT: &str = r#"
const selects = [...document.querySelectorAll('select[data-filter]')];
function filter() {
  for (const row of document.querySelectorAll('tr[data-lock]')) {
    row.hidden = selects.some(s => s.value && row.dataset[s.dataset.filter] !== s.value);
  }
}
selects.forEach(s => s.addEventListener('change', filter));
"#;

fn choice(key: &str, label: &str, values: &BTreeSet<&str>) -> Markup {
    html! {
        label { (label) " "
            select data-filter=(key) {
                option value="" { "all" }
                @for v in values { option value=(v) { (v) } }
            }
        }
        " "
    }
}

/// The index page of `store`, listing `runs` and `compares`, with links relative to the store.
pub fn render(store: &Path, runs: &[StoredRun], compares: &[StoredCompare]) -> String {
    let values = |f: fn(&StoredRun) -> &str| runs.iter().map(f).collect::<BTreeSet<&str>>();
    let link = |dir: &Path, file: &str| {
        let path = dir.strip_prefix(store).unwrap_or(dir).join(file);
        crate::text::html::relative_href(path.display().to_string())
    };
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
                p {
                    (choice("lock", "lock", &values(|r| &r.lock)))
                    (choice("nemesis", "nemesis", &values(|r| &r.nemesis)))
                    (choice("fencing", "fencing", &values(|r| &r.fencing)))
                    (choice("verdict", "verdict", &values(|r| &r.verdict)))
                }
                table {
                    tr {
                        th { "when" } th { "run" } th { "lock" } th { "nemesis" } th { "fencing" }
                        th { "seed" } th { "verdict" }
                        @for f in &FIGURES { th { (f.title) } }
                    }
                    @for run in runs {
                        tr data-lock=(run.lock) data-nemesis=(run.nemesis)
                            data-fencing=(run.fencing) data-verdict=(run.verdict) {
                            td { (run.stamp) }
                            td { a href=(link(&run.dir, REPORT)) { (run.name) } }
                            td { (run.lock) } td { (run.nemesis) } td { (run.fencing) }
                            td { (run.seed.map_or("-".to_string(), |s| s.to_string())) }
                            td class=(run.verdict) { (run.verdict) }
                            @for (_, n) in run.counts.figures() { td { (n) } }
                        }
                    }
                }
                @if !compares.is_empty() {
                    h2 { "comparisons" }
                    table {
                        tr {
                            th { "when" } th { "seed" } th { "matrix" } th { "valid" }
                            th { "invalid" } th { "unknown" } th { "n/a" }
                            th { "expectations broken" } th { "unproven" } th { "exit" }
                        }
                        @for c in compares {
                            tr {
                                td { a href=(link(&c.dir, crate::store::COMPARE_GRID)) { (c.stamp) } }
                                td { (c.seed.map_or("-".to_string(), |s| s.to_string())) }
                                td { (c.matrix.as_deref().unwrap_or("-")) }
                                @for n in c.verdicts { td { (n) } }
                                td class=[(c.broken > 0).then_some("invalid")] { (c.broken) }
                                td class=[(c.unproven > 0).then_some("unknown")] { (c.unproven) }
                                td { (c.exit_code.map_or("-".to_string(), |e| e.to_string())) }
                            }
                        }
                    }
                }
                script { (PreEscaped(FILTER_SCRIPT)) }
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
        let (lock, nemesis) = group.split_once('-').unwrap();
        let nemeses: Vec<&str> = if nemesis == "none" {
            vec![]
        } else {
            vec![nemesis]
        };
        let results = serde_json::json!({
            "valid": verdict,
            "run": {"seed": 52, "config": {"lock": lock, "nemeses": nemeses, "fencing": "on"}},
            "overlapping_holders": {"overlaps": [{}, {}], "granted_under_live_lease": 1},
            "stale_accesses": {"stale_writes": 3},
            "stale_reads_accepted": 4,
            "token_violations": {"reused": 1, "went_backwards": 2},
            "liveness": {"jams": [{}]},
        })
        .to_string();
        fs::write(dir.join(store::RESULTS), results).unwrap();
    }

    #[test]
    fn the_index_lists_finished_runs_newest_first_with_their_facts_and_relative_links() {
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
        assert_eq!(runs[0].nemesis, "pause-holder");
        assert_eq!(runs[1].nemesis, "none");
        let counts: Vec<usize> = runs[0].counts.figures().map(|(_, n)| n).collect();
        assert_eq!(
            (runs[0].seed, counts),
            (Some(52), vec![2, 3, 4, 1, 0, 3, 1])
        );
        let page = render(store.path(), &runs, &[]);
        assert!(page.contains(r#"<a href="redis-pause-holder/20250102T000000.000Z/report.html">"#));
        assert!(page.contains(r#"<td class="invalid">invalid</td>"#));
        assert!(page.contains(r#"data-nemesis="pause-holder""#));
        assert!(page.contains(r#"<option value="pause-holder">"#));
        assert!(page.contains(STYLE.lines().next().unwrap()));
    }

    #[test]
    fn a_results_file_that_does_not_read_is_left_out_of_the_index() {
        let store = tempfile::tempdir().unwrap();
        finished(store.path(), "redis-none", "20250101T000000.000Z", "valid");
        // An older file lacks most of what a run writes now, and reads with what it has.
        let old = store.path().join("redis-none/20250101T000001.000Z");
        fs::create_dir_all(&old).unwrap();
        fs::write(old.join(store::RESULTS), r#"{"valid": "invalid"}"#).unwrap();
        for (stamp, text) in [
            ("20250102T000000.000Z", "not json"),
            ("20250103T000000.000Z", r#"{"valid": 5}"#),
            (
                "20250104T000000.000Z",
                r#"{"overlapping_holders": {"overlaps": 3}}"#,
            ),
            (
                "20250105T000000.000Z",
                r#"{"run": {"seed": -1}, "valid": "valid"}"#,
            ),
            ("20250106T000000.000Z", "[]"),
        ] {
            let dir = store.path().join("redis-none").join(stamp);
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join(store::RESULTS), text).unwrap();
        }
        let runs = runs(store.path()).unwrap();
        let read: Vec<(&str, &str, &str)> = runs
            .iter()
            .map(|r| (r.stamp.as_str(), r.verdict.as_str(), r.lock.as_str()))
            .collect();
        assert_eq!(
            read,
            [
                ("20250101T000001.000Z", "invalid", "?"),
                ("20250101T000000.000Z", "valid", "redis")
            ]
        );
        assert_eq!(runs[0].counts, Counts::default());
    }

    #[test]
    fn the_index_lists_comparisons_with_their_verdicts_and_expectations() {
        let store = tempfile::tempdir().unwrap();
        let dir = store.path().join("compare/20250104T000000.000Z");
        fs::create_dir_all(&dir).unwrap();
        let json = serde_json::json!({
            "seed": 9, "exit_code": 1, "matrix": "lockpick.toml",
            "cells": [
                {"verdict": "valid", "outcome": "ran", "judgement": "holds"},
                {"verdict": "invalid", "outcome": "ran", "judgement": "broken"},
                {"outcome": "not-applicable", "judgement": "not-judged"},
            ],
        });
        fs::write(dir.join(crate::store::COMPARE_JSON), json.to_string()).unwrap();
        let compares = compares(store.path());
        assert_eq!(compares.len(), 1);
        assert_eq!(compares[0].verdicts, [1, 1, 0, 1]);
        assert_eq!((compares[0].broken, compares[0].seed), (1, Some(9)));
        let page = render(store.path(), &[], &compares);
        assert!(page.contains(r#"href="compare/20250104T000000.000Z/compare.html""#));
    }
}
