//! etcd's own lock: a lease (granted, then kept alive by a watchdog thread while held) and
//! the Lock API with that lease; release is unlock then revoke. The fencing token is the lock
//! key's create revision, which etcd fixes when the waiter queues and which only grows.
//!
//! When the holder freezes, its keep-alives stop, the lease expires, etcd deletes the lock key
//! and grants the next waiter: two holders, told apart by their tokens.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::clock::RunClock;
use crate::error::WorkloadError;
use crate::etcd_gateway::{encode, int_field, EtcdGateway};
use crate::lease::{Lease, OnRenewal, Renewed, Watchdog};
use crate::lock_client::{Grant, LockClient, Outcome, ReleaseFail, Released};

/// How late etcd may revoke an expired lease: its lessor looks for expired leases every 500 ms.
pub const EXPIRY_CHECK_PERIOD: Duration = Duration::from_millis(500);

pub struct EtcdLock {
    gateway: EtcdGateway,
    /// The keep-alive's own client, so a renewal never waits behind the worker's request.
    keeper: Arc<Mutex<EtcdGateway>>,
    key: String,
    ttl: Duration,
    timeout: Duration,
    clock: RunClock,
    watchdog: Option<Watchdog>,
}

/// etcd leases are whole seconds: a `ttl` rounded up, at least 1 s.
pub fn lease_length(ttl: Duration) -> Duration {
    Duration::from_secs(ttl.as_secs_f64().ceil().max(1.0) as u64)
}

impl EtcdLock {
    /// A client of the lock `key` on the members at `endpoints`. etcd leases are whole seconds:
    /// `ttl` is rounded up.
    pub fn new(
        endpoints: &[String],
        key: &str,
        ttl: Duration,
        timeout: Duration,
        clock: RunClock,
    ) -> Result<EtcdLock, WorkloadError> {
        Ok(EtcdLock {
            gateway: EtcdGateway::new(endpoints, timeout)?,
            keeper: Arc::new(Mutex::new(EtcdGateway::new(endpoints, timeout)?)),
            key: key.to_string(),
            ttl: lease_length(ttl),
            timeout,
            clock,
            watchdog: None,
        })
    }

    /// Revokes a lease (dropping any lock key attached to it). Returns whether etcd confirmed.
    fn revoke(&mut self, lease: i64) -> bool {
        matches!(
            self.gateway
                .call("lease/revoke", json!({ "ID": lease.to_string() }), None),
            Outcome::Ok(_)
        )
    }

    /// The bounds of a lease whose grant or keep-alive was sent at `invoke` and answered now.
    fn bounds(&self, invoke: u64, length: Duration) -> Lease {
        Lease::set_between(
            invoke,
            self.clock.now(),
            length,
            Duration::ZERO,
            EXPIRY_CHECK_PERIOD,
        )
    }
}

/// One keep-alive of `lease`, as etcd's clients send every third of the TTL.
fn keep_alive(gateway: &mut EtcdGateway, lease: i64, clock: RunClock) -> Renewed {
    let invoke = clock.now();
    match gateway.call("lease/keepalive", json!({ "ID": lease.to_string() }), None) {
        // A lease that has expired comes back with no TTL: it is gone for good.
        Outcome::Ok(v) => match int_field(&v["result"], "TTL") {
            // etcd answers with the lease's TTL, which it may have raised above ours.
            Some(granted) if granted > 0 => Renewed::Extended(Lease::set_between(
                invoke,
                clock.now(),
                Duration::from_secs(granted as u64),
                Duration::ZERO,
                EXPIRY_CHECK_PERIOD,
            )),
            _ => Renewed::Lost,
        },
        Outcome::Fail(_) => Renewed::Unchanged,
        Outcome::Info(_) => Renewed::Unknown,
    }
}

impl LockClient for EtcdLock {
    fn try_acquire(&mut self, wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        let granting = self.clock.now();
        let (lease, granted) =
            match self
                .gateway
                .call("lease/grant", json!({ "TTL": self.ttl.as_secs() }), None)
            {
                Outcome::Ok(v) => match (int_field(&v, "ID"), int_field(&v, "TTL")) {
                    (Some(id), Some(granted)) => (id, Duration::from_secs(granted.max(0) as u64)),
                    _ => return Outcome::Fail(format!("lease grant without an ID or TTL: {v}")),
                },
                // A lease nobody uses holds nothing and expires by itself.
                Outcome::Fail(e) | Outcome::Info(e) => {
                    return Outcome::Fail(format!("lease grant: {e}"))
                }
            };
        // etcd may raise a TTL below its minimum: the lease lasts as long as it says.
        let bounds = self.bounds(granting, granted);
        let request = json!({ "name": encode(&self.key), "lease": lease.to_string() });
        let lock_key = match self.gateway.call("lock/lock", request, Some(wait)) {
            Outcome::Ok(v) => v["key"].as_str().unwrap_or_default().to_string(),
            Outcome::Fail(e) | Outcome::Info(e) => {
                // Our waiter key may still sit in the queue: revoking the lease removes it.
                return if self.revoke(lease) {
                    Outcome::Fail(format!("lock: {e}; lease revoked"))
                } else {
                    Outcome::Info(format!("lock: {e}; the lease could not be revoked"))
                };
            }
        };
        let range = self
            .gateway
            .call("kv/range", json!({ "key": lock_key }), None);
        let token = match &range {
            Outcome::Ok(v) => v["kvs"]
                .get(0)
                .and_then(|kv| int_field(kv, "create_revision")),
            _ => None,
        };
        let Some(token) = token else {
            // Holding without knowing the token: give the lock up rather than work unfenced.
            let _ = self
                .gateway
                .call("lock/unlock", json!({ "key": lock_key }), None);
            self.revoke(lease);
            return Outcome::Info(format!(
                "granted, but the token could not be read: {range:?}"
            ));
        };
        // The lock call may have waited: the first keep-alive is due a third of the TTL after
        // the grant, which may be now.
        let period = granted / 3;
        let since_grant = Duration::from_nanos(self.clock.now().saturating_sub(granting));
        let (keeper, clock) = (Arc::clone(&self.keeper), self.clock);
        self.watchdog = Some(Watchdog::start(
            self.clock,
            bounds,
            period.saturating_sub(since_grant),
            period,
            on_renewal,
            move || {
                let mut gateway = keeper.lock().unwrap_or_else(|e| e.into_inner());
                keep_alive(&mut gateway, lease, clock)
            },
        ));
        Outcome::Ok(Grant {
            token: Some(token as u64),
            handle: format!("{lease} {lock_key}"),
            granted_by: Vec::new(),
            lease: bounds,
            granted_after: None,
            // etcd's lock grants once a read finds no lock key of a lower create revision
            // (`waitDeletes` in its `concurrency.Mutex`): every lower token's key was gone.
            lower_tokens_gone: true,
            server_lease: None,
        })
    }

    fn release(&mut self, grant: &Grant) -> Released {
        let (lease, lock_key) = grant.handle.split_once(' ').unwrap_or(("0", ""));
        let lease: i64 = lease.parse().unwrap_or(0);
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        let unlocked = self.gateway.call(
            "lock/unlock",
            json!({ "key": lock_key }),
            Some(self.timeout),
        );
        self.revoke(lease);
        match unlocked {
            Outcome::Ok(_) => Outcome::Ok(()),
            Outcome::Fail(e) => Outcome::Fail(ReleaseFail::refused(e)),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}
