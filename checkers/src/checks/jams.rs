//! The liveness checker (a jammed lock) as outputs tell it.

use super::{Checker, Finding, Sentence};
use crate::liveness::Liveness;
use crate::model::{Model, Setup};
use crate::words::seconds;

impl Checker for Liveness {
    fn name(&self) -> &'static str {
        "lock never jammed"
    }

    fn finding(&self) -> Finding {
        Finding::broken_if(!self.jams.is_empty(), || {
            format!(
                "the lock jammed {} time(s): refused to everyone while certainly free for over \
                 {} ms",
                self.jams.len(),
                self.bound_ms
            )
        })
    }

    fn story_kinds(&self) -> &'static [&'static str] {
        &["jam"]
    }

    fn summary_lines(&self, _setup: Option<&Setup>) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(first) = self.jams.first() {
            out.push(format!(
                "  lock jammed: {} time(s) refused to everyone while certainly free for over {} \
                 ms; first: from {} to {} (the last lease to end was {}), {} refused attempts",
                self.jams.len(),
                self.bound_ms,
                seconds(first.free_from),
                seconds(first.until),
                first.free_how,
                first.failed_attempts
            ));
        }
        if self.excused_wait > 0 {
            out.push(format!(
                "  unavailable (expected, not a jam): refused to everyone for up to {} while \
                 free, during server faults or their recovery",
                seconds(self.excused_wait)
            ));
        }
        out
    }

    fn table_rows(&self) -> Vec<(&'static str, String)> {
        let mut rows = vec![("times the lock jammed", self.jams.len().to_string())];
        if self.excused_wait > 0 {
            rows.push((
                "longest refused while free, during server faults",
                seconds(self.excused_wait),
            ));
        }
        rows
    }

    fn headline(&self, _model: &Model) -> Vec<Sentence> {
        let mut out = Vec::new();
        if !self.jams.is_empty() {
            let longest = self.jams.iter().map(|j| j.length()).max().unwrap_or(0);
            out.push(Sentence::new(
                "jam",
                format!(
                    "The lock jammed: {} nobody held it and every earlier lease had certainly \
                     ended, yet every acquire was refused (the longest for {})",
                    if self.jams.len() == 1 {
                        "once".to_string()
                    } else {
                        format!("{} times", self.jams.len())
                    },
                    seconds(longest)
                ),
            ));
        }
        if self.excused_wait > 0 {
            out.push(Sentence::new(
                "unavailable",
                format!(
                    "The lock was refused to everyone for up to {} while free, during server \
                     faults or their recovery: expected unavailability, not a jam",
                    seconds(self.excused_wait)
                ),
            ));
        }
        out
    }
}
