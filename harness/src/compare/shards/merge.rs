//! `lockpick merge DIR...`: joins the shards of one `compare --shard K/N` into the outputs one
//! comparison of the whole matrix would have written (the same cells, judgements, gate, JUnit
//! cases and exit code), through the same code as `compare` (`publish`). A shard's folder is
//! hostile input: each must be a shard of the same plan and seeds, every shard 1..N exactly
//! once, each holding exactly its own cells of the split, each cell with the repeats and seeds
//! its plan says; anything else is refused before anything is written. The matrix file's name
//! the outputs show is the first shard's (each job may have it under another path).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;

use super::runs;
use crate::cli::shard::{Shard, MAX_SHARDS};
use crate::cli::MergeArgs;
use crate::compare::judge::cell::{Cell, Outcome};
use crate::compare::outputs::{publish, report_to};
use crate::compare::shards::record::{self, PlannedRecord, ShardPart};
use crate::compare::{plan, JSON};
use crate::config::bad;
use crate::report::links::Links;

/// The part of a shard's `compare.json` a merge reads.
#[derive(Deserialize)]
struct ShardFile {
    shard: Option<ShardPart>,
}

/// Every shard of one comparison, by its `K`, with its folder.
type Parts = BTreeMap<usize, (PathBuf, ShardPart)>;

/// A cell's repeats as judged again: each with the name its run is kept under, if it ran.
type Rejudged = Vec<(Option<String>, Outcome)>;

/// Merges the shards and returns the exit code the whole comparison would have had.
pub fn merge(args: &MergeArgs) -> Result<u8> {
    let parts = every_shard(&args.dirs)?;
    let Some((_, (_, first))) = parts.iter().next() else {
        return Err(bad("merge: no shard folder given"));
    };
    let n = first.n;
    let plan = first.plan.clone();
    let (seed, seeds, matrix) = (first.seed, first.seeds.clone(), first.matrix.clone());
    if plan.iter().all(|c| c.flags.is_none()) {
        return Err(bad(format!(
            "merge: no cell of the comparison can run ({} cells, every one n/a): there is \
             nothing to merge",
            plan.len()
        )));
    }
    let outcomes = judge_again(&parts, &plan, &seeds)?;
    let interrupted = parts.values().any(|(_, part)| part.interrupted);
    let store = std::path::absolute(&args.store)
        .map_err(|e| bad(format!("--store {}: {e}", args.store.display())))?;
    crate::store::check_writable(&store, "compare")?;
    let dir = publish::folder(&store)?;
    let cells = cells_kept(&plan, outcomes, &dir)?;
    let runnable = plan.iter().filter(|c| c.flags.is_some()).count();
    let ran = cells.iter().filter(|c| c.figures().is_some()).count();
    let code = publish::exit_code(&cells, interrupted);
    let links = Links::new(args.link_base.as_deref(), &store, |key| {
        std::env::var(key).ok()
    });
    let comparison = publish::Comparison {
        store: &store,
        seed,
        seeds: &seeds,
        from_matrix: matrix.as_deref(),
        interrupted,
        ran,
        runnable,
        exit_code: code,
        shard: None,
        parallelism: None,
    };
    crate::tell!(
        "lockpick merge: {n} shards, {} cells, seed {seed}",
        plan.len()
    );
    publish::write(&comparison, &cells, &links, &dir, true)?;
    if let Some(to) = &args.report_to {
        report_to::copy(&dir, to)?;
    }
    Ok(code)
}

/// The shards in `dirs`, each read and checked: their own step because they must be of one
/// comparison, every shard 1..N exactly once, before any is trusted.
fn every_shard(dirs: &[PathBuf]) -> Result<Parts> {
    let mut parts = Parts::new();
    for dir in dirs {
        let part = read(dir)?;
        if let Some((first_dir, first)) = parts.values().next() {
            same_comparison(first, &part, first_dir, dir)?;
        }
        if let Some((other, _)) = parts.get(&part.k) {
            return Err(bad(format!(
                "merge: shard {}/{} is given twice: {} and {}",
                part.k,
                part.n,
                other.display(),
                dir.display()
            )));
        }
        parts.insert(part.k, (dir.clone(), part));
    }
    let Some((_, (_, first))) = parts.iter().next() else {
        return Ok(parts);
    };
    let n = first.n;
    let missing: Vec<String> = (1..=n)
        .filter(|k| !parts.contains_key(k))
        .map(|k| format!("{k}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(bad(format!(
            "merge: shard {} missing: every shard of the comparison is needed",
            missing.join(", ")
        )));
    }
    Ok(parts)
}

