//! The exec client's [`ServerCheck`] on one redis-server: the key named `LOCKPICK_KEY` is the
//! lock's (every shipped example takes it), and `PTTL` gives its remaining time. The answer is
//! sound whoever holds the key by then: a key set after ours expired lives longer than ours
//! did, so its end still bounds ours. A key that is gone says nothing (the program may lock
//! another name, or its key already expired).

use std::time::Duration;

use crate::clock::RunClock;
use crate::exec_server_check::ServerCheck;
use crate::lease::{expires_by, ServerLease};
use crate::lock_client::Outcome;
use crate::redis_node::RedisNode;

pub struct RedisServerCheck {
    node: RedisNode,
    key: String,
}

impl RedisServerCheck {
    /// A check of `key` on the redis-server at `address`, each question bounded by `timeout`.
    /// `None` when no client can be made for the address.
    pub fn new(address: &str, key: &str, timeout: Duration) -> Option<RedisServerCheck> {
        Some(RedisServerCheck {
            node: RedisNode::new(address, timeout).ok()?,
            key: key.to_string(),
        })
    }
}

impl ServerCheck for RedisServerCheck {
    fn ask(&mut self, clock: &RunClock) -> Option<ServerLease> {
        let Outcome::Ok(remaining) = self.node.remaining(&self.key) else {
            return None;
        };
        let asked_at = clock.now();
        match remaining {
            -1 => Some(ServerLease {
                asked_at,
                remaining_ms: None,
                ended_by: None,
            }),
            ms if ms >= 0 => Some(ServerLease {
                asked_at,
                remaining_ms: Some(ms as u64),
                // PTTL truncates to whole ms, and Redis keeps a key until its ms clock has
                // passed the expiry: up to 1 ms more than the count.
                ended_by: Some(expires_by(asked_at, (ms as u64 + 1) * 1_000)),
            }),
            _ => None,
        }
    }
}
