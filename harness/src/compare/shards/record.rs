//! What a shard writes into its `compare.json` (under `shard`) for `lockpick merge`: the whole
//! matrix as planned (each cell's name, expectation, expected time and the run flags it was
//! given), the seeds, and every repeat's outcome of the shard's own cells. A fingerprint of the
//! plan tells the shards of one matrix and seed from those of another.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cli::shard::Shard;
use crate::compare::judge::cell::{CellName, Outcome};
use crate::compare::plan::matrix::{CellExpectation, Expectation};
use crate::compare::plan::{Plan, PlannedCell};
use crate::compare::shards::split;

/// `compare.json`'s `shard`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardPart {
    pub k: usize,
    pub n: usize,
    /// FNV-1a of the plan and the seeds (not of the matrix file's name: each CI job may see it
    /// under another path).
    pub fingerprint: String,
    pub seed: u64,
    pub seeds: Vec<u64>,
    pub matrix: Option<PathBuf>,
    pub interrupted: bool,
    /// Every cell of the matrix, in the order of the plan.
    pub plan: Vec<PlannedRecord>,
    /// The shard's cells, by their place in `plan`.
    pub results: Vec<CellResult>,
}

/// One planned cell of the matrix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedRecord {
    pub name: CellName,
    pub expected: Vec<String>,
    pub why: Option<String>,
    pub at_least: Option<usize>,
    pub expected_ms: u64,
    /// The flags of the cell's first repeat, without its store (each job has its own); `None`
    /// when the lock refuses the nemesis.
    pub flags: Option<Vec<String>>,
}

/// What each repeat of one of the shard's cells showed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellResult {
    pub index: usize,
    pub repeats: Vec<RepeatRecord>,
}

/// One repeat's outcome, with the shortened stories a comment quotes.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepeatRecord {
    pub outcome: Outcome,
    pub first_story_short: Option<String>,
    pub first_stale_write_short: Option<String>,
}

impl RepeatRecord {
    pub fn of(outcome: &Outcome) -> RepeatRecord {
        let (story, stale) = match outcome {
            Outcome::Ran(f) => (
                f.first_story_short.clone(),
                f.first_stale_write_short.clone(),
            ),
            _ => (None, None),
        };
        RepeatRecord {
            outcome: outcome.clone(),
            first_story_short: story,
            first_stale_write_short: stale,
        }
    }

    /// The outcome with its shortened stories back in place.
    pub fn outcome(&self) -> Outcome {
        let mut outcome = self.outcome.clone();
        if let Outcome::Ran(f) = &mut outcome {
            f.first_story_short = self.first_story_short.clone();
            f.first_stale_write_short = self.first_stale_write_short.clone();
        }
        outcome
    }
}

impl PlannedRecord {
    pub fn of(cell: &PlannedCell) -> PlannedRecord {
        let flags = cell.configs.as_ref().ok().and_then(|c| c.first()).map(|c| {
            let mut words = c.command.iter().skip(2);
            let mut kept = Vec::new();
            while let Some(word) = words.next() {
                if word == "--store" {
                    words.next();
                } else {
                    kept.push(word.clone());
                }
            }
            kept
        });
        PlannedRecord {
            name: cell.name.clone(),
            expected: cell
                .expected
                .expectations
                .iter()
                .map(|e| e.words().to_string())
                .collect(),
            why: cell.expected.why.clone(),
            at_least: cell.expected.at_least,
            expected_ms: split::expected_ms(cell),
            flags,
        }
    }

    /// The expectation, back from its words; `None` for a word no matrix can hold.
    pub fn expectation(&self) -> Option<CellExpectation> {
        let expectations = self
            .expected
            .iter()
            .map(|w| Expectation::ALL.into_iter().find(|e| e.words() == w))
            .collect::<Option<Vec<_>>>()?;
        Some(CellExpectation {
            expectations,
            why: self.why.clone(),
            at_least: self.at_least,
        })
    }
}

/// The plan as a record, and the fingerprint of it.
pub fn planned(plan: &Plan) -> (Vec<PlannedRecord>, String) {
    let records: Vec<PlannedRecord> = plan.cells.iter().map(PlannedRecord::of).collect();
    let fingerprint = fingerprint(&records, &plan.seeds);
    (records, fingerprint)
}

pub fn fingerprint(plan: &[PlannedRecord], seeds: &[u64]) -> String {
    let text = serde_json::to_string(&(plan, seeds)).unwrap_or_default();
    format!("{:016x}", crate::stable_hash::fnv1a(&text))
}

/// Which of the plan's cells belong to `shard`.
pub fn members(plan: &[PlannedRecord], shard: Shard) -> Vec<bool> {
    let costs: Vec<u64> = plan.iter().map(|c| c.expected_ms).collect();
    split::split(&costs, shard.n)
        .into_iter()
        .map(|s| s + 1 == shard.k)
        .collect()
}
