//! The single-node Redis lease: `SET key <random value> NX PX <ttl>` to acquire, a Lua
//! compare-and-delete to release, and while held a watchdog (as Redisson's) that extends the
//! lease with a Lua compare-and-PEXPIRE every third of the TTL. Redis hands out no fencing
//! token, so grants carry none.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::RunClock;
use crate::error::WorkloadError;
use crate::lease::{expires_by, Lease, OnRenewal, Renewed, Watchdog};
use crate::lock_client::{
    random_value, Grant, LockClient, Outcome, ReleaseFail, ReleaseFailKind, Released,
};
use crate::redis_node::RedisNode;

pub struct RedisLock {
    node: RedisNode,
    /// The watchdog's own connection, so a renewal never waits behind the worker's request.
    renewer: Arc<Mutex<RedisNode>>,
    key: String,
    ttl: Duration,
    clock: RunClock,
    watchdog: Option<Watchdog>,
}

impl RedisLock {
    /// A client of the lock `key` on the Redis server at `address` (`ip:port`). Every request
    /// gives up after `timeout`, which must be shorter than `ttl`.
    pub fn new(
        address: &str,
        key: &str,
        ttl: Duration,
        timeout: Duration,
        clock: RunClock,
    ) -> Result<RedisLock, WorkloadError> {
        Ok(RedisLock {
            node: RedisNode::new(address, timeout)?,
            renewer: Arc::new(Mutex::new(RedisNode::new(address, timeout)?)),
            key: key.to_string(),
            ttl,
            clock,
            watchdog: None,
        })
    }
}

/// One renewal of a Redis lease through `node`, the lease's bounds read on `clock`.
pub fn renew_on_node(
    node: &mut RedisNode,
    key: &str,
    value: &str,
    ttl: Duration,
    clock: RunClock,
) -> Renewed {
    let invoke = clock.now();
    match node.extend_if_equal(key, value, ttl) {
        Outcome::Ok(Some(remaining)) => Renewed::Extended(Lease {
            live_until: invoke + ttl.as_nanos() as u64,
            expires_by: Some(expires_by(clock.now(), remaining)),
        }),
        Outcome::Ok(None) => Renewed::Lost,
        Outcome::Fail(_) => Renewed::Unchanged,
        Outcome::Info(_) => Renewed::Unknown,
    }
}

/// A `SET` that took the lock: when it was sent and answered, and how long (µs) its key had
/// left by the server's own count.
pub struct SetSent {
    pub invoke: u64,
    pub completed: u64,
    pub remaining_us: u64,
}

/// The grant of `value` under `key` on the server at `address`: live for the TTL from the
/// `SET`'s sending, ended by the server's own count, and kept by a watchdog that renews it
/// through `renewer` (a connection of its own) every third of the TTL.
pub fn watched_grant(
    address: String,
    renewer: Arc<Mutex<RedisNode>>,
    (key, value): (&str, String),
    (ttl, clock): (Duration, RunClock),
    sent: SetSent,
    on_renewal: OnRenewal,
) -> (Watchdog, Grant) {
    let lease = Lease {
        live_until: sent.invoke + ttl.as_nanos() as u64,
        expires_by: Some(expires_by(sent.completed, sent.remaining_us)),
    };
    let (key, handle) = (key.to_string(), value.clone());
    let watchdog = Watchdog::start(clock, lease, ttl / 3, ttl / 3, on_renewal, move || {
        let mut node = renewer.lock().unwrap_or_else(|e| e.into_inner());
        renew_on_node(&mut node, &key, &handle, ttl, clock)
    });
    let grant = Grant {
        token: None,
        handle: value,
        granted_by: vec![address],
        lease,
        granted_after: None,
        lower_tokens_gone: false,
        server_lease: None,
    };
    (watchdog, grant)
}

impl LockClient for RedisLock {
    fn try_acquire(&mut self, _wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        let value = random_value();
        let invoke = self.clock.now();
        match self.node.set_if_absent(&self.key, &value, self.ttl) {
            Outcome::Ok(Some(remaining)) => {
                let sent = SetSent {
                    invoke,
                    completed: self.clock.now(),
                    remaining_us: remaining,
                };
                let (watchdog, grant) = watched_grant(
                    self.node.address().to_string(),
                    Arc::clone(&self.renewer),
                    (&self.key, value),
                    (self.ttl, self.clock),
                    sent,
                    on_renewal,
                );
                self.watchdog = Some(watchdog);
                Outcome::Ok(grant)
            }
            Outcome::Ok(None) => Outcome::Fail("held by another client".to_string()),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }

    fn release(&mut self, grant: &Grant) -> Released {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        match self.node.delete_if_equal(&self.key, &grant.handle) {
            Outcome::Ok(true) => Outcome::Ok(()),
            Outcome::Ok(false) => Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotOurs,
                "the lock was no longer ours: the lease had expired",
            )),
            Outcome::Fail(e) => Outcome::Fail(ReleaseFail::refused(e)),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}
