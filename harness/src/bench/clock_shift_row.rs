//! One row of the clock-shift bench and the steps its measurements share: shifting a child by
//! +30 s, refusing a measurement whose shift did not show, and folding alternating plain and
//! shifted rounds into bests and a median of paired overheads.

use std::process::Child;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::clock_shift::{inject, Clocks, ShiftedProcess};

#[derive(Debug, Serialize)]
pub struct ClockShiftRow {
    pub what: String,
    pub unit: &'static str,
    pub plain: f64,
    pub shifted: f64,
    /// How much worse shifted is than plain, in percent (more time, or fewer requests).
    pub overhead_percent: f64,
    /// The median over rounds of each round's own overhead (its plain and shifted halves run
    /// back to back): steadier than the bests on a loaded machine, where one lucky round moves
    /// a best.
    pub median_paired_overhead_percent: f64,
    /// The replacements that read the clock through the vDSO's own code (the others make a
    /// system call on every read).
    pub fast_paths: Vec<&'static str>,
}

/// Kills and reaps a child when dropped.
pub(super) struct Reaped(pub(super) Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The best of `values`: the least time, or the most requests.
fn best(values: Vec<f64>, unit: &str) -> f64 {
    let pick = if unit == "ns/call" {
        f64::min
    } else {
        f64::max
    };
    values.into_iter().reduce(pick).unwrap_or(f64::NAN)
}

/// Shifts `pid` by +30 s on the wall clocks, for a measurement.
pub(super) fn shifted(pid: u32) -> Result<ShiftedProcess> {
    let mut process = inject(pid as i32, Clocks::Wall)?;
    process.set_offset(30_000_000_000)?;
    Ok(process)
}

/// A measurement under a shift counts only if the shift showed.
pub(super) fn evident(ahead_s: f64, whose: &str) -> Result<()> {
    if (ahead_s - 30.0).abs() > 5.0 {
        bail!("{whose} was {ahead_s:+.0} s off, not +30 s: the shift did not take effect");
    }
    Ok(())
}

pub(super) fn row(
    what: &str,
    unit: &'static str,
    plain: Vec<f64>,
    shifted: Vec<f64>,
    fast_paths: &[&'static str],
) -> ClockShiftRow {
    let overhead = |plain: f64, shifted: f64| {
        if unit == "ns/call" {
            (shifted / plain - 1.0) * 100.0
        } else {
            (1.0 - shifted / plain) * 100.0
        }
    };
    let mut paired: Vec<f64> = plain
        .iter()
        .zip(&shifted)
        .map(|(p, s)| overhead(*p, *s))
        .collect();
    paired.sort_by(f64::total_cmp);
    let median_paired_overhead_percent = match paired.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => paired[n / 2],
        n => (paired[n / 2 - 1] + paired[n / 2]) / 2.0,
    };
    let (plain, shifted) = (best(plain, unit), best(shifted, unit));
    ClockShiftRow {
        what: what.to_string(),
        unit,
        plain,
        shifted,
        overhead_percent: overhead(plain, shifted),
        median_paired_overhead_percent,
        fast_paths: fast_paths.to_vec(),
    }
}
