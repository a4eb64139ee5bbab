//! The lockpick history model and its checkers: pure functions from a recorded history to a
//! verdict, with no I/O beyond reading the history, so any stored run can be judged again.
//!
//! The public surface is small: [`history::read_history`] parses JSON lines, [`check`] judges a
//! history, [`check_reader`] judges one while reading it, and [`Results`] says what was found.
//! A malformed history is reported as [`Validity::Unknown`] with its line number, never as a
//! violation; a history that shows no violation but cannot prove the run was exercised and
//! complete is unknown too, with its reasons.

pub mod checks;
pub mod completeness;
mod failover_story;
pub mod fault;
pub mod history;
pub mod jam_story;
pub mod leadership;
pub mod lease_claims;
pub mod liveness;
pub mod model;
pub mod overlap_cause;
pub mod overlapping_holders;
pub mod record;
mod regrant_story;
pub mod setup;
pub mod stale_accesses;
pub mod story;
pub mod stuck_keys;
pub mod token_story;
pub mod tokens;
pub mod verdict;
pub mod words;

use serde::{Deserialize, Serialize};

pub use completeness::FinalReadCheck;
pub use history::{read_history, Malformed, Op, OpType, Process, F};
pub use verdict::Validity;

/// Everything the checkers found in one history, as `results.json` stores it (beside the
/// run's own facts). It reads back from a stored file of any age: a field an older file lacks
/// reads as empty (a missing verdict as unknown), a field of the wrong shape is an error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Results {
    pub valid: Validity,
    /// Set when the history could not be read or made no sense; the verdict is then unknown.
    pub malformed: Option<Malformed>,
    pub operations: usize,
    /// Client invocations that never completed: outcomes nobody knows.
    pub incomplete: Vec<u64>,
    /// Client operations answered `info`: their outcome is unknown too.
    pub answered_unknown: usize,
    pub setup: Option<model::Setup>,
    pub overlapping_holders: Option<overlapping_holders::OverlappingHolders>,
    pub stale_accesses: Option<stale_accesses::StaleAccesses>,
    /// The stories of the first violations of each kind (at most `STORIES` of each).
    pub stories: Vec<story::Story>,
    /// Whether the history holds every access the resource applied, by its final read.
    pub final_read: Option<FinalReadCheck>,
    /// Why the history cannot be called valid, one line each (empty when it can). Recorded even
    /// when a violation makes the verdict invalid.
    pub unknown_reasons: Vec<String>,
    /// Fencing tokens checked as the lock's promise: reused or gone backwards.
    pub token_violations: Option<tokens::TokenViolations>,
    /// Stale reads the resource accepted: told, and counted apart, but not by themselves a
    /// violation.
    pub stale_reads_accepted: usize,
    /// Stretches in which the lock was certainly free yet refused to everyone: a jammed lock.
    pub liveness: Option<liveness::Liveness>,
    /// Lease bounds a client program reported that the lock's server contradicts: told, not a
    /// violation (see `lease_claims`).
    pub lease_claims: Option<lease_claims::LeaseClaims>,
    /// Releases that completed `fail`, by the kind their client gave: told, no verdict rests on
    /// them.
    pub release_failures: model::ReleaseFailures,
}

/// How many violations of each kind get a story.
pub const STORIES: usize = 10;

impl Results {
    fn malformed(operations: usize, malformed: Malformed) -> Results {
        Results {
            valid: Validity::Unknown,
            unknown_reasons: vec![format!("the history is malformed at {malformed}")],
            malformed: Some(malformed),
            operations,
            incomplete: Vec::new(),
            answered_unknown: 0,
            setup: None,
            overlapping_holders: None,
            stale_accesses: None,
            stories: Vec::new(),
            final_read: None,
            token_violations: None,
            stale_reads_accepted: 0,
            liveness: None,
            lease_claims: None,
            release_failures: model::ReleaseFailures::default(),
        }
    }
}

/// Runs every checker over a history.
pub fn check(ops: &[Op]) -> Results {
    match model::build(ops) {
        Ok(model) => check_model(&model),
        Err(malformed) => Results::malformed(ops.len(), malformed),
    }
}

