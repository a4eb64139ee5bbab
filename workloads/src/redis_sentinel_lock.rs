//! The Redis lease on a replicated Redis watched by Sentinels (`redis-sentinel`): the client
//! asks the Sentinels which server is the primary (`SENTINEL get-master-addr-by-name`), takes
//! the lock there with `SET key <random value> NX PX <ttl>`, keeps it with the same watchdog
//! as the single-node lease, and releases it with a compare-and-delete. Any error from the
//! primary (refused, `READONLY` from a demoted one, a timeout, a dropped connection) makes it
//! forget that primary and ask the Sentinels again on its next attempt: that is how it
//! follows a failover.
//!
//! The careful variant (`wait_replicas`) sends `WAIT n timeout` after the SET: fewer
//! acknowledgements than asked means not acquired (the key is deleted if still ours). WAIT only
//! says how many replicas had the write when it answered; it does not make a failover keep it
//! (Sentinel may promote the replica that did not), which is what the comparison measures.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::RunClock;
use crate::error::WorkloadError;
use crate::lease::{OnRenewal, Watchdog};
use crate::lock_client::{
    random_value, Grant, LockClient, Outcome, ReleaseFail, ReleaseFailKind, Released,
};
use crate::redis_lock::{watched_grant, SetSent};
use crate::redis_node::RedisNode;

/// The name the Sentinels monitor the primary by (`sentinel monitor <name> ...`).
pub const MASTER_NAME: &str = "lockpick";
/// The port every Sentinel listens on, beside its node's redis-server.
pub const SENTINEL_PORT: u16 = 26379;

/// How a lock client reaches the Sentinels and what it asks of them.
pub struct SentinelSettings {
    /// Each Sentinel's `ip:port`.
    pub sentinels: Vec<String>,
    /// How long one Sentinel may take to answer.
    pub sentinel_timeout: Duration,
    /// `WAIT` for this many replicas after the SET (the careful variant); `None`: no WAIT.
    pub wait_replicas: Option<u32>,
}

pub struct SentinelLock {
    settings: SentinelSettings,
    key: String,
    ttl: Duration,
    timeout: Duration,
    clock: RunClock,
    /// The primary the Sentinels named last, while nothing has gone wrong with it.
    primary: Option<RedisNode>,
    watchdog: Option<Watchdog>,
}

impl SentinelLock {
    /// A client of the lock `key` on the primary the Sentinels name. Every request to the
    /// primary gives up after `timeout`, which must be shorter than `ttl`.
    pub fn new(
        settings: SentinelSettings,
        key: &str,
        ttl: Duration,
        timeout: Duration,
        clock: RunClock,
    ) -> Result<SentinelLock, WorkloadError> {
        if settings.sentinels.is_empty() {
            return Err(WorkloadError::NoNodes);
        }
        Ok(SentinelLock {
            settings,
            key: key.to_string(),
            ttl,
            timeout,
            clock,
            primary: None,
            watchdog: None,
        })
    }

    /// The primary's connection: the one known, or the one the Sentinels name now.
    fn primary(&mut self) -> Result<&mut RedisNode, String> {
        if self.primary.is_none() {
            let address = primary_address(
                &self.settings.sentinels,
                MASTER_NAME,
                self.settings.sentinel_timeout,
            )?;
            let node =
                RedisNode::new(&address, self.timeout).map_err(|e| format!("{address}: {e}"))?;
            self.primary = Some(node);
        }
        Ok(self.primary.as_mut().expect("just set"))
    }

    /// After `SET` took: `WAIT` for the replicas asked, or give the key back. `Ok` when enough
    /// replicas acknowledged; else what the acquire answers.
    fn wait_for_replicas(&mut self, replicas: u32, value: &str) -> Outcome<()> {
        // Half the request timeout, so the server answers before the read gives up.
        let wait = self.timeout / 2;
        let Some(node) = self.primary.as_mut() else {
            return Outcome::Info("the primary was forgotten after SET".to_string());
        };
        let acked = match node.wait_replicas(replicas, wait) {
            Outcome::Ok(n) if n >= u64::from(replicas) => return Outcome::Ok(()),
            Outcome::Ok(n) => format!("{n} of {replicas} replica(s) acknowledged"),
            Outcome::Fail(e) | Outcome::Info(e) => format!("WAIT {replicas} failed: {e}"),
        };
        // Not acquired: take our key back, so nobody waits for a lock nobody holds. A primary
        // its replicas do not hear may have been replaced: ask the Sentinels again next time.
        let deleted = node.delete_if_equal(&self.key, value);
        self.primary = None;
        match deleted {
            Outcome::Ok(_) => Outcome::Fail(format!(
                "not acquired (too few replicas): {acked}; our key deleted"
            )),
            Outcome::Fail(e) | Outcome::Info(e) => {
                // The key may stand until its lease ends: whether we hold it is unknown.
                Outcome::Info(format!(
                    "too few replicas ({acked}), and the key could not be deleted: {e}"
                ))
            }
        }
    }
}

