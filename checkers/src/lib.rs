//! The lockpick history model and its checkers: pure functions from a recorded history to a
//! verdict, with no I/O beyond reading the history, so any stored run can be judged again.
//!
//! The public surface is small: [`history::read_history`] parses JSON lines, [`check`] judges a
//! history, and [`Results`] says what was found. A malformed history is reported as
//! [`Validity::Unknown`] with its line number, never as a violation.

pub mod history;
pub mod model;
pub mod overlapping_holders;
pub mod stale_accesses;
pub mod story;
pub mod verdict;

use serde::Serialize;

pub use history::{read_history, Malformed, Op, OpType, Process, F};
pub use verdict::Validity;

/// Everything the checkers found in one history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Results {
    pub valid: Validity,
    /// Set when the history could not be read or made no sense; the verdict is then unknown.
    pub malformed: Option<Malformed>,
    pub operations: usize,
    /// Client invocations that never completed: outcomes nobody knows.
    pub incomplete: Vec<u64>,
    pub setup: Option<model::Setup>,
    pub overlapping_holders: Option<overlapping_holders::OverlappingHolders>,
    pub stale_accesses: Option<stale_accesses::StaleAccesses>,
    /// The stories of the first violations of each kind (at most `STORIES` of each).
    pub stories: Vec<story::Story>,
}

/// How many violations of each kind get a story.
pub const STORIES: usize = 10;

impl Results {
    fn malformed(operations: usize, malformed: Malformed) -> Results {
        Results {
            valid: Validity::Unknown,
            malformed: Some(malformed),
            operations,
            incomplete: Vec::new(),
            setup: None,
            overlapping_holders: None,
            stale_accesses: None,
            stories: Vec::new(),
        }
    }
}

/// Runs every checker over a history.
pub fn check(ops: &[Op]) -> Results {
    let model = match model::build(ops) {
        Ok(model) => model,
        Err(malformed) => return Results::malformed(ops.len(), malformed),
    };
    let overlaps = overlapping_holders::check(&model);
    let stale = stale_accesses::check(&model);
    // Stale writes first: they are the damage; then stale reads; then the overlaps behind them.
    let mut stories: Vec<story::Story> = Vec::new();
    for kind in [model::AccessKind::Write, model::AccessKind::Read] {
        let of_kind = stale.violations.iter().filter(|v| v.access.kind == kind);
        stories.extend(
            of_kind
                .take(STORIES)
                .map(|v| story::of_stale_access(&model, v)),
        );
    }
    let first_overlaps = overlaps.overlaps.iter().take(STORIES);
    stories.extend(first_overlaps.map(|o| story::of_overlap(&model, o)));
    Results {
        valid: overlaps.valid.merge(stale.valid),
        malformed: None,
        operations: ops.len(),
        incomplete: model.incomplete.clone(),
        setup: model.setup.clone(),
        overlapping_holders: Some(overlaps),
        stale_accesses: Some(stale),
        stories,
    }
}

/// Reads and checks a history; a history that cannot be read is unknown with its line number.
pub fn check_reader(reader: impl std::io::BufRead) -> Results {
    match read_history(reader) {
        Ok(ops) => check(&ops),
        Err(malformed) => Results::malformed(0, malformed),
    }
}
