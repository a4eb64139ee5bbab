//! The published `rslock` crate, used as its README shows (`LockManager::new(uris)`,
//! `acquire(resource, ttl)`, `guard.release()`), as a real third-party Redlock client that no one
//! here wrote. Its `acquire` loops until it gets the lock and its per-node timeouts cannot be
//! set, so every call is bounded from outside with a timeout. It reads the real clock: the
//! client-clock nemesis cannot skew it.

use std::time::Duration;

use rslock::{LockGuard, LockManager};
use tokio::runtime::Runtime;

use crate::lock_client::{Grant, LockClient, Outcome};

pub struct RslockLock {
    runtime: Runtime,
    manager: LockManager,
    key: String,
    ttl: Duration,
    timeout: Duration,
    /// The guard of the grant currently held; rslock releases through it.
    held: Option<LockGuard>,
}

impl RslockLock {
    pub fn new(
        addresses: &[String],
        key: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<RslockLock, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let uris: Vec<String> = addresses.iter().map(|a| format!("redis://{a}/")).collect();
        let manager = runtime.block_on(async { LockManager::new(uris) });
        Ok(RslockLock {
            runtime,
            manager,
            key: key.to_string(),
            ttl,
            timeout,
            held: None,
        })
    }
}

impl LockClient for RslockLock {
    fn try_acquire(&mut self, wait: Duration) -> Outcome<Grant> {
        let (manager, key, ttl) = (&self.manager, self.key.as_bytes(), self.ttl);
        let attempt = async move { tokio::time::timeout(wait, manager.acquire(key, ttl)).await };
        match self.runtime.block_on(attempt) {
            Ok(Ok(guard)) => {
                let handle = guard.lock.val.iter().map(|b| format!("{b:02x}")).collect();
                self.held = Some(guard);
                Outcome::Ok(Grant {
                    token: None,
                    handle,
                    granted_by: Vec::new(),
                })
            }
            Ok(Err(e)) => Outcome::Fail(format!("rslock: {e}")),
            // Cut off mid-attempt: some SETs may have been sent.
            Err(_) => Outcome::Info(format!("rslock's acquire did not return within {wait:?}")),
        }
    }

    fn release(&mut self, _grant: &Grant) -> Outcome<()> {
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
