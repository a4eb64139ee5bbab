//! One hold of the model. A history has millions of them and most never have a failed release,
//! a granting server, the server's count, a contradiction, an unknown renewal or a regrant: those
//! live behind one box, allocated only for a hold that has one (a hold is ~150 bytes instead of
//! ~320; at 10M lines the model is written once and its size is what the check pays over the
//! parse). results.json keeps the flat shape (`HoldRecord`).

use serde::{Deserialize, Serialize};

use super::{Contradiction, Lease, Regrant, ReleaseFailed, Segment, ServerLease};

/// One successful acquisition, as its client believed it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "HoldRecord", into = "HoldRecord")]
pub struct Hold {
    pub acquisition: String,
    pub process: u64,
    /// The fencing token the lock service handed out, if it hands any out.
    pub token: Option<u64>,
    /// When the successful acquire attempt was invoked: the grant happened after this.
    pub invoked: u64,
    /// A lower bound of the grant: the client's own `granted_after` when it gave one (a queued
    /// lock's last check that still saw a predecessor), else `invoked`.
    pub granted_after: u64,
    /// When the client learned it held the lock (the acquire's `ok`).
    pub start: u64,
    /// When the client stopped believing it held the lock: its release invoke, or, if it never
    /// released, its next acquire invoke or its last event of all.
    pub end: u64,
    /// Whether the hold ended with a release invoke.
    pub released: bool,
    /// When the release completed `ok` (the lock service let it go), if it did.
    pub released_ok_at: Option<u64>,
    pub start_index: u64,
    pub end_index: u64,
    /// The lease as its acquire and renewals recorded it: `live_until` the latest of them all,
    /// `expires_by` that of the latest record. `None` when the client recorded no lease.
    pub lease: Option<Lease>,
    /// How many background renewals the client recorded for this acquisition.
    pub renewals: u64,
    /// The service granted it only once every lower token's lock entry was gone (the acquire's
    /// `lower_tokens_gone`).
    pub lower_tokens_gone: bool,
    /// Whether any of its lease records came with the server's count.
    pub server_checked: bool,
    /// What few holds have; `None` while it has none of it. Read and set through the methods of
    /// each field's name (public so that a hold can be written `Hold { .., ..Hold::default() }`).
    pub rare: Option<Box<Rare>>,
    /// Time of the latest lease record (the acquire's `ok` or a renewal).
    pub(crate) lease_recorded: u64,
}

/// The fields of a hold that few holds have (each one's meaning: the accessor of its name).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rare {
    release_failed: Option<ReleaseFailed>,
    granted_by: Option<String>,
    server_lease: Option<ServerLease>,
    contradiction: Option<Contradiction>,
    unknown_renewal_at: Option<u64>,
    regrants: Vec<Regrant>,
    earlier: Vec<Segment>,
}

impl Hold {
    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Drops the box once it holds nothing: a hold has one only while it has a rare field, so
    /// two holds that say the same compare equal.
    fn tidy(&mut self) {
        if self.rare.as_deref().is_some_and(|r| *r == Rare::default()) {
            self.rare = None;
        }
    }

    /// The release completed `fail`, and what kind its client said it was. Told, never taken
    /// as the lease's end.
    pub fn release_failed(&self) -> Option<ReleaseFailed> {
        self.rare.as_ref().and_then(|r| r.release_failed)
    }

    /// The one server that granted it, when its acquire's `nodes` names exactly one (a lock on
    /// one server, or the primary a Sentinel lock wrote to); `None` for none or several.
    pub fn granted_by(&self) -> Option<&str> {
        self.rare.as_ref().and_then(|r| r.granted_by.as_deref())
    }

    /// The lock server's own count of the lease of the latest lease record, asked right after
    /// it (exec locks: the grant or an `extend`); `None` when that record came without one.
    pub fn server_lease(&self) -> Option<ServerLease> {
        self.rare.as_ref().and_then(|r| r.server_lease)
    }

