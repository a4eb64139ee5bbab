//! The single-node Redis lease: `SET key <random value> NX PX <ttl>` to acquire, a Lua
//! compare-and-delete to release. Redis hands out no fencing token, so grants carry none.

use std::time::Duration;

use crate::lock_client::{random_value, Grant, LockClient, Outcome};
use crate::redis_node::RedisNode;

pub struct RedisLock {
    node: RedisNode,
    key: String,
    ttl: Duration,
}

impl RedisLock {
    /// A client of the lock `key` on the Redis server at `address` (`ip:port`). Every request
    /// gives up after `timeout`, which must be shorter than `ttl`.
    pub fn new(
        address: &str,
        key: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<RedisLock, String> {
        Ok(RedisLock {
            node: RedisNode::new(address, timeout).map_err(|e| e.to_string())?,
            key: key.to_string(),
            ttl,
        })
    }
}

impl LockClient for RedisLock {
    fn try_acquire(&mut self, _wait: Duration) -> Outcome<Grant> {
        let value = random_value();
        match self.node.set_if_absent(&self.key, &value, self.ttl) {
            Outcome::Ok(true) => Outcome::Ok(Grant {
                token: None,
                handle: value,
                granted_by: vec![self.node.address().to_string()],
            }),
            Outcome::Ok(false) => Outcome::Fail("held by another client".to_string()),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }

    fn release(&mut self, grant: &Grant) -> Outcome<()> {
        match self.node.delete_if_equal(&self.key, &grant.handle) {
            Outcome::Ok(true) => Outcome::Ok(()),
            Outcome::Ok(false) => {
                Outcome::Fail("the lock was no longer ours: the lease had expired".to_string())
            }
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}