/// Every cell judged again from the history its shard kept, by cell: its own step because a
/// record that says another verdict or other counts than its own history is refused, with
/// every other such cell, before anything is written.
fn judge_again(parts: &Parts, plan: &[PlannedRecord], seeds: &[u64]) -> Result<Vec<Rejudged>> {
    let mut outcomes: Vec<Rejudged> = vec![Vec::new(); plan.len()];
    let mut refused: Vec<String> = Vec::new();
    for (dir, part) in parts.values() {
        for result in &part.results {
            let planned = &plan[result.index];
            for (r, repeat) in result.repeats.iter().enumerate() {
                let outcome = repeat.outcome();
                let Outcome::Ran(recorded) = &outcome else {
                    outcomes[result.index].push((None, outcome));
                    continue;
                };
                let name = runs::name(result.index, r);
                let kept = dir.join(runs::RUNS).join(&name);
                match runs::measure(&kept, &planned.name, planned, seeds[r], recorded) {
                    Ok(figures) => {
                        outcomes[result.index].push((Some(name), Outcome::Ran(Box::new(figures))))
                    }
                    Err(why) => refused.push(format!(
                        "{} repeat {} (shard {}/{}): {why}",
                        planned.name,
                        r + 1,
                        part.k,
                        part.n
                    )),
                }
            }
        }
    }
    if !refused.is_empty() {
        return Err(bad(format!(
            "merge: refused {} repeat(s) whose record is not what its own history shows: {}",
            refused.len(),
            refused.join("; ")
        )));
    }
    Ok(outcomes)
}

/// The merged cells, each run they were judged by kept in the merged folder `dir`: their own
/// step because it is the first that writes.
fn cells_kept(plan: &[PlannedRecord], outcomes: Vec<Rejudged>, dir: &Path) -> Result<Vec<Cell>> {
    let mut cells = Vec::with_capacity(plan.len());
    for (record, of_cell) in plan.iter().zip(outcomes) {
        let mut kept_outcomes = Vec::with_capacity(of_cell.len());
        for (name, mut outcome) in of_cell {
            if let (Some(name), Outcome::Ran(figures)) = (name, &mut outcome) {
                // The merged comparison keeps the runs it was judged by, in its own folder.
                figures.dir = runs::keep(&figures.dir, dir, &name)?;
            }
            kept_outcomes.push(outcome);
        }
        if kept_outcomes.is_empty() {
            kept_outcomes.push(Outcome::NotRun);
        }
        // Checked in `read`: every expectation word is one a matrix holds.
        let expected = record
            .expectation()
            .ok_or_else(|| bad("merge: a shard's expectation is not one lockpick knows"))?;
        cells.push(Cell::new(record.name.clone(), &expected, kept_outcomes));
    }
    Ok(cells)
}

