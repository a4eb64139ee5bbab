//! The published `rslock` crate, used as its README shows (`LockManager::new(uris)`,
//! `acquire(resource, ttl)`, `extend(lock, ttl)`, `guard.release()`), as a real third-party
//! Redlock client that no one here wrote. Its `acquire` loops until it gets the lock and its
//! per-node timeouts cannot be set, so every call is bounded from outside with a timeout. It
//! reads the real clock: the client-clock nemesis cannot skew it. While held, a watchdog calls
//! its `extend` every third of the TTL; a failed `extend` unlocks every node (rslock's own way),
//! so the watchdog stops after one.

use std::time::Duration;

use rslock::{Lock, LockGuard, LockManager};
use tokio::runtime::Runtime;

use crate::clock::RunClock;
use crate::error::WorkloadError;
use crate::lease::{Lease, OnRenewal, Renewed, Watchdog};
use crate::lock_client::{Grant, LockClient, Outcome};
use crate::redis_node::{expires_by, set_after, RedisNode};
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
        let probes = addresses
            .iter()
            .map(|a| RedisNode::new(a, timeout))
            .collect::<Result<_, _>>()?;
        Ok(RslockLock {
            probes,
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

impl RslockLock {
    /// rslock's `acquire` retries inside, unseen: its grant may come long after the call was
    /// made. The servers say when: each node still holding our value tells its remaining time,
    /// so it set the key TTL minus that before it counted. The grant needed a quorum of sets,
    /// so with answers from enough nodes to meet every quorum (n − quorum + 1), the earliest of
    /// their sets is a lower bound of the grant.
    ///
    /// When every node answered, the latest of their counts also bounds the lease's end: no
    /// other node holds our value, and rslock's requests have all returned.
    fn servers_say(&mut self, value: &[u8], invoke: u64) -> ServersSay {
        let (key, ttl_ms) = (self.key.as_bytes(), self.ttl.as_millis() as u64);
        let sent = self.clock.now();
        let answers = on_every_node(&mut self.probes, |node| node.remaining_if_equal(key, value));
        let answered = self.clock.now();
        let remaining: Vec<u64> = answers
            .iter()
            .filter_map(|a| match a {
                Outcome::Ok(Some(r)) => Some(*r),
                _ => None,
            })
            .collect();
        let n = answers.len();
        let all_answered = answers.iter().all(|a| matches!(a, Outcome::Ok(_)));
        let expires_by = remaining
            .iter()
            .map(|r| expires_by(answered, *r))
            .max()
            .filter(|_| all_answered);
        let granted_after = remaining
            .iter()
            .map(|r| set_after(sent, ttl_ms, *r))
            .min()
            .filter(|_| remaining.len() > n - quorum(n))
            .map(|earliest| earliest.max(invoke));
        ServersSay {
            granted_after,
            expires_by,
        }
    }
}

/// What the servers said of a grant rslock made: when it was granted at the earliest, and when
/// its lease ends at the latest.
struct ServersSay {
    granted_after: Option<u64>,
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
                let said = self.servers_say(&guard.lock.val, invoke);
                let granted_after = said.granted_after;
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
                            Ok(Ok(_)) => Renewed::Extended(Lease::set_between(
                                invoke,
                                clock.now(),
                                ttl,
                                drift(ttl),
                                drift(ttl),
                            )),
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

    fn release(&mut self, _grant: &Grant) -> Outcome<()> {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        let Some(guard) = self.held.take() else {
            return Outcome::Fail("no rslock guard held".to_string());
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
