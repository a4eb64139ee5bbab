//! The overlapping-holders checker as outputs tell it.

use super::{Checker, Finding, Sentence};
use crate::model::{Hold, Model, Setup};
use crate::overlap_cause::{self, OverlapCause};
use crate::overlapping_holders::OverlappingHolders;
use crate::words::{count, seconds, token};

impl Checker for OverlappingHolders {
    fn name(&self) -> &'static str {
        "overlapping holders"
    }

    fn finding(&self) -> Finding {
        Finding::broken_if(!self.overlaps.is_empty(), || {
            format!("{} overlapping holders", self.overlaps.len())
        })
    }

    fn story_kinds(&self) -> &'static [&'static str] {
        &["overlap"]
    }

    fn summary_lines(&self, setup: Option<&Setup>) -> Vec<String> {
        let mut out = vec![format!(
            "  overlapping holders: {} (among {} holds)",
            self.overlaps.len(),
            self.holds
        )];
        if !self.overlaps.is_empty() {
            // Told only when there are any: the class exists only where leaders are recorded.
            let failover = match self.lost_in_failover {
                0 => String::new(),
                n => format!(", {n} lost in a failover (a new leader granted it)"),
            };
            out.push(format!(
                "    by cause: {} holder(s) outlived their lease, {} granted under a live lease \
                 ({} broke mutual exclusion){failover}, {} not decidable",
                self.outlived_lease,
                self.granted_under_live_lease,
                Setup::mutual_exclusion_breaker(setup),
                self.undecidable
            ));
        }
        if let Some(first) = self.overlaps.first() {
            out.push(format!("    first: {}", held(&first.first)));
            out.push(format!("       and {}", held(&first.second)));
            out.push(format!(
                "       both held the lock {}{}",
                first.span_words(),
                if first.faults.is_empty() {
                    String::new()
                } else {
                    format!(", during {}", first.faults.join(", "))
                }
            ));
            if let Some(r) = &first.regrant {
                out.push(format!(
                    "       the grant that broke it: client {}'s renewal at {}, sent after its                      lease had ended by {}, took the lock while client {}'s lease was live",
                    first.first.process,
                    seconds(r.sent),
                    seconds(r.after_end),
                    first.second.process
                ));
            }
        }
        out
    }

    fn table_rows(&self) -> Vec<(&'static str, String)> {
        vec![
            ("holds", self.holds.to_string()),
            ("overlapping holders", self.overlaps.len().to_string()),
        ]
    }

    fn headline(&self, model: &Model) -> Vec<Sentence> {
        if self.overlaps.is_empty() {
            return Vec::new();
        }
        let mut out = vec![Sentence::new("overlap", overlap_sentence(model, self))];
        let grants = self.granted_under_live_lease;
        if grants > 0 && grants < self.overlaps.len() {
            out.push(Sentence::new(
                "overlap",
                format!(
                    "{}: {} broke mutual exclusion",
                    count(
                        grants,
                        "grant while the earlier lease was still live",
                        "grants while the earlier lease was still live"
                    ),
                    model.mutual_exclusion_breaker()
                ),
            ));
        }
        let regrants = self.overlaps.iter().filter(|o| o.regrant.is_some()).count();
        if regrants > 0 {
            out.push(Sentence::new(
                "overlap",
                format!(
                    "{} by a renewal sent after the renewing client's own lease had ended, which \
                     took the lock while the other client's lease was live: the renewal was the \
                     grant that broke mutual exclusion",
                    count(
                        regrants,
                        "grant under a live lease came",
                        "grants under a live lease came"
                    )
                ),
            ));
        }
        let lost = self.lost_in_failover;
        if lost > 0 && lost < self.overlaps.len() {
            out.push(Sentence::new(
                "overlap",
                format!(
                    "{}: the lock was lost in a failover",
                    count(
                        lost,
                        "grant by a new leader while the earlier lease was live",
                        "grants by a new leader while the earlier lease was live"
                    )
                ),
            ));
        }
        out
    }
}

/// What a failover did, in the words of a headline.
const FAILOVER: &str = "a new leader, which never had the earlier grant, granted the lock again \
                        while the earlier lease was live";

