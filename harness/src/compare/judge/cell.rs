//! One cell of a comparison: what its run showed, and whether that meets what the cell was
//! expected to show.

use serde::{Deserialize, Serialize};

pub use crate::compare::judge::judgement::{judge, Figures, Judgement};
use crate::compare::judge::judgement::{judge_told, Form, State};
use crate::compare::judge::repeats::{judge_repeats, tally, Repeat};
use crate::compare::plan::matrix::CellExpectation;

/// Which cell: a lock under a nemesis (several joined by `+`) with a fencing mode.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellName {
    pub lock: String,
    pub nemesis: String,
    pub fencing: String,
}

impl std::fmt::Display for CellName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} × {} (fencing {})",
            self.lock, self.nemesis, self.fencing
        )
    }
}

/// How a cell ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    Ran(Box<Figures>),
    /// The lock refuses the nemesis; the reason, as the run's configuration gives it.
    NotApplicable {
        reason: String,
    },
    /// The comparison was interrupted before this cell ended.
    NotRun,
}

/// One cell, ready for every output.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    #[serde(flatten)]
    pub name: CellName,
    pub expected: String,
    pub why_expected: Option<String>,
    #[serde(flatten)]
    pub outcome: Outcome,
    #[serde(flatten)]
    pub judgement: Judgement,
    /// Every repeat, in order, when the cell ran more than once (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<Repeat>,
    /// The judgement's evidence with its stories shortened, for a comment.
    #[serde(skip)]
    pub evidence_short: Option<String>,
}

impl Cell {
    /// A cell from what each of its repeats showed (in order), or the one reason it could not
    /// run. The repeat that stands for the cell gives its figures.
    pub fn new(name: CellName, expected: &CellExpectation, outcomes: Vec<Outcome>) -> Cell {
        let runs: Vec<Figures> = outcomes
            .iter()
            .filter_map(|o| match o {
                Outcome::Ran(f) => Some((**f).clone()),
                Outcome::NotApplicable { .. } | Outcome::NotRun => None,
            })
            .collect();
        let (outcome, judgement, repeats) = if runs.is_empty() {
            let outcome = outcomes
                .into_iter()
                .next()
                .unwrap_or(Outcome::NotApplicable {
                    reason: "no repeat ran".to_string(),
                });
            (outcome, Judgement::NotJudged, Vec::new())
        } else {
            let (judgement, repeats, shown) = judge_repeats(expected, &runs);
            let outcome = Outcome::Ran(Box::new(runs[shown].clone()));
            let repeats = if repeats.len() > 1 {
                repeats
            } else {
                Vec::new()
            };
            (outcome, judgement, repeats)
        };
        // The shown repeat's evidence told with shortened stories; the full words where the
        // repeats, not one run, decide (a tally).
        let evidence_short = match (&judgement, &outcome) {
            (Judgement::Broken(full) | Judgement::Unproven(full), Outcome::Ran(figures)) => {
                let short = expected
                    .expectations
                    .iter()
                    .map(|e| judge_told(*e, figures, Form::Short))
                    .fold(Judgement::Holds, Judgement::and);
                match short {
                    Judgement::Broken(why) | Judgement::Unproven(why) if repeats.is_empty() => {
                        Some(why)
                    }
                    _ => Some(full.clone()),
                }
            }
            _ => None,
        };
        Cell {
            name,
            expected: expected.words(),
            why_expected: expected.why.clone(),
            outcome,
            judgement,
            repeats,
            evidence_short,
        }
    }

    /// The cell's verdict in words: `invalid`, or over repeats `invalid 5/5`.
    pub fn verdict_words(&self) -> Option<String> {
        let f = self.figures()?;
        Some(match tally(f.verdict, &self.repeats) {
            Some(tally) => format!("{} {tally}", f.verdict),
            None => f.verdict.to_string(),
        })
    }

    pub fn figures(&self) -> Option<&Figures> {
        match &self.outcome {
            Outcome::Ran(f) => Some(f),
            Outcome::NotApplicable { .. } | Outcome::NotRun => None,
        }
    }

    pub fn state(&self) -> State {
        match (&self.judgement, &self.outcome) {
            (Judgement::Broken(_), _) => State::Broken,
            (Judgement::Unproven(_), _) => State::NotProven,
            (Judgement::Holds, _) => State::Held,
            (Judgement::NotJudged, Outcome::NotRun) => State::NotRun,
            (Judgement::NotJudged, _) => State::NotApplicable,
        }
    }
}

#[cfg(test)]
#[path = "cell_tests.rs"]
mod tests;
