//! Claims are claims: the lease bounds an exec program reports are its own word, and a program
//! can report a lease ten times longer than the one it took. Where the lock's server can be
//! asked, lockpick asks it right after each grant and `extend` and records its count beside the
//! report (`server_lease` on the acquire `ok` or the `renew`), for the checkers to compare and
//! to prefer.
//!
//! Redis (one server): the key named `LOCKPICK_KEY` is the lock's (every shipped example takes
//! it), and `PTTL` gives its remaining time. The answer is sound whoever holds the key by then:
//! a key set after ours expired lives longer than ours did, so its end still bounds ours. A key
//! that is gone says nothing (the program may lock another name, or its key already expired).

use std::time::Duration;

use crate::clock::RunClock;
use crate::lease::ServerLease;
use crate::lock_client::Outcome;
use crate::redis_node::{self, RedisNode};

pub struct ServerCheck {
    node: RedisNode,
    key: String,
}

impl ServerCheck {
    /// A check of `key` on the redis-server at `address`, each question bounded by `timeout`.
    /// `None` when no client can be made for the address.
    pub fn redis(address: &str, key: &str, timeout: Duration) -> Option<ServerCheck> {
        Some(ServerCheck {
            node: RedisNode::new(address, timeout).ok()?,
            key: key.to_string(),
        })
    }

    /// The server's count of the lock key now, or `None` when it gives no word (no answer, or
    /// no such key).
    pub fn ask(&mut self, clock: &RunClock) -> Option<ServerLease> {
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
                ended_by: Some(redis_node::expires_by(asked_at, (ms as u64 + 1) * 1_000)),
            }),
            _ => None,
        }
    }
}
