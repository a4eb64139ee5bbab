//! The matrix file a user checks in (`lockpick.toml`): which locks, nemeses and fencing modes to
//! cross, the knobs of every cell, and what each cell is expected to show, in the terms users
//! argue in: "valid", "no stale write accepted", "no grant under a live lease", or "invalid"
//! (known unsafe: the comparison exists to show it).
//!
//! ```toml
//! locks = ["redis", "etcd"]
//! nemeses = ["none", "pause-holder"]
//! fencing = ["on"]
//!
//! [knobs]
//! time-limit = "10s"
//!
//! [[expect]]
//! locks = ["redis"]
//! nemeses = ["pause-holder"]
//! expect = "invalid"
//! why = "a paused holder outlives its lease and writes after it"
//! ```
//!
//! A lock is named by a string, or by a table that gives a user's own client a short name:
//! `{ lock = "exec:redis:./client.py", name = "mutex" }`. Expectations, store folders, the grid
//! and JUnit then say `mutex`; an `[[expect]]` group names that lock by it.
//!
//! A group with no `locks` (`nemeses`, `fencing`) matches every lock (nemesis, mode). When
//! several groups match a cell the last one decides it, so a file reads from the general to the
//! particular. A cell no group matches is expected to be valid, as it is without a file.

use std::fmt;
use std::path::Path;

use serde::Deserialize;

use crate::cli::CellKnobs;
use crate::config::bad;

mod lists;
mod lock_entry;
pub use lock_entry::LockEntry;

/// What a cell is expected to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expectation {
    /// Every checker passes and the run proves it.
    Valid,
    /// The resource accepted no write under an overtaken lock (overlaps may happen).
    NoStaleWriteAccepted,
    /// The lock service never granted the lock while another client's lease was live.
    NoGrantUnderLiveLease,
    /// Known unsafe: the run must find a violation.
    Invalid,
    /// The lock never jammed: whatever else happened, it was never refused to everyone while
    /// certainly free for longer than the jam bound (a liveness expectation).
    Recovers,
}

impl Expectation {
    pub const ALL: [Expectation; 5] = [
        Expectation::Valid,
        Expectation::NoStaleWriteAccepted,
        Expectation::NoGrantUnderLiveLease,
        Expectation::Invalid,
        Expectation::Recovers,
    ];

    pub fn words(self) -> &'static str {
        match self {
            Expectation::Valid => "valid",
            Expectation::NoStaleWriteAccepted => "no stale write accepted",
            Expectation::NoGrantUnderLiveLease => "no grant under a live lease",
            Expectation::Invalid => "invalid",
            Expectation::Recovers => "recovers",
        }
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

impl TryFrom<String> for Expectation {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        let said = text.trim().to_lowercase();
        if matches!(said.as_str(), "known unsafe" | "invalid: known unsafe") {
            return Ok(Expectation::Invalid);
        }
        if said == "no jam" {
            return Ok(Expectation::Recovers);
        }
        Expectation::ALL
            .into_iter()
            .find(|e| e.words() == said)
            .ok_or_else(|| {
                let known: Vec<String> = Expectation::ALL
                    .iter()
                    .map(|e| format!("{:?}", e.words()))
                    .collect();
                format!("{text:?} is not an expectation: say {}", known.join(", "))
            })
    }
}

/// One expectation or several, as the file says them.
#[derive(Deserialize)]
#[serde(untagged)]
enum Said {
    One(String),
    Many(Vec<String>),
}

/// The expectations of a group, each word checked (an untagged enum alone would hide which).
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "Said")]
struct Expectations(Vec<Expectation>);

impl TryFrom<Said> for Expectations {
    type Error = String;

    fn try_from(said: Said) -> Result<Self, Self::Error> {
        let words = match said {
            Said::One(word) => vec![word],
            Said::Many(words) => words,
        };
        if words.is_empty() {
            return Err("expect = [] says nothing: name at least one expectation".to_string());
        }
        words
            .into_iter()
            .map(Expectation::try_from)
            .collect::<Result<_, _>>()
            .map(Expectations)
    }
}

/// One `[[expect]]` group.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectGroup {
    #[serde(default)]
    pub locks: Vec<String>,
    #[serde(default)]
    pub nemeses: Vec<String>,
    #[serde(default)]
    pub fencing: Vec<String>,
    expect: Expectations,
    /// Why, in the user's words: shown beside the cell.
    pub why: Option<String>,
    /// With repeats, how many must show a violation for "invalid" to hold [default: every one].
    #[serde(rename = "at-least")]
    pub at_least: Option<usize>,
}

impl ExpectGroup {
    pub fn expectations(&self) -> Vec<Expectation> {
        self.expect.0.clone()
    }

    fn matches(&self, lock: &str, nemesis: &str, fencing: &str) -> bool {
        let within =
            |list: &[String], item: &str| list.is_empty() || list.iter().any(|i| i == item);
        within(&self.locks, lock)
            && within(&self.nemeses, nemesis)
            && within(&self.fencing, fencing)
    }
}