    /// The first reported lease of this hold (its acquire's or a renewal's) that the server's
    /// count contradicts.
    pub fn contradiction(&self) -> Option<Contradiction> {
        self.rare.as_ref().and_then(|r| r.contradiction)
    }

    /// When a renewal of unknown outcome first left the lease with no known end (a `renew`
    /// with no `expires_by` after records that had one): the lost request may still be
    /// applied, so no later record bounds the lease.
    pub fn unknown_renewal_at(&self) -> Option<u64> {
        self.rare.as_ref().and_then(|r| r.unknown_renewal_at)
    }

    /// Renewals sent after the lease they renewed had certainly ended: grants of their own
    /// (`regrant.rs`). `lease`, `server_lease` and `contradiction` are then those of the
    /// segment the last of them began.
    pub fn regrants(&self) -> &[Regrant] {
        self.rare.as_ref().map_or(&[], |r| &r.regrants)
    }

    /// The lease segments before each regrant, in order.
    pub fn earlier(&self) -> &[Segment] {
        self.rare.as_ref().map_or(&[], |r| &r.earlier)
    }

    pub fn set_release_failed(&mut self, failed: Option<ReleaseFailed>) {
        if failed.is_some() || self.rare.is_some() {
            self.rare_mut().release_failed = failed;
            self.tidy();
        }
    }

    pub fn set_granted_by(&mut self, server: Option<String>) {
        if server.is_some() || self.rare.is_some() {
            self.rare_mut().granted_by = server;
            self.tidy();
        }
    }

    pub fn set_server_lease(&mut self, server: Option<ServerLease>) {
        if server.is_some() || self.rare.is_some() {
            self.rare_mut().server_lease = server;
            self.tidy();
        }
    }

    pub fn set_contradiction(&mut self, contradiction: Option<Contradiction>) {
        if contradiction.is_some() || self.rare.is_some() {
            self.rare_mut().contradiction = contradiction;
            self.tidy();
        }
    }

    pub fn set_unknown_renewal_at(&mut self, at: Option<u64>) {
        if at.is_some() || self.rare.is_some() {
            self.rare_mut().unknown_renewal_at = at;
            self.tidy();
        }
    }

    /// Closes the current segment at a regrant and begins the next with its record.
    pub(crate) fn begin_segment(&mut self, regrant: Regrant, lease: Lease) {
        let from = self.regrants().last().map_or(0, |r| r.sent);
        let segment = Segment {
            from,
            lease: self.lease,
            server_lease: self.server_lease(),
            contradiction: self.contradiction(),
        };
        let rare = self.rare_mut();
        rare.earlier.push(segment);
        rare.regrants.push(regrant);
        rare.server_lease = None;
        rare.contradiction = None;
        self.lease = Some(lease);
    }

    /// True when this hold was certainly granted after `other` was: by token when both have
    /// one and they differ, else by real time (this grant came after the moment the other's
    /// grant was known).
    pub fn granted_after(&self, other: &Hold) -> bool {
        match (self.token, other.token) {
            (Some(mine), Some(theirs)) if mine != theirs => mine > theirs,
            _ => self.granted_after > other.start,
        }
    }
}

