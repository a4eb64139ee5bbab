//! The counts every output shows for a run: one number per kind of violation the checkers find,
//! and the figures told beside them (summary.md, JUnit, the index, compare's table, grid and
//! summary). Outputs loop over [`FIGURES`] for their columns, totals and properties, so a new
//! checker's count is one field of [`Counts`], one line of [`Counts::of`] and one line of
//! [`FIGURES`]; no output names it. A stored `results.json` reads back into [`Results`], so
//! the index counts a stored run by the same line.

use lockpick_checkers::Results;
use serde::Serialize;

/// The counts a summary and a comparison show for a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    pub overlaps: usize,
    pub stale_writes: usize,
    pub stale_reads: usize,
    /// Overlaps granted while the earlier lease was certainly live, those lost in a failover
    /// among them: each is a grant under a live lease, whatever made it.
    pub grants_under_live_lease: usize,
    /// Of those, the ones a new leader granted after a failover the history proves (absent
    /// from records older than the cause).
    #[serde(default)]
    pub lost_in_failover: usize,
    /// Fencing tokens that broke their promise: reused by two clients, or gone backwards.
    pub token_violations: usize,
    /// Stretches in which the lock was certainly free yet refused to everyone.
    pub jams: usize,
}

/// One count as outputs show it.
pub struct Figure {
    /// Its column header and its name in a line of totals or a property.
    pub title: &'static str,
    /// Whether it counts violations that make a verdict INVALID by themselves (stale reads are
    /// told apart; grants under a live lease are overlaps already counted).
    pub violation: bool,
    pub of: fn(&Counts) -> usize,
}

/// Every count, in the order outputs show them.
pub const FIGURES: [Figure; 7] = [
    Figure {
        title: "overlapping holders",
        violation: true,
        of: |c| c.overlaps,
    },
    Figure {
        title: "stale writes accepted",
        violation: true,
        of: |c| c.stale_writes,
    },
    Figure {
        title: "stale reads",
        violation: false,
        of: |c| c.stale_reads,
    },
    Figure {
        title: "grants under a live lease",
        violation: false,
        of: |c| c.grants_under_live_lease,
    },
    Figure {
        title: "lost in a failover",
        violation: false,
        of: |c| c.lost_in_failover,
    },
    Figure {
        title: "token violations",
        violation: true,
        of: |c| c.token_violations,
    },
    Figure {
        title: "jams",
        violation: true,
        of: |c| c.jams,
    },
];

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
            grants_under_live_lease: overlaps.map_or(0, |o| {
                o.granted_under_live_lease
                    .saturating_add(o.lost_in_failover)
            }),
            lost_in_failover: overlaps.map_or(0, |o| o.lost_in_failover),
            token_violations: results
                .token_violations
                .as_ref()
                .map_or(0, |t| t.reused + t.went_backwards),
            jams: results.liveness.as_ref().map_or(0, |l| l.jams.len()),
        }
    }

    /// Each figure with its count, in [`FIGURES`] order.
    pub fn figures(&self) -> impl Iterator<Item = (&'static Figure, usize)> + '_ {
        FIGURES.iter().map(move |f| (f, (f.of)(self)))
    }

    /// "overlapping holders 3 · stale writes accepted 1 · …", every figure.
    pub fn line(&self) -> String {
        self.figures()
            .map(|(f, n)| format!("{} {n}", f.title))
            .collect::<Vec<_>>()
            .join(" · ")
    }

    /// Adds `other`'s counts, each stopping at the largest count there is: a total never wraps
    /// round to a small number (a shard's record is hostile input until re-judged).
    pub fn add(&mut self, other: Counts) {
        self.overlaps = self.overlaps.saturating_add(other.overlaps);
        self.stale_writes = self.stale_writes.saturating_add(other.stale_writes);
        self.stale_reads = self.stale_reads.saturating_add(other.stale_reads);
        self.grants_under_live_lease =
            (self.grants_under_live_lease).saturating_add(other.grants_under_live_lease);
        self.lost_in_failover = self.lost_in_failover.saturating_add(other.lost_in_failover);
        self.token_violations = self.token_violations.saturating_add(other.token_violations);
        self.jams = self.jams.saturating_add(other.jams);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_count_is_a_figure_and_sums_with_add() {
        let one = Counts {
            overlaps: 1,
            stale_writes: 2,
            stale_reads: 3,
            grants_under_live_lease: 4,
            lost_in_failover: 5,
            token_violations: 6,
            jams: 7,
        };
        let mut sum = one;
        sum.add(one);
        let shown: Vec<usize> = sum.figures().map(|(_, n)| n).collect();
        assert_eq!(shown, vec![2, 4, 6, 8, 10, 12, 14]);
        // A field left out of FIGURES or of `add` would break one of these.
        let serialized = serde_json::to_value(one).unwrap();
        assert_eq!(serialized.as_object().unwrap().len(), FIGURES.len());
    }

    #[test]
    fn a_total_stops_at_the_largest_count_instead_of_wrapping_to_a_small_one() {
        let huge = Counts {
            stale_writes: usize::MAX,
            ..Counts::default()
        };
        let mut sum = huge;
        sum.add(Counts {
            stale_writes: 1,
            ..Counts::default()
        });
        assert_eq!(sum.stale_writes, usize::MAX);
    }

    #[test]
    fn stored_results_of_any_age_give_their_counts() {
        let stored = serde_json::json!({
            "overlapping_holders": {"overlaps": [{}, {}], "granted_under_live_lease": 1},
            "stale_accesses": {"stale_writes": 3},
            "stale_reads_accepted": 4,
            "token_violations": {"reused": 1, "went_backwards": 2},
            "liveness": {"jams": [{}]},
        });
        let counts = Counts::of(&serde_json::from_value(stored).unwrap());
        assert_eq!(
            counts.line(),
            "overlapping holders 2 · stale writes accepted 3 · stale reads 4 · grants under a \
             live lease 1 · lost in a failover 0 · token violations 3 · jams 1"
        );
    }

    #[test]
    fn a_grant_lost_in_a_failover_is_a_grant_under_a_live_lease_too() {
        let stored = serde_json::json!({
            "overlapping_holders": {"overlaps": [{}, {}, {}], "granted_under_live_lease": 1,
                                    "lost_in_failover": 2},
        });
        let counts = Counts::of(&serde_json::from_value(stored).unwrap());
        assert_eq!(
            (counts.grants_under_live_lease, counts.lost_in_failover),
            (3, 2)
        );
        // A record written before the cause existed reads as none lost.
        let older: Counts = serde_json::from_value(serde_json::json!({"overlaps": 1,
            "stale_writes": 0, "stale_reads": 0, "grants_under_live_lease": 1,
            "token_violations": 0, "jams": 0}))
        .unwrap();
        assert_eq!(older.lost_in_failover, 0);
    }
}