/// Runs every checker over a model built from a history.
pub fn check_model(model: &model::Model) -> Results {
    let overlaps = overlapping_holders::check(model);
    let stale = stale_accesses::check(model);
    let tokens = tokens::check(model);
    let liveness = liveness::check(model);
    // Stale writes first: they are the damage; then broken token promises, then the overlaps
    // behind them; stale reads last, as they lose nothing by themselves.
    let stale_of = |kind| {
        stale
            .violations
            .iter()
            .filter(move |v| v.access.kind == kind)
            .take(STORIES)
            .map(|v| story::of_stale_access(model, v))
    };
    let mut stories: Vec<story::Story> = stale_of(model::AccessKind::Write).collect();
    let first_tokens = tokens.violations.iter().take(STORIES);
    stories.extend(first_tokens.map(|v| token_story::of_token_violation(model, v)));
    let first_overlaps = overlaps.overlaps.iter().take(STORIES);
    stories.extend(first_overlaps.map(|o| story::of_overlap(model, o)));
    let first_jams = liveness.jams.iter().take(STORIES);
    stories.extend(first_jams.map(|j| jam_story::of_jam(model, j)));
    stories.extend(stale_of(model::AccessKind::Read));

    let final_read = FinalReadCheck::of(model);
    let mut unknown_reasons = completeness::unknown_reasons(model, final_read.as_ref());
    unknown_reasons.extend(liveness.unproven.clone());
    let proven = overlaps
        .valid
        .merge(stale.valid)
        .merge(tokens.valid)
        .merge(liveness.valid);
    let valid = match (proven, unknown_reasons.is_empty()) {
        (Validity::Valid, false) => Validity::Unknown,
        (verdict, _) => verdict,
    };
    Results {
        valid,
        malformed: None,
        operations: model.operations,
        incomplete: model.incomplete.clone(),
        answered_unknown: model.answered_unknown,
        setup: model.setup.clone(),
        stale_reads_accepted: stale.stale_reads,
        overlapping_holders: Some(overlaps),
        stale_accesses: Some(stale),
        stories,
        final_read,
        unknown_reasons,
        token_violations: Some(tokens),
        liveness: Some(liveness),
        lease_claims: Some(lease_claims::check(model)),
        release_failures: model.release_failures,
    }
}

/// Reads and checks a history as it streams in, keeping only the model, never every line; a
/// history that cannot be read is unknown with its line number.
pub fn check_reader(reader: impl std::io::BufRead) -> Results {
    check_reader_with_model(reader).0
}

/// [`check_reader`], also giving the model it built (empty when the history is malformed), for
/// callers that draw or measure the run from it without holding every line.
pub fn check_reader_with_model(reader: impl std::io::BufRead) -> (Results, model::Model) {
    let mut builder = model::Builder::default();
    let mut operations = 0;
    let mut lines = history::Lines::new(reader);
    loop {
        let pushed = match lines.next_record() {
            Ok(None) => break,
            Ok(Some((_, record))) => {
                operations += 1;
                builder.push_record(&record)
            }
            Err(malformed) => Err(malformed),
        };
        if let Err(malformed) = pushed {
            return malformed_with(&mut builder, operations, malformed);
        }
    }
    if let Some((index, malformed)) = builder.granted_twice() {
        return malformed_with(&mut builder, index as usize + 1, malformed);
    }
    match builder.finish() {
        Ok(model) => (check_model(&model), model),
        Err(malformed) => (
            Results::malformed(operations, malformed),
            model::Model::default(),
        ),
    }
}

/// The results of a history malformed at `malformed` after `operations` lines, unless an
/// earlier line is at fault: an acquisition granted twice, found when the builder settled its
/// index of holds, lines after that grant. Then that line, and the operations up to it.
fn malformed_with(
    builder: &mut model::Builder,
    operations: usize,
    malformed: Malformed,
) -> (Results, model::Model) {
    let (operations, malformed) = match builder.granted_twice() {
        Some((index, twice)) => (index as usize + 1, twice),
        None => (operations, malformed),
    };
    (
        Results::malformed(operations, malformed),
        model::Model::default(),
    )
}

/// The parsing limit: reads a history and decodes every line into a borrowed typed record,
/// value included (into the same shapes the model builder uses), keeping nothing. The streaming
/// checker cannot be faster than this; `lockpick bench` measures both to compare. Returns the
/// number of operations, or where the history broke.
pub fn parse_only(reader: impl std::io::BufRead) -> Result<u64, Malformed> {
    let mut lines = history::Lines::new(reader);
    let mut operations = 0;
    while let Some((number, record)) = lines.next_record()? {
        model::decode_only(&record).map_err(|e| Malformed::at(number, e))?;
        operations += 1;
    }
    Ok(operations)
}