/// A hold as results.json writes it and reads it back: every field in its place, as before the
/// rare ones moved behind a box.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
struct HoldRecord {
    acquisition: String,
    process: u64,
    /// The fencing token the lock service handed out, if it hands any out.
    token: Option<u64>,
    /// When the successful acquire attempt was invoked: the grant happened after this.
    invoked: u64,
    /// A lower bound of the grant: the client's own `granted_after` when it gave one (a queued
    /// lock's last check that still saw a predecessor), else `invoked`.
    granted_after: u64,
    /// When the client learned it held the lock (the acquire's `ok`).
    start: u64,
    /// When the client stopped believing it held the lock: its release invoke, or, if it never
    /// released, its next acquire invoke or its last event of all.
    end: u64,
    /// Whether the hold ended with a release invoke.
    released: bool,
    /// When the release completed `ok` (the lock service let it go), if it did.
    released_ok_at: Option<u64>,
    /// The release completed `fail`, and what kind its client said it was. Told, never taken
    /// as the lease's end.
    #[serde(skip_serializing_if = "Option::is_none")]
    release_failed: Option<ReleaseFailed>,
    start_index: u64,
    end_index: u64,
    /// The lease as its acquire and renewals recorded it: `live_until` the latest of them all,
    /// `expires_by` that of the latest record. `None` when the client recorded no lease.
    lease: Option<Lease>,
    /// How many background renewals the client recorded for this acquisition.
    renewals: u64,
    /// The service granted it only once every lower token's lock entry was gone (the acquire's
    /// `lower_tokens_gone`).
    lower_tokens_gone: bool,
    /// The one server that granted it, when its acquire's `nodes` names exactly one (a lock on
    /// one server, or the primary a Sentinel lock wrote to); `None` for none or several.
    #[serde(skip_serializing_if = "Option::is_none")]
    granted_by: Option<String>,
    /// The lock server's own count of the lease of the latest lease record, asked right after
    /// it (exec locks: the grant or an `extend`); `None` when that record came without one.
    server_lease: Option<ServerLease>,
    /// Whether any of its lease records came with the server's count.
    server_checked: bool,
    /// The first reported lease of this hold (its acquire's or a renewal's) that the server's
    /// count contradicts.
    contradiction: Option<Contradiction>,
    /// When a renewal of unknown outcome first left the lease with no known end (a `renew`
    /// with no `expires_by` after records that had one): the lost request may still be
    /// applied, so no later record bounds the lease.
    #[serde(skip_serializing_if = "Option::is_none")]
    unknown_renewal_at: Option<u64>,
    /// Renewals sent after the lease they renewed had certainly ended: grants of their own
    /// (`regrant.rs`). `lease`, `server_lease` and `contradiction` above are then those of the
    /// segment the last of them began.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    regrants: Vec<Regrant>,
    /// The lease segments before each regrant, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    earlier: Vec<Segment>,
    /// Time of the latest lease record (the acquire's `ok` or a renewal).
    #[serde(skip)]
    lease_recorded: u64,
}

impl From<HoldRecord> for Hold {
    fn from(r: HoldRecord) -> Hold {
        let mut hold = Hold {
            acquisition: r.acquisition,
            process: r.process,
            token: r.token,
            invoked: r.invoked,
            granted_after: r.granted_after,
            start: r.start,
            end: r.end,
            released: r.released,
            released_ok_at: r.released_ok_at,
            start_index: r.start_index,
            end_index: r.end_index,
            lease: r.lease,
            renewals: r.renewals,
            lower_tokens_gone: r.lower_tokens_gone,
            server_checked: r.server_checked,
            rare: None,
            lease_recorded: r.lease_recorded,
        };
        let rare = Rare {
            release_failed: r.release_failed,
            granted_by: r.granted_by,
            server_lease: r.server_lease,
            contradiction: r.contradiction,
            unknown_renewal_at: r.unknown_renewal_at,
            regrants: r.regrants,
            earlier: r.earlier,
        };
        if rare != Rare::default() {
            hold.rare = Some(Box::new(rare));
        }
        hold
    }
}

impl From<Hold> for HoldRecord {
    fn from(h: Hold) -> HoldRecord {
        let rare = h.rare.map(|r| *r).unwrap_or_default();
        HoldRecord {
            acquisition: h.acquisition,
            process: h.process,
            token: h.token,
            invoked: h.invoked,
            granted_after: h.granted_after,
            start: h.start,
            end: h.end,
            released: h.released,
            released_ok_at: h.released_ok_at,
            release_failed: rare.release_failed,
            start_index: h.start_index,
            end_index: h.end_index,
            lease: h.lease,
            renewals: h.renewals,
            lower_tokens_gone: h.lower_tokens_gone,
            granted_by: rare.granted_by,
            server_lease: rare.server_lease,
            server_checked: h.server_checked,
            contradiction: rare.contradiction,
            unknown_renewal_at: rare.unknown_renewal_at,
            regrants: rare.regrants,
            earlier: rare.earlier,
            lease_recorded: h.lease_recorded,
        }
    }
}
