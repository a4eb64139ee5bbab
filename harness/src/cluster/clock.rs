//! The cluster's clock verbs: shift/unshift servers' clocks (libfaketime files), and
//! skew/unskew a client's own clock (the file its `SkewableClock` reads).
//!
//! Shifts on one server stack: its clock is off by the sum of the shifts open on it. Every
//! change is measured through the lock service (the server's own clock, read back), and counts
//! as effective when the measured offset is the new sum within a tolerance relative to the
//! change (10 % of it or 50 ms, whichever is larger), so a small jump that never happened is not
//! taken for one that did.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use serde_json::{json, Value};

use super::Cluster;
use crate::faketime;

/// One open shift of some servers' clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockShift(u64);

#[derive(Default)]
pub struct ClockState {
    /// Open shifts: the servers each moves and by how much (ms).
    shifts: BTreeMap<u64, (Vec<String>, i64)>,
    next: u64,
}

/// What a change of a server's clock was seen to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockEvidence {
    /// The offset the server's clock should now have: the sum of the open shifts on it (ms).
    pub expected_ms: i64,
    /// The offset read back through the service, when it could be read.
    pub measured_ms: Option<i64>,
    pub effective: Option<bool>,
}

impl ClockEvidence {
    fn of(expected_ms: i64, change_ms: i64, measured_ms: Option<i64>) -> ClockEvidence {
        let tolerance = (change_ms.abs() / 10).max(50);
        ClockEvidence {
            expected_ms,
            measured_ms,
            effective: measured_ms.map(|m| (m - expected_ms).abs() <= tolerance),
        }
    }

    /// Adds the evidence to a fault record.
    pub fn describe(&self, details: &mut Value) {
        details["expected_offset_ms"] = json!(self.expected_ms);
        if let Some(measured) = self.measured_ms {
            details["measured_offset_ms"] = json!(measured);
        }
        if let Some(effective) = self.effective {
            details["effective"] = json!(effective);
        }
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

    /// Writes every node's total into its clock file, then measures the first node.
    fn apply_clocks(&mut self, nodes: &[String], change_ms: i64) -> Result<ClockEvidence> {
        for node in nodes {
            let file = faketime::file(&self.scratch.path, node);
            faketime::set_offset(&file, self.total_shift(node))?;
        }
        let Some(first) = nodes.first() else {
            return Ok(ClockEvidence::of(0, change_ms, None));
        };
        let expected = self.total_shift(first);
        let measured = match self.nodes.get(first) {
            Some(node) => self.service.clock_offset_ms(self.runtime.as_ref(), node),
            None => None,
        };
        Ok(ClockEvidence::of(expected, change_ms, measured))
    }

    /// The file a client node's clock skew is written to.
    pub fn skew_file(&self, slot: &str) -> PathBuf {
        self.scratch.path.join(format!("clock-skew-{slot}"))
    }

    /// Skews the clock of the client in `slot` by `offset_ms`. Returns whether the skew file
    /// now says so.
    pub fn skew_client(&mut self, slot: &str, offset_ms: i64) -> Result<bool> {
        let file = self.skew_file(slot);
        crate::safe_write::replace(&file, format!("{offset_ms}\n"))
            .context("cannot write a skew file")?;
        Ok(std::fs::read_to_string(&file).is_ok_and(|t| t.trim() == offset_ms.to_string()))
    }

    pub fn unskew_client(&mut self, slot: &str) {
        let _ = std::fs::remove_file(self.skew_file(slot));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_jump_that_never_happened_is_not_effective() {
        // Asked for +100 ms on top of nothing; the clock did not move.
        let evidence = ClockEvidence::of(100, 100, Some(2));
        assert_eq!(evidence.effective, Some(false));
        assert_eq!(ClockEvidence::of(100, 100, Some(96)).effective, Some(true));
    }

    #[test]
    fn the_tolerance_grows_with_the_jump() {
        assert_eq!(
            ClockEvidence::of(10_000, 10_000, Some(9_100)).effective,
            Some(true)
        );
        assert_eq!(
            ClockEvidence::of(10_000, 10_000, Some(8_000)).effective,
            Some(false)
        );
        assert_eq!(ClockEvidence::of(0, 2_000, None).effective, None);
    }
}
