//! The counts every output shows for a run: one number per kind of violation the checkers find
//! (summary.md, JUnit, the index, compare's table and grid).

use lockpick_checkers::Results;
use serde::Serialize;

/// The counts a summary and a comparison show for a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    pub overlaps: usize,
    pub stale_writes: usize,
    pub stale_reads: usize,
    pub grants_under_live_lease: usize,
    /// Fencing tokens that broke their promise: reused by two clients, or gone backwards.
    pub token_violations: usize,
    /// Stretches in which the lock was certainly free yet refused to everyone.
    pub jams: usize,
}

impl Counts {
    pub fn of(results: &Results) -> Counts {
        let overlaps = results.overlapping_holders.as_ref();
        Counts {
            overlaps: overlaps.map_or(0, |o| o.overlaps.len()),
            stale_writes: results
                .stale_accesses
                .as_ref()
                .map_or(0, |s| s.stale_writes),
            stale_reads: results.stale_reads_accepted,
            grants_under_live_lease: overlaps.map_or(0, |o| o.granted_under_live_lease),
            token_violations: results
                .token_violations
                .as_ref()
                .map_or(0, |t| t.reused + t.went_backwards),
            jams: results.liveness.as_ref().map_or(0, |l| l.jams.len()),
        }
    }

    pub(crate) fn add(&mut self, other: Counts) {
        self.overlaps += other.overlaps;
        self.stale_writes += other.stale_writes;
        self.stale_reads += other.stale_reads;
        self.grants_under_live_lease += other.grants_under_live_lease;
        self.token_violations += other.token_violations;
        self.jams += other.jams;
    }
}