fn held(h: &Hold) -> String {
    format!(
        "client {} (acquisition {}, {}) held it from {} to {}{}",
        h.process,
        h.acquisition,
        token(h),
        seconds(h.start),
        seconds(h.end),
        if h.released { "" } else { " (never released)" }
    )
}

/// The overlaps and their causes: "27 overlapping holders, all because a frozen holder outlived
/// its lease".
fn overlap_sentence(model: &Model, o: &OverlappingHolders) -> String {
    let n = o.overlaps.len();
    let pairs = count(n, "pair of overlapping holders", "overlapping holders");
    let all = |what: &str| {
        if n == 1 {
            format!("{pairs}, {what}")
        } else {
            format!("{pairs}, all {what}")
        }
    };
    let frozen = o
        .overlaps
        .iter()
        .filter(|v| v.cause == OverlapCause::OutlivedLease)
        .all(|v| {
            model
                .faults
                .iter()
                .any(|w| w.freezes(v.first.process) && w.active_during(v.first.start, v.to))
        });
    let holder = if frozen {
        "a frozen holder"
    } else {
        "a holder"
    };
    if o.outlived_lease == n {
        all(&format!("because {holder} outlived its lease"))
    } else if o.granted_under_live_lease == n {
        all(&format!(
            "granted while the earlier lease was still live: {} broke mutual exclusion",
            model.mutual_exclusion_breaker()
        ))
    } else if o.lost_in_failover == n {
        all(&format!(
            "because the lock was lost in a failover: {FAILOVER}"
        ))
    } else if o.undecidable == n {
        all(&undecidable_words(model, o))
    } else {
        let mut parts = Vec::new();
        if o.outlived_lease > 0 {
            parts.push(format!(
                "{} because {holder} outlived its lease",
                o.outlived_lease
            ));
        }
        if o.granted_under_live_lease > 0 {
            parts.push(format!(
                "{} granted while the earlier lease was still live",
                o.granted_under_live_lease
            ));
        }
        if o.lost_in_failover > 0 {
            parts.push(format!(
                "{} because the lock was lost in a failover",
                o.lost_in_failover
            ));
        }
        if o.undecidable > 0 {
            parts.push(format!("{} of undecidable cause", o.undecidable));
        }
        format!("{pairs}: {}", parts.join(", "))
    }
}

/// Why no overlap's cause could be decided, as far as the history shows. Most often nothing
/// bounds when the earlier holder's lease ended (a client program whose library renews in the
/// background and reports none of its renewals): then no freeze, however long, proves that the
/// lease had ended, and the sentence says what is missing rather than "cannot tell".
fn undecidable_words(model: &Model, o: &OverlappingHolders) -> String {
    let unbounded = o
        .overlaps
        .iter()
        .all(|v| overlap_cause::lease_ended_by(model, &v.first, v.second.granted_after).is_none());
    let renewal_unknown = o
        .overlaps
        .iter()
        .filter(|v| v.cause == OverlapCause::Undecidable)
        .all(|v| v.first.unknown_renewal_at().is_some());
    if unbounded && renewal_unknown {
        return "of undecidable cause: a renewal of the earlier holder's lease had an unknown \
                outcome, and the lost request may still be applied, so nothing bounds when that \
                lease ended (one unknown renewal leaves every later overlap of its hold \
                undecidable; see `sent_after_ms` in workloads/PROTOCOL.md)"
            .to_string();
    }
    if !unbounded {
        return format!(
            "of undecidable cause: the recorded lease bounds leave open whether a holder outlived \
             its lease or {} broke mutual exclusion",
            model.mutual_exclusion_breaker()
        );
    }
    let exec = model
        .setup
        .as_ref()
        .is_some_and(|s| s.lock.starts_with("exec:"));
    if exec {
        "of undecidable cause: the client program reported no end of the earlier holder's lease, \
         so the history cannot show that it had ended, however long that holder was frozen (a \
         program whose library renews in the background can say when: it reports each renewal, \
         `renewed` in workloads/PROTOCOL.md)"
            .to_string()
    } else {
        "of undecidable cause: no record bounds when the earlier holder's lease ended, so the \
         history cannot show it had ended"
            .to_string()
    }
}
