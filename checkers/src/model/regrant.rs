//! A renewal sent after its lease had certainly ended is no renewal: whatever it did (a `SET`
//! that took the key back, a blind `PEXPIRE` of another client's key), the client then believed
//! it held a lease it had lost, so the renewal was a grant of its own. The hold's lease is then
//! told in segments: the one that ended, and the one the renewal began. The overlap's cause
//! reads the segment in force at the other grant, and names the renewal when it took the lock
//! while another client's lease was live (`overlap_cause`).

use serde::{Deserialize, Serialize};

use super::{Contradiction, Hold, Lease, ServerLease};

/// A renewal sent once the lease it renewed had certainly ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Regrant {
    /// When its request was sent (the renew line's `sent`).
    pub sent: u64,
    /// When it was recorded, and its index in the history.
    pub at: u64,
    pub index: u64,
    /// The end of the lease it renewed, which it came after (`expires_by` of the record before).
    pub after_end: u64,
}

/// The lease of a hold up to a regrant: what it was before the renewal took the lock anew.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// From when this segment's lease was in force: the grant, or a regrant's `sent`.
    pub from: u64,
    pub lease: Option<Lease>,
    pub server_lease: Option<ServerLease>,
    pub contradiction: Option<Contradiction>,
}

/// The lease evidence of a hold in force at one moment: its latest segment, or an earlier one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeaseAt<'h> {
    pub lease: Option<Lease>,
    pub server_lease: Option<ServerLease>,
    pub contradiction: Option<Contradiction>,
    /// The regrant that began this segment, if one did.
    pub began_by: Option<&'h Regrant>,
}

impl Hold {
    /// The lease evidence in force at `t`: the segment that began last at or before `t`.
    pub fn lease_at(&self, t: u64) -> LeaseAt<'_> {
        let current_from = self.regrants().last().map_or(0, |r| r.sent);
        if self.earlier().is_empty() || t >= current_from {
            return LeaseAt {
                lease: self.lease,
                server_lease: self.server_lease(),
                contradiction: self.contradiction(),
                began_by: self.regrants().last(),
            };
        }
        let i = self
            .earlier()
            .iter()
            .rposition(|s| s.from <= t)
            .unwrap_or(0);
        let s = &self.earlier()[i];
        LeaseAt {
            lease: s.lease,
            server_lease: s.server_lease,
            contradiction: s.contradiction,
            began_by: i.checked_sub(1).and_then(|r| self.regrants().get(r)),
        }
    }

    /// Whether a renewal sent at `sent` comes after the lease it renews had certainly ended.
    pub(crate) fn regrant_at(&self, sent: Option<u64>) -> Option<u64> {
        let ended = self.lease?.expires_by?;
        let sent = sent?;
        let server_open = self
            .server_lease()
            .is_some_and(|s| s.ended_by.is_none() && self.contradiction().is_some());
        (sent >= ended && !server_open).then_some(ended)
    }
}
