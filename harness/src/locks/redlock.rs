//! `redlock`: our faithful Redlock over five independent redis-servers: a parallel `SET NX PX`
//! on every node with a per-node timeout of TTL/10, a majority and a validity (TTL − elapsed −
//! drift, measured on the client's own, skewable clock); unlock everywhere on failure. No token.

use std::time::Duration;

use anyhow::Context;
use lockpick_workloads::redlock::Redlock as RedlockClient;
use lockpick_workloads::LockClient;

use super::{boxed, Capabilities, ClientParams, Lock, Support};
use crate::service::redis::RedisService;
use crate::service::LockService;

pub struct Redlock;

/// Redlock asks each node with a timeout much smaller than the TTL (the algorithm's advice),
/// but never under 1 ms nor over the client's own request bound.
pub fn node_timeout(ttl: Duration, op_timeout: Duration) -> Duration {
    (ttl / 10).max(Duration::from_millis(1)).min(op_timeout)
}

impl Lock for Redlock {
    fn name(&self) -> &'static str {
        "redlock"
    }

    fn about(&self) -> &'static str {
        "Our faithful Redlock over 5 independent redis-servers; no token."
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            servers: 5,
            token: "none",
            server_clock: Support::Yes,
            names_granting_servers: Support::Yes,
            client_clock: Support::Yes,
        }
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(RedisService::new(5))
    }

    fn client(&self, p: ClientParams) -> anyhow::Result<Box<dyn LockClient>> {
        let timeout = node_timeout(p.ttl, p.op_timeout);
        RedlockClient::new(p.nodes, p.key, p.ttl, timeout, p.clock)
            .map(boxed)
            .map_err(anyhow::Error::msg)
            .context("cannot set up the redlock client")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_timeout_is_valid_for_any_accepted_op_timeout() {
        let ms = Duration::from_millis;
        assert_eq!(node_timeout(ms(1000), ms(500)), ms(100));
        assert_eq!(node_timeout(ms(20), ms(4)), ms(2));
        assert_eq!(node_timeout(ms(10), ms(1)), ms(1));
        assert_eq!(node_timeout(ms(5000), ms(200)), ms(200));
    }
}