impl LockClient for SentinelLock {
    fn try_acquire(&mut self, _wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        let (key, ttl, timeout, clock) = (self.key.clone(), self.ttl, self.timeout, self.clock);
        let node = match self.primary() {
            Ok(node) => node,
            Err(e) => return Outcome::Fail(format!("no primary: {e}")),
        };
        let address = node.address().to_string();
        let value = random_value();
        let invoke = clock.now();
        let remaining = match node.set_if_absent(&key, &value, ttl) {
            Outcome::Ok(Some(remaining)) => remaining,
            Outcome::Ok(None) => return Outcome::Fail("held by another client".to_string()),
            Outcome::Fail(e) => {
                self.primary = None;
                return Outcome::Fail(e);
            }
            Outcome::Info(e) => {
                self.primary = None;
                return Outcome::Info(e);
            }
        };
        let sent = SetSent {
            invoke,
            completed: clock.now(),
            remaining_us: remaining,
        };
        if let Some(replicas) = self.settings.wait_replicas {
            match self.wait_for_replicas(replicas, &value) {
                Outcome::Ok(()) => {}
                Outcome::Fail(e) => return Outcome::Fail(e),
                Outcome::Info(e) => return Outcome::Info(e),
            }
        }
        // Renewals go to the primary that granted, on their own connection: after a failover
        // they fail there and the lease ends by its bounds.
        let renewer = match RedisNode::new(&address, timeout) {
            Ok(node) => Arc::new(Mutex::new(node)),
            Err(e) => return Outcome::Info(format!("{address}: no renewal connection: {e}")),
        };
        let (watchdog, grant) = watched_grant(
            address,
            renewer,
            (&key, value),
            (ttl, clock),
            sent,
            on_renewal,
        );
        self.watchdog = Some(watchdog);
        Outcome::Ok(grant)
    }

    fn release(&mut self, grant: &Grant) -> Released {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        let Some(node) = self.primary.as_mut() else {
            return Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotHeld,
                "no primary known since the grant: nothing sent",
            ));
        };
        match node.delete_if_equal(&self.key, &grant.handle) {
            Outcome::Ok(true) => Outcome::Ok(()),
            Outcome::Ok(false) => Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotOurs,
                "the lock was no longer ours: the lease had expired or a failover lost it",
            )),
            Outcome::Fail(e) => {
                self.primary = None;
                Outcome::Fail(ReleaseFail::refused(e))
            }
            Outcome::Info(e) => {
                self.primary = None;
                Outcome::Info(e)
            }
        }
    }
}

/// The primary's `ip:port` as most of the Sentinels that answer within `timeout` name it
/// (asked all at once); an error when none does.
pub fn primary_address(
    sentinels: &[String],
    master: &str,
    timeout: Duration,
) -> Result<String, String> {
    let answers: Vec<Result<String, String>> = std::thread::scope(|scope| {
        let asks: Vec<_> = sentinels
            .iter()
            .map(|sentinel| scope.spawn(move || ask_sentinel(sentinel, master, timeout)))
            .collect();
        asks.into_iter()
            .map(|ask| ask.join().unwrap_or_else(|_| Err("panicked".to_string())))
            .collect()
    });
    let named: Vec<&String> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    most_named(&named).map(str::to_string).ok_or_else(|| {
        let errors: Vec<&str> = answers
            .iter()
            .filter_map(|a| a.as_ref().err())
            .map(String::as_str)
            .collect();
        format!("no Sentinel named a primary ({})", errors.join("; "))
    })
}

/// The answer given most often (the first of those tied).
fn most_named<'a>(named: &[&'a String]) -> Option<&'a str> {
    let count = |a: &String| named.iter().filter(|b| **b == a).count();
    named
        .iter()
        .copied()
        .reduce(|best, a| if count(a) > count(best) { a } else { best })
        .map(String::as_str)
}

/// One Sentinel's answer to `SENTINEL get-master-addr-by-name`, as `ip:port`.
pub fn ask_sentinel(sentinel: &str, master: &str, timeout: Duration) -> Result<String, String> {
    let fail = |e: redis::RedisError| format!("{sentinel}: {e}");
    let client = redis::Client::open(format!("redis://{sentinel}/")).map_err(fail)?;
    let mut connection = client.get_connection_with_timeout(timeout).map_err(fail)?;
    connection.set_read_timeout(Some(timeout)).map_err(fail)?;
    connection.set_write_timeout(Some(timeout)).map_err(fail)?;
    let answer: Option<(String, String)> = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg(master)
        .query(&mut connection)
        .map_err(fail)?;
    let (ip, port) = answer.ok_or_else(|| format!("{sentinel}: knows no {master}"))?;
    Ok(format!("{ip}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::most_named;

    #[test]
    fn the_primary_is_the_one_most_sentinels_name() {
        let (a, b) = ("10.0.0.2:6379".to_string(), "10.0.0.3:6379".to_string());
        assert_eq!(most_named(&[&a, &b, &b]), Some(b.as_str()));
        assert_eq!(most_named(&[&a, &b]), Some(a.as_str()));
        assert_eq!(most_named(&[]), None);
    }
}
