//! The published `rslock` crate, used as its README shows (`LockManager::new(uris)`,
//! `acquire(resource, ttl)`, `extend(lock, ttl)`, `guard.release()`), as a real third-party
//! Redlock client that no one here wrote. Its `acquire` loops until it gets the lock and its
//! per-node timeouts cannot be set, so every call is bounded from outside with a timeout. It
//! reads the real clock: the client-clock nemesis cannot skew it. While held, a watchdog calls
//! its `extend` every third of the TTL; a failed `extend` unlocks every node (rslock's own way),
//! so the watchdog stops after one.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rslock::{Lock, LockGuard, LockManager};
use tokio::runtime::Runtime;

use crate::clock::RunClock;
use crate::error::WorkloadError;
use crate::lease::{Lease, OnRenewal, Renewed, Watchdog};
use crate::lock_client::{Grant, LockClient, Outcome, ReleaseFail, ReleaseFailKind, Released};
use crate::redis_node::{KeyTimes, RedisNode};
use crate::redlock::{drift, on_every_node, quorum};

pub struct RslockLock {
    // Field order is drop order: the watchdog blocks on the runtime, so it goes first.
    watchdog: Option<Watchdog>,
    /// Its worker thread drives rslock's connections for the worker and the watchdog alike.
    runtime: Runtime,
    manager: LockManager,
    key: String,
    ttl: Duration,
    timeout: Duration,
    clock: RunClock,
    /// The guard of the grant currently held; rslock releases through it.
    held: Option<LockGuard>,
    /// Our own connections to the same servers, to ask each for the remaining time of the key
    /// rslock set: the servers' word on when they granted it.
    probes: Vec<RedisNode>,
    /// The watchdog's own such connections, to ask after each extension.
    renew_probes: Arc<Mutex<Vec<RedisNode>>>,
}

impl RslockLock {
    pub fn new(
        addresses: &[String],
        key: &str,
        ttl: Duration,
        timeout: Duration,
        clock: RunClock,
    ) -> Result<RslockLock, WorkloadError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(WorkloadError::Runtime)?;
        let uris: Vec<String> = addresses.iter().map(|a| format!("redis://{a}/")).collect();
        let mut manager = runtime.block_on(async { LockManager::new(uris) });
        // The crate's own retries wait up to 200 ms between attempts, while a client that just
        // released comes back after 20-40 ms: a waiter would never get its turn. Retrying as
        // often as the other clients do keeps the turns fair (the crate's documented knob).
        manager.set_retry(3, Duration::from_millis(20));
        let connect = || -> Result<Vec<RedisNode>, WorkloadError> {
            Ok(addresses
                .iter()
                .map(|a| RedisNode::new(a, timeout))
                .collect::<Result<_, _>>()?)
        };
        Ok(RslockLock {
            probes: connect()?,
            renew_probes: Arc::new(Mutex::new(connect()?)),
            watchdog: None,
            runtime,
            manager,
            key: key.to_string(),
            ttl,
            timeout,
            clock,
            held: None,
        })
    }
}

