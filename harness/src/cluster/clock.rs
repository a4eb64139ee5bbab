//! The cluster's clock verbs for servers: shift/unshift their clocks (libfaketime files, or a
//! patched vDSO for the services the catalogue says so of). A client's own clock is skewed in
//! [`super::client_clock`].
//!
//! Shifts on one server stack: its clock is off by the sum of the shifts open on it. Every
//! change is measured through the lock service (the server's own clock, read back), and counts
//! as effective when the measured offset is the new sum within a tolerance relative to the
//! change (10 % of it or 50 ms, whichever is larger, plus half the reading's resolution: a
//! `Date` header has whole seconds), so a small jump that never happened is not taken for one
//! that did. A change that could not be read back is not effective.

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::{json, Value};

use super::clock_vdso::{self, PatchedProcesses};
use super::Cluster;
use crate::processes::children::Role;
use crate::runtime::faketime;
use crate::service::entry::ClockMover;

/// One open shift of some servers' clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockShift(u64);

pub struct ClockState {
    mover: ClockMover,
    /// Open shifts: the servers each moves and by how much (ms).
    shifts: BTreeMap<u64, (Vec<String>, i64)>,
    next: u64,
    /// The servers whose vDSO is patched now (`ClockMover::Vdso`).
    patched: PatchedProcesses,
    /// The client programs whose vDSO is patched now, by client node (`skew-clients`).
    pub(super) programs: PatchedProcesses,
    /// How many times a client was asked for its program's clock (each ask's sequence number).
    pub(super) asks: u64,
}

impl ClockState {
    pub fn new(mover: ClockMover) -> ClockState {
        ClockState {
            mover,
            shifts: BTreeMap::new(),
            next: 0,
            patched: PatchedProcesses::default(),
            programs: PatchedProcesses::default(),
            asks: 0,
        }
    }
}

/// What a change of a server's clock was seen to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockEvidence {
    /// The offset the server's clock should now have: the sum of the open shifts on it (ms).
    pub expected_ms: i64,
    /// The offset read back through the service, when it could be read.
    pub measured_ms: Option<i64>,
    /// How coarse that reading is (ms).
    pub resolution_ms: i64,
    pub effective: Option<bool>,
    /// Why the clock of a server could not be set, if it could not.
    pub failure: Option<String>,
}

impl ClockEvidence {
    pub(super) fn of(
        expected_ms: i64,
        change_ms: i64,
        measured_ms: Option<i64>,
        resolution_ms: i64,
    ) -> ClockEvidence {
        let tolerance = (change_ms.abs() / 10).max(50) + resolution_ms / 2;
        ClockEvidence {
            expected_ms,
            measured_ms,
            resolution_ms,
            effective: measured_ms.map(|m| (m - expected_ms).abs() <= tolerance),
            failure: None,
        }
    }

    /// Adds the evidence to a fault record.
    pub fn describe(&self, details: &mut Value) {
        details["expected_offset_ms"] = json!(self.expected_ms);
        if let Some(measured) = self.measured_ms {
            details["measured_offset_ms"] = json!(measured);
            if self.resolution_ms > 1 {
                details["measured_resolution_ms"] = json!(self.resolution_ms);
            }
        }
        if let Some(effective) = self.effective {
            details["effective"] = json!(effective);
        }
        if let Some(failure) = &self.failure {
            details["clock_error"] = json!(failure);
        }
    }

    /// Adds the evidence to a fault's start record: a jump not read back is not effective.
    pub fn describe_start(&self, details: &mut Value) {
        self.describe(details);
        details["effective"] = json!(self.effective == Some(true));
    }
}

impl Cluster {
    /// Moves the clocks of `nodes` by `offset_ms` on top of any shift already open on them.
    pub fn shift_clocks(
        &mut self,
        nodes: &[String],
        offset_ms: i64,
    ) -> Result<(ClockShift, ClockEvidence)> {
        self.clocks.next += 1;
        let id = self.clocks.next;
        self.clocks.shifts.insert(id, (nodes.to_vec(), offset_ms));
        let evidence = self.apply_clocks(nodes, offset_ms)?;
        Ok((ClockShift(id), evidence))
    }

    /// Changes an open shift's offset (a strobing clock flips this way).
    pub fn reshift_clocks(&mut self, shift: ClockShift, offset_ms: i64) -> Result<ClockEvidence> {
        let Some((nodes, offset)) = self.clocks.shifts.get_mut(&shift.0) else {
            anyhow::bail!("no clock shift {}", shift.0);
        };
        let change = offset_ms - *offset;
        *offset = offset_ms;
        let nodes = nodes.clone();
        self.apply_clocks(&nodes, change)
    }

    /// Ends a shift; the servers keep whatever other shifts are still open on them.
    pub fn unshift_clocks(&mut self, shift: ClockShift) -> Result<ClockEvidence> {
        let Some((nodes, offset)) = self.clocks.shifts.remove(&shift.0) else {
            anyhow::bail!("no clock shift {}", shift.0);
        };
        self.apply_clocks(&nodes, -offset)
    }

