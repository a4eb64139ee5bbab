//! Overlapping holders: two different client processes that both believed they held the lock at
//! the same real time.
//!
//! A hold runs from the acquire's `ok` (the earliest moment the client knew) to the release's
//! `invoke` (the last moment it certainly still believed), or to the client's last event if it
//! never released. Both ends are the conservative choice: a correct lock hands the lock to B only
//! after A's release was applied, which is after A's release invoke and before B's acquire ok,
//! so a correct lock never produces an overlap here, whatever the scheduling.
//!
//! Holds A and B of different clients overlap iff `A.start < B.end && B.start < A.end`: the
//! rule of a mutex model (A can be ordered before B only if A's release invoke is no later than
//! B's grant). A hold of zero length (a client whose acquire `ok` is its last event: it died
//! right after learning of its grant, or the history was cut there) counts like any other: a
//! grant strictly inside another client's hold is an overlap even though the time both held the
//! lock is a single instant. A release invoked at the very instant the next grant completes only
//! touches, and is no overlap.

use serde::{Deserialize, Serialize};

use crate::model::{Hold, Model};
use crate::overlap_cause::{self, OverlapCause};
use crate::verdict::Validity;
use crate::words::seconds;

/// One pair of holders whose holds overlapped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Overlap {
    /// The hold that started first.
    pub first: Hold,
    /// The hold that started while `first` was still held.
    pub second: Hold,
    /// Start and end of the time both held the lock (ns since the run began).
    pub from: u64,
    pub to: u64,
    /// Faults active at any moment from the start of the first hold to the end of the overlap,
    /// described as "pause of client 3": a fault that froze the first holder has often ended by
    /// the time its stale belief meets the next holder, yet it is the cause.
    pub faults: Vec<String>,
    /// What the history proves about why both held it (see [`crate::overlap_cause`]).
    pub cause: OverlapCause,
    /// The evidence for the cause, or why it cannot be decided.
    pub why: String,
    /// The renewal of the first holder that took the lock while the second's lease was live,
    /// when that was the grant that broke mutual exclusion (`model/regrant.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regrant: Option<crate::model::Regrant>,
}

impl Overlap {
    pub fn length(&self) -> u64 {
        self.to - self.from
    }

    /// How long both held the lock, in words: a span, or a single instant when one of the
    /// holds lasted no time (its client's grant was its last event).
    pub fn span_words(&self) -> String {
        if self.length() == 0 {
            format!(
                "at the same instant, {} (one of the holds lasted no time at all)",
                seconds(self.from)
            )
        } else {
            format!(
                "for {}, from {} to {}",
                seconds(self.length()),
                seconds(self.from),
                seconds(self.to)
            )
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OverlappingHolders {
    pub valid: Validity,
    pub holds: usize,
    pub overlaps: Vec<Overlap>,
    /// Overlaps whose earlier holder certainly outlived its lease.
    pub outlived_lease: usize,
    /// Overlaps granted while the earlier holder's lease was certainly live (those lost in a
    /// failover aside).
    pub granted_under_live_lease: usize,
    /// Overlaps granted under a live lease by a new leader after a failover: the lock was lost
    /// in the failover.
    pub lost_in_failover: usize,
    /// Overlaps whose cause the history cannot decide.
    pub undecidable: usize,
}

/// Finds every overlapping pair of holds from different processes.
pub fn check(model: &Model) -> OverlappingHolders {
    // Sorted only when out of order: a history's holds mostly come in order, and a sort
    // takes a scratch copy as large as the list.
    let (mut holds, in_order) = in_order_of(&model.holds, |h| (h.start, h.end));
    if !in_order {
        holds.sort_by_key(|h| (h.start, h.end));
    }
    let mut overlaps = Vec::new();
    // Holds that may still overlap a later one: those not yet ended. In a correct history this
    // stays at one entry, so the sweep is linear.
    let mut active: Vec<&Hold> = Vec::new();
    for hold in holds {
        active.retain(|a| a.end > hold.start);
        for earlier in &active {
            if earlier.process == hold.process {
                continue;
            }
            // `earlier.end > hold.start` holds for every active hold; the pair overlaps iff
            // also `earlier.start < hold.end` (see the module doc). The span both held it may
            // be a single instant (`from == to`) when one hold has zero length.
            if earlier.start >= hold.end {
                continue;
            }
            let from = hold.start;
            let to = earlier.end.min(hold.end);
            let (cause, why, regrant) = overlap_cause::classify(model, earlier, hold, to);
            overlaps.push(Overlap {
                first: (*earlier).clone(),
                second: hold.clone(),
                from,
                to,
                faults: model
                    .faults_during(earlier.start, to)
                    .iter()
                    .map(|w| w.describe())
                    .collect(),
                cause,
                why,
                regrant: regrant.copied(),
            });
        }
        active.push(hold);
    }
    let count = |cause| {
        overlaps
            .iter()
            .filter(|o: &&Overlap| o.cause == cause)
            .count()
    };
    OverlappingHolders {
        outlived_lease: count(OverlapCause::OutlivedLease),
        granted_under_live_lease: count(OverlapCause::GrantedUnderLiveLease),
        lost_in_failover: count(OverlapCause::LostInFailover),
        undecidable: count(OverlapCause::Undecidable),
        valid: if overlaps.is_empty() {
            Validity::Valid
        } else {
            Validity::Invalid
        },
        holds: model.holds.len(),
        overlaps,
    }
}

/// References to `holds`, and whether they are in the order of `key` already: one walk over
/// the holds for both (each hold a few cache lines from the next).
pub(crate) fn in_order_of<K: Ord>(holds: &[Hold], key: impl Fn(&Hold) -> K) -> (Vec<&Hold>, bool) {
    let mut in_order = true;
    let mut last: Option<K> = None;
    let refs = holds
        .iter()
        .inspect(|h| {
            let k = key(h);
            in_order &= last.as_ref().is_none_or(|l| *l <= k);
            last = Some(k);
        })
        .collect();
    (refs, in_order)
}