/// What the servers say of our value, asked right after rslock granted or extended it:
/// each node still holding it tells its remaining time.
///
/// rslock's `acquire` retries inside, unseen: its grant may come long after the call was made.
/// A node holding our value says, by its own clock, how long ago it set it and how long until it
/// is gone (`KeyTimes`: from its absolute expiry and one reading of its clock, so no whole-ms
/// rounding is lost; a server without `PEXPIRETIME`, before Redis 7, answers an error, and then
/// the bounds stay the client's own). The grant needed a
/// quorum of sets, all answered before rslock returned: with h nodes holding our value, at least
/// quorum + h − n of them are in that quorum, so the (quorum + h − n)-th earliest of their sets
/// is a lower bound of the grant (given when that is at least the first).
///
/// When every node answered, their counts bound the lease's end: no other node holds our
/// value, and rslock's requests have all returned. A Redlock lease is held only on a quorum, so
/// it has ended once fewer than a quorum can still hold the key: by the quorum-th latest of
/// their expiries (the latest of them when fewer than a quorum hold it).
fn servers_say(
    probes: &mut [RedisNode],
    key: &[u8],
    value: &[u8],
    ttl: Duration,
    clock: RunClock,
) -> ServersSay {
    // Each node's answer timed on its own: a slow node (or thread) does not loosen the others.
    let answers = on_every_node(probes, |node| {
        let sent = clock.now();
        match node.times_if_equal(key, value, ttl) {
            Outcome::Ok(times) => Outcome::Ok((sent, times, clock.now())),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    });
    let counted: Vec<(u64, KeyTimes, u64)> = answers
        .iter()
        .filter_map(|a| match a {
            Outcome::Ok((sent, Some(times), answered)) => Some((*sent, *times, *answered)),
            _ => None,
        })
        .collect();
    let n = answers.len();
    let all_answered = answers.iter().all(|a| matches!(a, Outcome::Ok(_)));
    // A count from a clock that jumped bounds nothing: then no bound at all.
    let expiries: Option<Vec<u64>> = counted
        .iter()
        .map(|(_, times, answered)| times.gone_by(*answered))
        .collect();
    let sets: Option<Vec<u64>> = counted
        .iter()
        .map(|(sent, times, _)| times.set_after(*sent))
        .collect();
    ServersSay {
        set_by_quorum_after: sets.and_then(|s| earliest_quorum_set(s, n)),
        expires_by: expiries
            .and_then(|e| latest_quorum_expiry(e, n))
            .filter(|_| all_answered),
    }
}

/// The (quorum + h − n)-th earliest of the h sets of our value, `None` when that is not one.
fn earliest_quorum_set(mut sets: Vec<u64>, n: usize) -> Option<u64> {
    let in_quorum = (quorum(n) + sets.len())
        .checked_sub(n)
        .filter(|k| *k >= 1)?;
    sets.sort_unstable();
    sets.get(in_quorum - 1).copied()
}

/// The moment by which fewer than a quorum of the n nodes can still hold our key.
fn latest_quorum_expiry(mut expiries: Vec<u64>, n: usize) -> Option<u64> {
    expiries.sort_unstable_by(|a, b| b.cmp(a));
    expiries.get(quorum(n) - 1).or(expiries.first()).copied()
}

/// What the servers said of a grant or extension rslock made: when it was set on a quorum at
/// the earliest, and when its lease ends at the latest.
struct ServersSay {
    set_by_quorum_after: Option<u64>,
    expires_by: Option<u64>,
}

impl LockClient for RslockLock {
    fn try_acquire(&mut self, wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        let (manager, key, ttl) = (&self.manager, self.key.as_bytes(), self.ttl);
        let invoke = self.clock.now();
        let attempt = async move { tokio::time::timeout(wait, manager.acquire(key, ttl)).await };
        match self.runtime.block_on(attempt) {
            Ok(Ok(guard)) => {
                let mut lease =
                    Lease::set_between(invoke, self.clock.now(), ttl, drift(ttl), drift(ttl));
                let said = servers_say(&mut self.probes, key, &guard.lock.val, ttl, self.clock);
                let granted_after = said.set_by_quorum_after.map(|t| t.max(invoke));
                if let Some(expires_by) = said.expires_by {
                    lease.expires_by = Some(expires_by);
                }
                let handle = guard.lock.val.iter().map(|b| format!("{b:02x}")).collect();
                let ours = Lock {
                    resource: guard.lock.resource.clone(),
                    val: guard.lock.val.clone(),
                    validity_time: guard.lock.validity_time,
                    lock_manager: self.manager.clone(),
                };
                let (runtime, clock, timeout) =
                    (self.runtime.handle().clone(), self.clock, self.timeout);
                let (renew_probes, key) = (Arc::clone(&self.renew_probes), self.key.clone());
                self.watchdog = Some(Watchdog::start(
                    self.clock,
                    lease,
                    ttl / 3,
                    ttl / 3,
                    on_renewal,
                    move || {
                        let invoke = clock.now();
                        // The timer must be made inside the runtime.
                        let extend = async {
                            tokio::time::timeout(timeout, ours.lock_manager.extend(&ours, ttl))
                                .await
                        };
                        match runtime.block_on(extend) {
                            Ok(Ok(_)) => {
                                let mut lease = Lease::set_between(
                                    invoke,
                                    clock.now(),
                                    ttl,
                                    drift(ttl),
                                    drift(ttl),
                                );
                                let mut probes =
                                    renew_probes.lock().unwrap_or_else(|e| e.into_inner());
                                let said =
                                    servers_say(&mut probes, key.as_bytes(), &ours.val, ttl, clock);
                                if let Some(expires_by) = said.expires_by {
                                    lease.expires_by = Some(expires_by);
                                }
                                Renewed::Extended(lease)
                            }
                            // It may have extended a minority before giving up and unlocking.
                            Ok(Err(_)) => Renewed::GaveUp,
                            Err(_) => Renewed::Unknown,
                        }
                    },
                ));
                self.held = Some(guard);
                Outcome::Ok(Grant {
                    token: None,
                    handle,
                    granted_by: Vec::new(),
                    lease,
                    granted_after,
                    lower_tokens_gone: false,
                    server_lease: None,
                })
            }
            Ok(Err(e)) => Outcome::Fail(format!("rslock: {e}")),
            // Cut off mid-attempt: some SETs may have been sent.
            Err(_) => Outcome::Info(format!("rslock's acquire did not return within {wait:?}")),
        }
    }

    fn release(&mut self, _grant: &Grant) -> Released {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        let Some(guard) = self.held.take() else {
            return Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotHeld,
                "no rslock guard held",
            ));
        };
        // rslock's release is best effort and reports nothing: `ok` means it returned.
        let timeout = self.timeout;
        let release = async move { tokio::time::timeout(timeout, guard.release()).await };
        match self.runtime.block_on(release) {
            Ok(()) => Outcome::Ok(()),
            Err(_) => Outcome::Info(format!(
                "rslock's release did not return within {:?}",
                self.timeout
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grant_is_bounded_by_a_set_every_quorum_shares() {
        // All five hold our value: at least three of them are the grant's quorum, so the third
        // earliest set came before the grant.
        assert_eq!(earliest_quorum_set(vec![50, 10, 40, 20, 30], 5), Some(30));
        // Four hold it: at least two of the quorum are among them.
        assert_eq!(earliest_quorum_set(vec![40, 10, 30, 20], 5), Some(20));
        assert_eq!(earliest_quorum_set(vec![30, 10, 20], 5), Some(10));
        // Two may all lie outside the quorum: no bound.
        assert_eq!(earliest_quorum_set(vec![10, 20], 5), None);
    }

    #[test]
    fn the_lease_ends_once_fewer_than_a_quorum_can_hold_the_key() {
        assert_eq!(latest_quorum_expiry(vec![10, 50, 30, 20, 40], 5), Some(30));
        assert_eq!(latest_quorum_expiry(vec![10, 30, 20], 5), Some(10));
        // Fewer than a quorum hold it already: the latest of them.
        assert_eq!(latest_quorum_expiry(vec![10, 20], 5), Some(20));
        assert_eq!(latest_quorum_expiry(Vec::new(), 5), None);
    }
}