    /// The sum of the open shifts on `node`.
    fn total_shift(&self, node: &str) -> i64 {
        self.clocks
            .shifts
            .values()
            .filter(|(nodes, _)| nodes.iter().any(|n| n == node))
            .map(|(_, offset)| offset)
            .sum()
    }

    /// Sets every node's clock to its total (its clock file, or its patched vDSO), then
    /// measures the first node.
    fn apply_clocks(&mut self, nodes: &[String], change_ms: i64) -> Result<ClockEvidence> {
        let mut failure = None;
        for node in nodes {
            match self.clocks.mover {
                ClockMover::Faketime => {
                    let file = faketime::file(&self.scratch.path, node);
                    let total = self.total_shift(node);
                    self.runtime
                        .set_faketime_offset(self.node(node)?, &file, total)?;
                }
                ClockMover::Vdso => {
                    if let Err(e) = self.patch_clock(node) {
                        failure.get_or_insert(format!("{e:#}"));
                    }
                }
            }
        }
        let mut evidence = self.measure(nodes.first(), change_ms);
        evidence.failure = failure;
        Ok(evidence)
    }

    fn measure(&self, node: Option<&String>, change_ms: i64) -> ClockEvidence {
        let resolution = self.service.clock_resolution_ms();
        let Some(first) = node else {
            return ClockEvidence::of(0, change_ms, None, resolution);
        };
        let expected = self.total_shift(first);
        let measured = match self.nodes.get(first) {
            Some(node) => self.service.clock_offset_ms(self.runtime.as_ref(), node),
            None => None,
        };
        ClockEvidence::of(expected, change_ms, measured, resolution)
    }

    /// Gives `node`'s running server (if it runs) its total shift through its vDSO, patching
    /// it at the first shift and restoring it when none is open any more.
    fn patch_clock(&mut self, node: &str) -> Result<()> {
        let open = self
            .clocks
            .shifts
            .values()
            .any(|(n, _)| n.iter().any(|n| n == node));
        if !open {
            return self.clocks.patched.restore(node);
        }
        // A server that is down gets its shift when it restarts.
        let Some(pid) = self.children.pid(&Role::Server(node.to_string())) else {
            return Ok(());
        };
        let total = self.total_shift(node);
        self.clocks.patched.set(node, pid.as_raw(), total)
    }

    /// After a restart of `node`'s server: a patched service's new process gets the shifts
    /// still open on the node, once it runs the server's program. `None` when there are none.
    pub(super) fn reshift_restarted(&mut self, node: &str, pid: i32) -> Option<ClockEvidence> {
        let open = self
            .clocks
            .shifts
            .values()
            .any(|(n, _)| n.iter().any(|n| n == node));
        if self.clocks.mover != ClockMover::Vdso || !open {
            return None;
        }
        self.clocks.patched.forget(node);
        let program = self.launches.get(node).map(|l| l.program.clone())?;
        let result = clock_vdso::wait_for_exec(pid, &program).and_then(|()| self.patch_clock(node));
        // The new server is not answering yet: what is recorded is what was set.
        let mut evidence = ClockEvidence::of(self.total_shift(node), 0, None, 1);
        evidence.failure = result.err().map(|e| format!("{e:#}"));
        Some(evidence)
    }

    /// A killed server's patch is gone with its process.
    pub(super) fn forget_patch(&mut self, node: &str) {
        self.clocks.patched.forget(node);
    }

    /// Puts back every patched vDSO (teardown); returns what could not be.
    pub(super) fn restore_clocks(&mut self) -> Vec<String> {
        let mut problems = self.clocks.patched.restore_all();
        problems.extend(self.clocks.programs.restore_all());
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_jump_that_never_happened_is_not_effective() {
        // Asked for +100 ms on top of nothing; the clock did not move.
        let evidence = ClockEvidence::of(100, 100, Some(2), 1);
        assert_eq!(evidence.effective, Some(false));
        assert_eq!(
            ClockEvidence::of(100, 100, Some(96), 1).effective,
            Some(true)
        );
        let mut details = json!({});
        ClockEvidence::of(100, 100, None, 1).describe_start(&mut details);
        assert_eq!(details["effective"], false);
    }

    #[test]
    fn the_tolerance_grows_with_the_jump() {
        assert_eq!(
            ClockEvidence::of(10_000, 10_000, Some(9_100), 1).effective,
            Some(true)
        );
        assert_eq!(
            ClockEvidence::of(10_000, 10_000, Some(8_000), 1).effective,
            Some(false)
        );
        assert_eq!(ClockEvidence::of(0, 2_000, None, 1).effective, None);
    }

    #[test]
    fn a_reading_in_whole_seconds_widens_the_tolerance_by_half_a_second() {
        // A 2 s jump read from a Date header: 0.7 s either way.
        assert_eq!(
            ClockEvidence::of(2_000, 2_000, Some(1_400), 1_000).effective,
            Some(true)
        );
        assert_eq!(
            ClockEvidence::of(2_000, 2_000, Some(0), 1_000).effective,
            Some(false)
        );
    }
}