/// One shard's record, checked on its own: its place, its fingerprint, its seeds and its cells.
fn read(dir: &Path) -> Result<ShardPart> {
    let path = dir.join(JSON);
    let text = crate::bad_input::read_input_file("merge", &path)?;
    let refuse = |why: String| bad(format!("merge {}: {why}", dir.display()));
    let file: ShardFile =
        serde_json::from_str(&text).map_err(|e| refuse(format!("{JSON} cannot be read: {e}")))?;
    let part = file.shard.ok_or_else(|| {
        refuse(format!(
            "{JSON} is not a shard's (no `shard`): merge takes the folders of \
             `lockpick compare --shard K/N`"
        ))
    })?;
    let shard = Shard {
        k: part.k,
        n: part.n,
    };
    if part.k == 0 || part.k > part.n || part.n > MAX_SHARDS {
        return Err(refuse(format!(
            "shard {shard} is not K/N with 1 <= K <= N <= {MAX_SHARDS}"
        )));
    }
    let fingerprint = record::fingerprint(&part.plan, &part.seeds);
    if fingerprint != part.fingerprint {
        return Err(refuse(
            "its plan does not match its fingerprint (the file was changed)".to_string(),
        ));
    }
    let expected_seeds: Vec<u64> = (0..part.seeds.len())
        .map(|r| plan::repeat_seed(part.seed, r))
        .collect();
    if part.seeds.is_empty() || part.seeds != expected_seeds {
        return Err(refuse(format!(
            "its seeds are not those of seed {}",
            part.seed
        )));
    }
    if part.plan.iter().any(|c| c.expectation().is_none()) {
        return Err(refuse(
            "a cell's expectation is not one lockpick knows".to_string(),
        ));
    }
    let members = record::members(&part.plan, shard);
    let mine: Vec<usize> = (0..part.plan.len()).filter(|&i| members[i]).collect();
    let given: Vec<usize> = part.results.iter().map(|r| r.index).collect();
    if given != mine {
        return Err(refuse(format!(
            "shard {shard} holds cells {given:?}, but the split gives it {mine:?}"
        )));
    }
    for result in &part.results {
        let planned = &part.plan[result.index];
        let outcomes: Vec<Outcome> = result.repeats.iter().map(|r| r.outcome()).collect();
        let ok = match &planned.flags {
            None => matches!(outcomes.as_slice(), [Outcome::NotApplicable { .. }]),
            Some(_) => {
                let complete = outcomes.len() == part.seeds.len();
                (complete || (part.interrupted && outcomes.len() < part.seeds.len()))
                    && outcomes
                        .iter()
                        .zip(&part.seeds)
                        .all(|(o, seed)| matches!(o, Outcome::Ran(f) if f.seed == *seed))
            }
        };
        if !ok {
            return Err(refuse(format!(
                "cell {} does not hold the repeats its plan says",
                planned.name
            )));
        }
    }
    Ok(part)
}

/// Whether two shards are of one comparison: the same plan, seeds and number of shards.
fn same_comparison(a: &ShardPart, b: &ShardPart, a_dir: &Path, b_dir: &Path) -> Result<()> {
    let differ = |what: &str| {
        bad(format!(
            "merge: {} and {} are shards of different comparisons ({what})",
            a_dir.display(),
            b_dir.display()
        ))
    };
    if a.seed != b.seed {
        return Err(differ(&format!("seed {} and seed {}", a.seed, b.seed)));
    }
    if a.n != b.n {
        return Err(differ(&format!("of {} and of {} shards", a.n, b.n)));
    }
    if a.fingerprint != b.fingerprint {
        return Err(differ(
            "another matrix: cells, expectations, knobs or repeats",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::judge::cell::CellName;
    use crate::compare::shards::record::{CellResult, RepeatRecord};

    /// A shard record of one cell that its lock refuses, fingerprinted as compare would.
    fn every_cell_na(dir: &Path) {
        let plan = vec![PlannedRecord {
            name: CellName {
                lock: "redis".to_string(),
                nemesis: "kill-node".to_string(),
                fencing: "off".to_string(),
            },
            expected: vec!["valid".to_string()],
            why: None,
            at_least: None,
            expected_ms: 0,
            flags: None,
        }];
        let seeds = vec![7];
        let part = ShardPart {
            k: 1,
            n: 1,
            fingerprint: record::fingerprint(&plan, &seeds),
            seed: 7,
            seeds,
            matrix: None,
            interrupted: false,
            plan,
            results: vec![CellResult {
                index: 0,
                repeats: vec![RepeatRecord::of(&Outcome::NotApplicable {
                    reason: "refused".to_string(),
                })],
            }],
        };
        let text = serde_json::json!({ "shard": part }).to_string();
        std::fs::write(dir.join(JSON), text).unwrap();
    }

    #[test]
    fn a_plan_whose_every_cell_is_na_is_refused_as_compare_refuses_it() {
        let work = tempfile::tempdir().unwrap();
        let shard = work.path().join("shard");
        std::fs::create_dir(&shard).unwrap();
        every_cell_na(&shard);
        let store = work.path().join("store");
        let args = MergeArgs {
            dirs: vec![shard],
            store: store.clone(),
            link_base: None,
            report_to: None,
        };
        let error = merge(&args).unwrap_err();
        assert!(error.downcast_ref::<crate::bad_input::BadInput>().is_some());
        assert!(
            error
                .to_string()
                .contains("no cell of the comparison can run"),
            "{error}"
        );
        assert!(!store.exists(), "nothing is written");
    }
}
