//! The one extension point for locks: a client that can try to take a lock and give it back.

use std::time::Duration;

pub use lockpick_checkers::model::ReleaseFailKind;

use crate::lease::{Lease, OnRenewal, ServerLease};

/// What a call to a lock service or the resource did, as far as the client can know. `E` says
/// why it failed: words, or for a release, words and a kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<T, E = String> {
    /// It took effect.
    Ok(T),
    /// It certainly did not take effect (refused, or never sent).
    Fail(E),
    /// Nobody knows: the request may have been applied (a timeout after sending). Recorded as
    /// `info`, never as `fail`, because a timed-out `SET` can still be applied later.
    Info(String),
}

/// A lock the client holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The fencing token the service handed out with this grant, if it hands any out.
    pub token: Option<u64>,
    /// What the client needs to release exactly this grant (a random value, a key, a path).
    pub handle: String,
    /// The servers that granted it (for Redlock, the majority), so a nemesis can aim at them.
    pub granted_by: Vec<String>,
    /// The lease's bounds when the acquire returned (ns on the run clock).
    pub lease: Lease,
    /// A lower bound of the moment the service granted the lock, when the client knows one
    /// tighter than the acquire's own invoke (a queued lock that saw a predecessor ahead).
    pub granted_after: Option<u64>,
    /// The service granted this only once the lock entries of every lower token were gone (a
    /// queued lock whose grant is decided by a read that found none of them): whoever held a
    /// lower token had certainly lost its lease by the grant.
    pub lower_tokens_gone: bool,
    /// The lock server's own count of the lease, asked right after the grant, when the client's
    /// bounds are someone else's claim (an exec program's report) that the server can check.
    pub server_lease: Option<ServerLease>,
}

/// Why a release certainly did not take effect: what it means for the lease, and in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseFail {
    /// `None` when the client did not say (an exec program that gives no `kind`).
    pub kind: Option<ReleaseFailKind>,
    pub error: String,
}

impl ReleaseFail {
    pub fn new(kind: ReleaseFailKind, error: impl Into<String>) -> ReleaseFail {
        ReleaseFail {
            kind: Some(kind),
            error: error.into(),
        }
    }

    /// The service refused the request or could not be reached (a lock server's `Fail`).
    pub fn refused(error: String) -> ReleaseFail {
        ReleaseFail::new(ReleaseFailKind::Refused, error)
    }
}

/// What a release did.
pub type Released = Outcome<(), ReleaseFail>;

/// A random value that identifies one grant (the value of a Redis lock key).
pub fn random_value() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// A client of one lock on one lock service.
///
/// Contract: every call returns within the client's own timeout, which is shorter than the
/// lease, whatever the service does (frozen, cut off); a call never hangs. Implementations
/// classify outcomes honestly: `Fail` only when the operation cannot have taken effect.
///
/// A grant's lease is kept alive while it is held, however long the work takes: from a
/// successful `try_acquire` until `release` is called, a thread of this process renews it and
/// reports each renewal to that acquire's `on_renewal`; `release` stops the renewals before it
/// sends anything, and no report follows. Renewals that end in the dark (the process frozen) are
/// exactly what the lease is for.
pub trait LockClient {
    /// Tries once to take the lock, waiting at most `wait` for it where the service queues
    /// waiters. `Fail` means someone else holds it (or the request was never sent). Unless the
    /// outcome is `Ok`, `on_renewal` is dropped unused.
    fn try_acquire(&mut self, wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant>;

    /// Gives back a grant. `Fail` means it certainly did not take effect, and its kind says
    /// why: the lock was no longer this grant's (its lease ended), nothing was held to send,
    /// or the service refused it or could not be reached.
    fn release(&mut self, grant: &Grant) -> Released;

    /// The library that takes the lock, when the client learns it as it runs (an exec
    /// program's hello): the worker records it once, on the first acquire completion after.
    fn library(&self) -> Option<String> {
        None
    }

    /// The lock server's count of the lock's key, asked right after the last `try_acquire`
    /// when it was answered `Info` (a library that failed half-way through its acquire can
    /// leave the key behind): `None` when not asked or no word. Recorded on that completion,
    /// where a key with no expiry and nobody holding the lock shows a stuck lock.
    fn server_lease_after_unknown(&mut self) -> Option<crate::lease::ServerLease> {
        None
    }
}
