//! The liveness checker (a jammed lock) as outputs tell it.

use super::{Checker, Finding, Sentence};
use crate::liveness::Liveness;
use crate::model::{Model, Setup};
use crate::stuck_keys::JamCause;
use crate::words::seconds;

impl Liveness {
    /// How the lock was free of holders, in the words of its jams: the first jam's cause when
    /// every jam has it, else both.
    fn free_words(&self) -> &'static str {
        let stuck = self
            .jams
            .iter()
            .filter(|j| j.cause != JamCause::LeasesEnded)
            .count();
        match stuck {
            0 => JamCause::LeasesEnded.free_words(),
            n if n == self.jams.len() => self.jams[0].cause.free_words(),
            _ => "nobody held it (every earlier lease ended, or a key with no expiry stayed)",
        }
    }
}

impl Checker for Liveness {
    fn name(&self) -> &'static str {
        "lock never jammed"
    }

    fn finding(&self) -> Finding {
        Finding::broken_if(!self.jams.is_empty(), || {
            format!(
                "the lock jammed {} time(s): refused to everyone while {} for over {} ms",
                self.jams.len(),
                self.free_words(),
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
            let how = match first.cause {
                JamCause::LeasesEnded => format!("the last lease to end was {}", first.free_how),
                _ => first.free_how.clone(),
            };
            out.push(format!(
                "  lock jammed: {} time(s) refused to everyone while {} for over {} ms; first: \
                 from {} to {} ({how}), {} refused attempts",
                self.jams.len(),
                self.free_words(),
                self.bound_ms,
                seconds(first.free_from),
                seconds(first.until),
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
                    "The lock jammed: {} {}, yet every acquire was refused (the longest for {})",
                    if self.jams.len() == 1 {
                        "once".to_string()
                    } else {
                        format!("{} times", self.jams.len())
                    },
                    self.free_words(),
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
