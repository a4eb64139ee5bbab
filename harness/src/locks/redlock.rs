//! `redlock`: our faithful Redlock over five independent redis-servers: a parallel `SET NX PX`
//! on every node with a per-node timeout of TTL/10, a majority and a validity (TTL − elapsed −
//! drift, measured on the client's own, skewable clock); unlock everywhere on failure. No token.

use std::time::Duration;

use anyhow::Context;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::redlock::drift;
use lockpick_workloads::redlock::Redlock as RedlockClient;
use lockpick_workloads::LockClient;

use super::{boxed, Capabilities, Lock, Support};
use crate::service::redis::RedisService;
use crate::service::{LockService, ServiceEntry};

pub struct Redlock;

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
            server_clock: crate::service::redis::SERVICE.server_clock,
            leader: crate::service::redis::SERVICE.leader,
            delayable_server_links: Support::Yes,
            names_granting_servers: Support::Yes,
            client_clock: Support::Yes,
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        &crate::service::redis::SERVICE
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(RedisService::new(5))
    }

    fn in_default_comparison(&self) -> bool {
        true
    }

    /// Slower than one server: five servers start.
    fn start_up(&self) -> Duration {
        Duration::from_millis(2000)
    }

    fn lease_silence(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl + drift(ttl))
    }

    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        let lock = RedlockClient::new(
            &spec.nodes,
            &spec.key,
            spec.ttl(),
            spec.node_timeout(),
            spec.skewable_clock(),
            spec.run_clock(),
        );
        Ok(boxed(lock.context("cannot set up the redlock client")?))
    }
}
