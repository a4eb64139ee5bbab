//! A lock on a NATS JetStream KV bucket replicated on three servers (Raft), the way teams build
//! one on NATS: the bucket's `max_age` is the lease; acquire creates the key (refused when it
//! holds a value), renew updates it with its last revision (compare-and-set), release deletes it
//! with that revision. The token is the revision the create got: the stream's sequence, which
//! only grows.
//!
//! When the holder freezes, its renewals stop, the key's message ages out on every replica, and
//! the next create succeeds: two holders, told apart by their tokens.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::RunClock;
use crate::error::WorkloadError;
use crate::lease::{Lease, OnRenewal, Renewed, Watchdog};
use crate::lock_client::{
    random_value, Grant, LockClient, Outcome, ReleaseFail, ReleaseFailKind, Released,
};
use crate::nats_kv_session::{key_of, KeyState, NatsKvSession, WriteFail};

/// How late a key's message may outlive its `max_age`: each server removes aged messages on a
/// timer set for the oldest one's end (Go's timers, a loaded machine), so a little after it.
pub const EXPIRY_SLACK: Duration = Duration::from_millis(100);

pub struct NatsKvLock {
    session: NatsKvSession,
    /// The watchdog's own connection, so a renewal never waits behind the worker's request.
    renewer: Arc<Mutex<NatsKvSession>>,
    key: String,
    ttl: Duration,
    clock: RunClock,
    /// The key's last revision this client wrote (the grant's, then each renewal's).
    revision: Arc<AtomicU64>,
    watchdog: Option<Watchdog>,
}

impl NatsKvLock {
    /// A client of the lock `name` on the servers at `endpoints`; `ttl` is the bucket's
    /// `max_age`.
    pub fn new(
        endpoints: &[String],
        name: &str,
        ttl: Duration,
        timeout: Duration,
        clock: RunClock,
    ) -> Result<NatsKvLock, WorkloadError> {
        Ok(NatsKvLock {
            session: NatsKvSession::new(endpoints, ttl, timeout)?,
            renewer: Arc::new(Mutex::new(NatsKvSession::new(endpoints, ttl, timeout)?)),
            key: key_of(name),
            ttl,
            clock,
            revision: Arc::new(AtomicU64::new(0)),
            watchdog: None,
        })
    }

    /// One create of the key over its last revision `expected` (0: no message), timed.
    fn create(&mut self, value: &[u8], expected: u64) -> (u64, Outcome<u64, WriteFail>) {
        let invoke = self.clock.now();
        (
            invoke,
            self.session.write(&self.key, value, expected, false),
        )
    }
}

/// The bounds of a lease whose write was sent at `invoke` and answered at `completion`: the
/// stream's leader stamped the message in between, and every replica removes it `ttl` later.
fn bounds(invoke: u64, completion: u64, ttl: Duration) -> Lease {
    Lease::set_between(invoke, completion, ttl, Duration::ZERO, EXPIRY_SLACK)
}

/// One renewal: an update of the key over the revision last written.
fn renew(
    session: &mut NatsKvSession,
    key: &str,
    value: &[u8],
    revision: &AtomicU64,
    ttl: Duration,
    clock: RunClock,
) -> Renewed {
    let invoke = clock.now();
    match session.write(key, value, revision.load(Ordering::SeqCst), false) {
        Outcome::Ok(next) => {
            revision.store(next, Ordering::SeqCst);
            Renewed::Extended(bounds(invoke, clock.now(), ttl))
        }
        // The key aged out or someone else wrote it: the lease is gone.
        Outcome::Fail(WriteFail::WrongRevision(_)) => Renewed::Lost,
        Outcome::Fail(WriteFail::Refused(_)) => Renewed::Unchanged,
        Outcome::Info(_) => Renewed::Unknown,
    }
}

impl LockClient for NatsKvLock {
    fn try_acquire(&mut self, _wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        let holder = random_value();
        let (mut invoke, mut created) = self.create(holder.as_bytes(), 0);
        if let Outcome::Fail(WriteFail::WrongRevision(_)) = created {
            // The key has a message: a value (held), or a release's delete marker, over which
            // the key is created again at that marker's revision.
            match self.session.state(&self.key) {
                Outcome::Ok(KeyState::Deleted(marker)) => {
                    (invoke, created) = self.create(holder.as_bytes(), marker);
                }
                Outcome::Ok(KeyState::Held(_)) => {
                    return Outcome::Fail("held by another client".to_string())
                }
                Outcome::Ok(KeyState::Absent) => {
                    return Outcome::Fail("the key changed while it was read".to_string())
                }
                Outcome::Fail(e) | Outcome::Info(e) => return Outcome::Fail(e),
            }
        }
        let token = match created {
            Outcome::Ok(revision) => revision,
            Outcome::Fail(WriteFail::WrongRevision(_)) => {
                return Outcome::Fail("held by another client".to_string())
            }
            Outcome::Fail(WriteFail::Refused(e)) => return Outcome::Fail(e),
            Outcome::Info(e) => return Outcome::Info(e),
        };
        let lease = bounds(invoke, self.clock.now(), self.ttl);
        self.revision.store(token, Ordering::SeqCst);
        let (renewer, key, revision) = (
            Arc::clone(&self.renewer),
            self.key.clone(),
            Arc::clone(&self.revision),
        );
        let (ttl, clock, value) = (self.ttl, self.clock, holder.clone().into_bytes());
        self.watchdog = Some(Watchdog::start(
            self.clock,
            lease,
            ttl / 3,
            ttl / 3,
            on_renewal,
            move || {
                let mut session = renewer.lock().unwrap_or_else(|e| e.into_inner());
                renew(&mut session, &key, &value, &revision, ttl, clock)
            },
        ));
        Outcome::Ok(Grant {
            token: Some(token),
            handle: holder,
            granted_by: Vec::new(),
            lease,
            granted_after: None,
            // Not claimed, though the create is meant to apply only over no message or a delete
            // marker: a replicated stream's precondition is checked before its Raft proposal,
            // not in it (nats-server #4320; for a create's 0, #5644, fixed by PR #5794 in 2024), so
            // two racing creates may both apply. The lease bounds decide instead.
            lower_tokens_gone: false,
            server_lease: None,
        })
    }

    fn release(&mut self, _grant: &Grant) -> Released {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        let revision = self.revision.load(Ordering::SeqCst);
        match self.session.write(&self.key, b"", revision, true) {
            Outcome::Ok(_) => Outcome::Ok(()),
            Outcome::Fail(WriteFail::WrongRevision(e)) => Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotOurs,
                format!("the key was no longer ours (it had aged out): {e}"),
            )),
            Outcome::Fail(WriteFail::Refused(e)) => Outcome::Fail(ReleaseFail::refused(e)),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}
