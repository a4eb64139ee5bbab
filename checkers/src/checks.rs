//! The checker seam: every checker's result, as outputs show it. Each checker's result says its
//! name, what it found, the kinds of story that tell its violations, its lines in the terminal
//! summary, its rows in the report's table and its sentences in the report's headline
//! ([`Checker`]); [`Results::checkers`] lists the results of those that ran, and the terminal
//! summary, the report and JUnit loop over that list. A new checker is its own module, its
//! field in [`Results`] and its call in `check_model`, its `impl Checker` in `checks/`, and one
//! line in [`Results::checkers`]; its count, if it has one, is a line of the harness's
//! `FIGURES`, which the outputs that show counts (summary.md, the index, compare) loop over.

mod jams;
mod overlaps;
mod stale;
mod tokens;

use crate::model::{Model, Setup};
use crate::Results;

/// What one checker found.
#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// It checked, and the history shows no violation of its kind.
    Held,
    /// It found violations, told in one line.
    Broken(String),
    /// It had nothing to check, and why.
    NotChecked(String),
}

impl Finding {
    /// `Broken(line)` if `broken`, else `Held`.
    pub fn broken_if(broken: bool, line: impl FnOnce() -> String) -> Finding {
        if broken {
            Finding::Broken(line())
        } else {
            Finding::Held
        }
    }
}

/// One sentence of the report's headline, with the kind of finding it tells (`overlap`,
/// `tokens`, `jam`, `unavailable`, `stale-reads`, ...), without its final stop.
#[derive(Clone, Debug, PartialEq)]
pub struct Sentence {
    pub kind: &'static str,
    pub text: String,
}

impl Sentence {
    pub fn new(kind: &'static str, text: String) -> Sentence {
        Sentence { kind, text }
    }
}

/// One checker's result, as every output shows it.
pub trait Checker {
    /// Its name in every output ("overlapping holders").
    fn name(&self) -> &'static str;

    /// What it found.
    fn finding(&self) -> Finding;

    /// The kinds of story (`Story::kind`) that tell its violations.
    fn story_kinds(&self) -> &'static [&'static str];

    /// Its lines in the terminal summary, indented as printed.
    fn summary_lines(&self, setup: Option<&Setup>) -> Vec<String>;

    /// Its rows in the report's table of figures: (what, how many).
    fn table_rows(&self) -> Vec<(&'static str, String)>;

    /// Its sentences in the report's headline, most important first: what a reader must not
    /// miss.
    fn headline(&self, model: &Model) -> Vec<Sentence>;

    /// Its sentences told after every checker's headline (a finding that is no violation).
    fn footnotes(&self, _model: &Model) -> Vec<Sentence> {
        Vec::new()
    }
}

impl Results {
    /// The result of every checker that ran over this history, in the order outputs show them.
    pub fn checkers(&self) -> Vec<&dyn Checker> {
        let mut ran: Vec<&dyn Checker> = Vec::new();
        if let Some(c) = &self.overlapping_holders {
            ran.push(c);
        }
        if let Some(c) = &self.stale_accesses {
            ran.push(c);
        }
        if let Some(c) = &self.token_violations {
            ran.push(c);
        }
        if let Some(c) = &self.liveness {
            ran.push(c);
        }
        ran
    }
}

#[cfg(test)]
mod tests {
    use crate::history::{Op, OpType, Process, F};
    use serde_json::json;

    #[test]
    fn every_checker_that_ran_is_listed_once_in_order() {
        let setup = Op::new(
            0,
            Process::named(Process::HARNESS),
            OpType::Info,
            F::Setup,
            json!({"lock": "redis", "token": "none", "ttl_ms": 1000}),
        );
        let results = crate::check(&[setup]);
        let names: Vec<&str> = results.checkers().iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "overlapping holders",
                "stale writes accepted",
                "fencing tokens",
                "lock never jammed"
            ]
        );
        let tokens = results.checkers()[2].finding();
        assert!(matches!(tokens, super::Finding::NotChecked(_)));
    }
}
