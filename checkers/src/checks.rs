//! The checkers as outputs list them: one entry per checker that ran, in the order outputs
//! show them, each saying what it found in one history. JUnit's cases loop over
//! [`Results::checks`], so a new checker is its own module plus one entry here.

use crate::Results;

/// What one checker found.
#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// It checked, and the history shows no violation of its kind.
    Held,
    /// It found violations, told in one line.
    Broken(String),
    /// It had nothing to check, and why.
    NotChecked(String),
}

/// One checker's name and finding.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub name: &'static str,
    pub finding: Finding,
    /// The kinds of story (`Story::kind`) that tell its violations.
    pub story_kinds: &'static [&'static str],
}

impl Results {
    /// Every checker that ran over this history, with what it found.
    pub fn checks(&self) -> Vec<Check> {
        let found = |broken: bool, line: String| {
            if broken {
                Finding::Broken(line)
            } else {
                Finding::Held
            }
        };
        let mut checks = Vec::new();
        if let Some(o) = &self.overlapping_holders {
            checks.push(Check {
                name: "overlapping holders",
                finding: found(
                    !o.overlaps.is_empty(),
                    format!("{} overlapping holders", o.overlaps.len()),
                ),
                story_kinds: &["overlap"],
            });
        }
        if let Some(s) = &self.stale_accesses {
            checks.push(Check {
                name: "stale writes accepted",
                finding: found(
                    s.stale_writes > 0,
                    format!(
                        "{} stale writes and {} stale reads accepted",
                        s.stale_writes, s.stale_reads
                    ),
                ),
                story_kinds: &["stale-write", "stale-read"],
            });
        }
        if let Some(t) = &self.token_violations {
            let finding = if t.checked {
                found(
                    !t.violations.is_empty(),
                    format!(
                        "fencing tokens broke their promise: {} reused, {} went backwards",
                        t.reused, t.went_backwards
                    ),
                )
            } else {
                Finding::NotChecked(
                    "the lock hands out no fencing token: no promise to check".to_string(),
                )
            };
            checks.push(Check {
                name: "fencing tokens",
                finding,
                story_kinds: &["token-reused", "token-went-backwards"],
            });
        }
        if let Some(l) = &self.liveness {
            checks.push(Check {
                name: "lock never jammed",
                finding: found(
                    !l.jams.is_empty(),
                    format!(
                        "the lock jammed {} time(s): refused to everyone while certainly free \
                         for over {} ms",
                        l.jams.len(),
                        l.bound_ms
                    ),
                ),
                story_kinds: &["jam"],
            });
        }
        checks
    }
}

#[cfg(test)]
mod tests {
    use crate::history::{Op, OpType, Process, F};
    use serde_json::json;

    #[test]
    fn every_checker_that_ran_is_listed_once_in_order() {
        let setup = Op::new(
            0,
            Process::named(Process::HARNESS),
            OpType::Info,
            F::Setup,
            json!({"lock": "redis", "token": "none", "ttl_ms": 1000}),
        );
        let results = crate::check(&[setup]);
        let names: Vec<&str> = results.checks().iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "overlapping holders",
                "stale writes accepted",
                "fencing tokens",
                "lock never jammed"
            ]
        );
        let tokens = &results.checks()[2];
        assert!(matches!(tokens.finding, super::Finding::NotChecked(_)));
    }
}