/// The whole file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    #[serde(default)]
    pub locks: Vec<LockEntry>,
    #[serde(default)]
    pub nemeses: Vec<String>,
    #[serde(default)]
    pub fencing: Vec<String>,
    pub seed: Option<u64>,
    pub parallel: Option<usize>,
    pub repeat: Option<usize>,
    #[serde(default)]
    pub knobs: CellKnobs,
    #[serde(default)]
    pub expect: Vec<ExpectGroup>,
}

/// What a cell is held to, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellExpectation {
    pub expectations: Vec<Expectation>,
    pub why: Option<String>,
    /// How many repeats must be invalid for "invalid" to hold; `None`: every one.
    pub at_least: Option<usize>,
}

impl Matrix {
    /// Reads and parses a matrix file; a file that cannot be read or parsed is bad input, and
    /// so is one that names no locks: it would run lockpick's default cells, not the user's.
    pub fn read(path: &Path) -> anyhow::Result<Matrix> {
        let text = crate::bad_input::read_input_file("--matrix", path)?;
        let file = path.display();
        let matrix = Matrix::parse(&text).map_err(|e| bad(format!("--matrix {file}: {e}")))?;
        if matrix.locks.is_empty() {
            let what = if lists::has_keys(&text) {
                "names no locks"
            } else {
                "is empty (nothing but blank lines and comments)"
            };
            // The example names the catalogue's first two locks, whatever they are.
            let example: Vec<String> = (crate::locks::names().iter().take(2))
                .map(|name| format!("{name:?}"))
                .collect();
            return Err(bad(format!(
                "--matrix {file} {what}: a matrix file says which locks it compares, as \
                 locks = [{}]",
                example.join(", ")
            )));
        }
        Ok(matrix)
    }

    /// Parses a matrix file's text; the error is one line. Every list the file gives must have
    /// an item: `[]` is a mistake, not the default it would silently become.
    pub fn parse(text: &str) -> Result<Matrix, String> {
        let matrix = Matrix::parse_typed(text)?;
        match lists::first_empty_list(text) {
            Some(empty) => Err(empty),
            None => Ok(matrix),
        }
    }

    fn parse_typed(text: &str) -> Result<Matrix, String> {
        toml::from_str(text).map_err(|e: toml::de::Error| {
            let message = e.message().to_string();
            match e.span() {
                Some(span) => {
                    let line = text[..span.start.min(text.len())].lines().count().max(1);
                    format!("line {line}: {message}")
                }
                None => message,
            }
        })
    }

    /// What the cell is expected to show: the last group that matches it, or valid.
    pub fn expectation(&self, lock: &str, nemesis: &str, fencing: &str) -> CellExpectation {
        match self
            .expect
            .iter()
            .rev()
            .find(|g| g.matches(lock, nemesis, fencing))
        {
            Some(group) => CellExpectation {
                expectations: group.expectations(),
                why: group.why.clone(),
                at_least: group.at_least,
            },
            None => CellExpectation::default_valid(),
        }
    }
}

impl ExpectGroup {
    /// The group as the file says it, to name it in an error: `[[expect]] group 2 (nemeses =
    /// ["kill-node"], expect = "invalid")`.
    pub fn label(&self, index: usize) -> String {
        let mut said = Vec::new();
        for (key, list) in [
            ("locks", &self.locks),
            ("nemeses", &self.nemeses),
            ("fencing", &self.fencing),
        ] {
            if !list.is_empty() {
                said.push(format!("{key} = {list:?}"));
            }
        }
        let words: Vec<&str> = self.expect.0.iter().map(|e| e.words()).collect();
        said.push(format!("expect = {:?}", words.join(" and ")));
        format!("[[expect]] group {} ({})", index + 1, said.join(", "))
    }

    /// Why the group matches no cell of `locks` × `nemeses` × `fencings`, if it matches none: the
    /// key whose every item is missing from the matrix, or that no cell has them together.
    pub fn matches_none(
        &self,
        locks: &[String],
        nemeses: &[String],
        fencings: &[String],
    ) -> Option<String> {
        let any = locks.iter().any(|l| {
            nemeses
                .iter()
                .any(|n| fencings.iter().any(|f| self.matches(l, n, f)))
        });
        if any {
            return None;
        }
        for (key, group, matrix) in [
            ("locks", &self.locks, locks),
            ("nemeses", &self.nemeses, nemeses),
            ("fencing", &self.fencing, fencings),
        ] {
            if !group.is_empty() && !group.iter().any(|item| matrix.contains(item)) {
                return Some(format!(
                    "it matches no cell: none of its {key} {group:?} is in the matrix's {key} \
                     {matrix:?}"
                ));
            }
        }
        Some("it matches no cell: no cell has its locks, nemeses and fencing together".to_string())
    }
}

impl CellExpectation {
    /// A cell nobody said anything about is expected to be valid.
    pub fn default_valid() -> CellExpectation {
        CellExpectation {
            expectations: vec![Expectation::Valid],
            why: None,
            at_least: None,
        }
    }

    pub fn words(&self) -> String {
        let words: Vec<String> = self
            .expectations
            .iter()
            .map(|e| match (e, self.at_least) {
                (Expectation::Invalid, Some(k)) => format!("invalid in at least {k}"),
                _ => e.words().to_string(),
            })
            .collect();
        words.join(" and ")
    }
}

#[cfg(test)]
mod tests;
