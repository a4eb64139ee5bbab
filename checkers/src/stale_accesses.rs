//! Stale accesses accepted: walking the resource's apply order, an access the resource accepted
//! from an acquisition granted *before* another acquisition whose access it had already
//! accepted. The second holder's work has been overwritten, or read over, by the first holder's
//! stale view: the damage a fencing token exists to prevent.
//!
//! "Granted before" must be certain, or the checker would cry wolf: by token when both
//! acquisitions carry one and they differ, otherwise (no token, or the same token twice) by real
//! time (the later acquisition's grant came after the earlier one's grant was known). Accesses
//! the resource rejected are counted too: they are the fence doing its job.
//!
//! Only stale *writes* make the verdict invalid: they are lost updates. A stale read is counted
//! and told, but a read over a newer holder's work loses nothing by itself.

use serde::{Deserialize, Serialize};

use crate::model::{Access, AccessKind, AccessRecord, Hold, Model};
use crate::verdict::Validity;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StaleAccess {
    /// The stale access the resource accepted.
    pub access: AccessRecord,
    /// The acquisition the stale access came from.
    pub holder: Hold,
    /// An access accepted earlier from an acquisition granted after `holder`.
    pub overtaken_by: AccessRecord,
    pub newer_holder: Hold,
    /// Faults active between the stale holder's grant and its stale access.
    pub faults: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StaleAccesses {
    pub valid: Validity,
    pub accesses: usize,
    /// Stale writes the resource accepted.
    pub stale_writes: usize,
    /// Stale reads the resource accepted: told, but not by themselves a violation.
    pub stale_reads: usize,
    /// Accesses the resource rejected (fencing at work).
    pub rejected: usize,
    pub violations: Vec<StaleAccess>,
}

/// Finds every accepted access that came after an access from a newer acquisition.
pub fn check(model: &Model) -> StaleAccesses {
    // The newest acquisitions seen so far among accepted accesses: by token, and by invoke time
    // (for acquisitions without a token). Each keeps the access that proves it.
    let mut newest_by_token: Option<(&Access, &Hold)> = None;
    let mut newest_by_time: Option<(&Access, &Hold)> = None;
    let mut violations = Vec::new();
    let mut rejected = 0;

    for access in &model.accesses {
        if !access.accepted {
            rejected += 1;
            continue;
        }
        let holder = model.holder(access);
        let witness = [newest_by_token, newest_by_time]
            .into_iter()
            .flatten()
            .find(|(_, newer)| newer.granted_after(holder));
        if let Some((newer_access, newer_holder)) = witness {
            violations.push(StaleAccess {
                access: AccessRecord::of(access, &holder.acquisition),
                holder: holder.clone(),
                overtaken_by: AccessRecord::of(newer_access, &newer_holder.acquisition),
                newer_holder: newer_holder.clone(),
                faults: model
                    .faults_during(holder.start, access.time)
                    .iter()
                    .map(|w| w.describe())
                    .collect(),
            });
        }
        // Among equal tokens the latest grant is kept: the tie falls back to real time.
        let token_order = |h: &Hold| (h.token, h.granted_after);
        if holder.token.is_some()
            && newest_by_token.is_none_or(|(_, newest)| token_order(holder) > token_order(newest))
        {
            newest_by_token = Some((access, holder));
        }
        if newest_by_time.is_none_or(|(_, newest)| holder.granted_after > newest.granted_after) {
            newest_by_time = Some((access, holder));
        }
    }

    let count = |kind| violations.iter().filter(|v| v.access.kind == kind).count();
    let stale_writes = count(AccessKind::Write);
    StaleAccesses {
        valid: if stale_writes == 0 {
            Validity::Valid
        } else {
            Validity::Invalid
        },
        accesses: model.accesses.len(),
        stale_writes,
        stale_reads: count(AccessKind::Read),
        rejected,
        violations,
    }
}
