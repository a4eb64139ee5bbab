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
    /// Whether the history holds every access the resource applied, by its final read.
    pub final_read: Option<FinalReadCheck>,
}

/// The final read compared with the history: the resource had applied `applied` accesses and
/// the history records `recorded` of them; the last of them left `last_value`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FinalReadCheck {
    pub valid: Validity,
    pub applied: u64,
    pub recorded: u64,
    pub value: i64,
    pub last_value: Option<i64>,
}

impl FinalReadCheck {
    fn of(model: &model::Model) -> Option<FinalReadCheck> {
        let state = model.final_state.as_ref()?;
        // Accesses the resource had applied by the final read are numbered 1 to `applied`;
        // a write held in a delay proxy may still land after it, with a higher number.
        let by_then = model.accesses.iter().filter(|a| a.seq <= state.applied);
        let recorded = by_then.count() as u64;
        let last_value = model
            .accesses
            .iter()
            .find(|a| a.seq == state.applied)
            .map(|a| a.value);
        // Missing records mean the history cannot vouch for what it lacks: unknown, never
        // invalid (the accesses it does hold were still judged).
        let consistent = state.applied == recorded && last_value.is_none_or(|v| v == state.value);
        Some(FinalReadCheck {
            valid: if consistent {
                Validity::Valid
            } else {
                Validity::Unknown
            },
            applied: state.applied,
            recorded,
            value: state.value,
            last_value,
        })
    }
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
            final_read: None,
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
    let final_read = FinalReadCheck::of(&model);
    let complete = final_read.as_ref().map_or(Validity::Valid, |f| f.valid);
    Results {
        valid: overlaps.valid.merge(stale.valid).merge(complete),
        malformed: None,
        operations: ops.len(),
        incomplete: model.incomplete.clone(),
        setup: model.setup.clone(),
        overlapping_holders: Some(overlaps),
        stale_accesses: Some(stale),
        stories,
        final_read,
    }
}

/// Reads and checks a history; a history that cannot be read is unknown with its line number.
pub fn check_reader(reader: impl std::io::BufRead) -> Results {
    match read_history(reader) {
        Ok(ops) => check(&ops),
        Err(malformed) => Results::malformed(0, malformed),
    }
}
