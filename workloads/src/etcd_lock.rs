//! etcd's own lock: a lease (granted, then kept alive from a background thread while held) and
//! the Lock API with that lease; release is unlock then revoke. The fencing token is the lock
//! key's create revision, which etcd fixes when the waiter queues and which only grows.
//!
//! When the holder freezes, its keep-alives stop, the lease expires, etcd deletes the lock key
//! and grants the next waiter: two holders, told apart by their tokens.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use serde_json::json;

use crate::etcd_gateway::{encode, int_field, EtcdGateway};
use crate::lock_client::{Grant, LockClient, Outcome};

pub struct EtcdLock {
    gateway: EtcdGateway,
    key: String,
    ttl_seconds: u64,
    timeout: Duration,
    /// The lease the keep-alive thread renews; 0 when none.
    kept_alive: Arc<AtomicI64>,
}

impl EtcdLock {
    /// A client of the lock `key` on the members at `endpoints`. etcd leases are whole seconds:
    /// `ttl` is rounded up.
    pub fn new(
        endpoints: &[String],
        key: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<EtcdLock, String> {
        let kept_alive = Arc::new(AtomicI64::new(0));
        let ttl_seconds = ttl.as_secs_f64().ceil().max(1.0) as u64;
        spawn_keep_alive(
            EtcdGateway::new(endpoints, timeout)?,
            Arc::clone(&kept_alive),
            Duration::from_millis(ttl_seconds * 1000 / 3),
        );
        Ok(EtcdLock {
            gateway: EtcdGateway::new(endpoints, timeout)?,
            key: key.to_string(),
            ttl_seconds,
            timeout,
            kept_alive,
        })
    }

    /// Revokes a lease (dropping any lock key attached to it). Returns whether etcd confirmed.
    fn revoke(&mut self, lease: i64) -> bool {
        self.kept_alive.store(0, Ordering::SeqCst);
        matches!(
            self.gateway
                .call("lease/revoke", json!({ "ID": lease.to_string() }), None),
            Outcome::Ok(_)
        )
    }
}

/// Renews the current lease every third of its TTL, as etcd's clients do.
fn spawn_keep_alive(mut gateway: EtcdGateway, lease: Arc<AtomicI64>, every: Duration) {
    thread::spawn(move || loop {
        thread::sleep(every);
        let id = lease.load(Ordering::SeqCst);
        if id != 0 {
            let _ = gateway.call("lease/keepalive", json!({ "ID": id.to_string() }), None);
        }
    });
}

impl LockClient for EtcdLock {
    fn try_acquire(&mut self, wait: Duration) -> Outcome<Grant> {
        let lease = match self
            .gateway
            .call("lease/grant", json!({ "TTL": self.ttl_seconds }), None)
        {
            Outcome::Ok(v) => match int_field(&v, "ID") {
                Some(id) => id,
                None => return Outcome::Fail(format!("lease grant without an ID: {v}")),
            },
            // A lease nobody uses holds nothing and expires by itself.
            Outcome::Fail(e) | Outcome::Info(e) => {
                return Outcome::Fail(format!("lease grant: {e}"))
            }
        };
        self.kept_alive.store(lease, Ordering::SeqCst);
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
        Outcome::Ok(Grant {
            token: Some(token as u64),
            handle: format!("{lease} {lock_key}"),
            granted_by: Vec::new(),
        })
    }

    fn release(&mut self, grant: &Grant) -> Outcome<()> {
        let (lease, lock_key) = grant.handle.split_once(' ').unwrap_or(("0", ""));
        let lease: i64 = lease.parse().unwrap_or(0);
        self.kept_alive.store(0, Ordering::SeqCst);
        let unlocked = self.gateway.call(
            "lock/unlock",
            json!({ "key": lock_key }),
            Some(self.timeout),
        );
        self.revoke(lease);
        match unlocked {
            Outcome::Ok(_) => Outcome::Ok(()),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}
