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

use super::cell::{Cell, Outcome};
use super::shard_record::{self, ShardPart};
use super::{plan, publish, report_to, JSON};
use crate::cli::shard::{Shard, MAX_SHARDS};
use crate::cli::MergeArgs;
use crate::config::bad;
use crate::report::links::Links;

/// The part of a shard's `compare.json` a merge reads.
#[derive(Deserialize)]
struct ShardFile {
    shard: Option<ShardPart>,
}

/// Merges the shards and returns the exit code the whole comparison would have had.
pub fn merge(args: &MergeArgs) -> Result<u8> {
    let mut parts: BTreeMap<usize, (PathBuf, ShardPart)> = BTreeMap::new();
    for dir in &args.dirs {
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
        return Err(bad("merge: no shard folder given"));
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
    let plan = first.plan.clone();
    let (seed, seeds, matrix) = (first.seed, first.seeds.clone(), first.matrix.clone());
    let mut outcomes: Vec<Vec<Outcome>> = vec![Vec::new(); plan.len()];
    let mut interrupted = false;
    for (_, part) in parts.values() {
        interrupted |= part.interrupted;
        for result in &part.results {
            outcomes[result.index] = result.repeats.iter().map(|r| r.outcome()).collect();
        }
    }
    let mut cells = Vec::with_capacity(plan.len());
    for (record, mut of_cell) in plan.iter().zip(outcomes) {
        if of_cell.is_empty() {
            of_cell.push(Outcome::NotRun);
        }
        // Checked in `read`: every expectation word is one a matrix holds.
        let expected = record
            .expectation()
            .ok_or_else(|| bad("merge: a shard's expectation is not one lockpick knows"))?;
        cells.push(Cell::new(record.name.clone(), &expected, of_cell));
    }
    let runnable = plan.iter().filter(|c| c.flags.is_some()).count();
    let ran = cells.iter().filter(|c| c.figures().is_some()).count();
    let code = publish::exit_code(&cells, interrupted);
    let store = std::path::absolute(&args.store)
        .map_err(|e| bad(format!("--store {}: {e}", args.store.display())))?;
    crate::store::check_writable(&store, "compare")?;
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
    };
    crate::tell!(
        "lockpick merge: {n} shards, {} cells, seed {seed}",
        plan.len()
    );
    let dir = publish::write(&comparison, &cells, &links, true)?;
    if let Some(to) = &args.report_to {
        report_to::copy(&dir, to)?;
    }
    Ok(code)
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
    let fingerprint = shard_record::fingerprint(&part.plan, &part.seeds);
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
    let members = shard_record::members(&part.plan, shard);
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
