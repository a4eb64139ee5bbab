//! `rslock`: the published rslock crate (a Redlock client) over the same five redis-servers,
//! used as its README shows: `acquire` and the guard's release, bounded from outside. No token.

use std::time::Duration;

use anyhow::Context;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::redlock::drift;
use lockpick_workloads::rslock_lock::RslockLock;
use lockpick_workloads::LockClient;

use super::{boxed, Capabilities, Lock, Support};
use crate::service::redis::RedisService;
use crate::service::{LockService, ServiceEntry};

pub struct Rslock;

impl Lock for Rslock {
    fn name(&self) -> &'static str {
        "rslock"
    }

    fn about(&self) -> &'static str {
        "The published rslock crate (a Redlock client) over the same 5 redis-servers; no token."
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            servers: 5,
            token: "none",
            server_clock: crate::service::redis::SERVICE.server_clock,
            leader: crate::service::redis::SERVICE.leader,
            delayable_server_links: Support::Yes,
            names_granting_servers: Support::No(
                "the rslock crate does not say which servers granted its lock",
            ),
            client_clock: Support::No(
                "the rslock crate reads the real clock: its clients cannot be skewed",
            ),
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        &crate::service::redis::SERVICE
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(RedisService::new(5))
    }

    /// Its servers are Redlock's: `exec:redlock:...` lends them.
    fn lends_servers(&self) -> bool {
        false
    }

    fn lease_silence(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl + drift(ttl))
    }

    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        let (ttl, timeout) = (spec.ttl(), spec.op_timeout());
        let lock = RslockLock::new(&spec.nodes, &spec.key, ttl, timeout, spec.run_clock());
        Ok(boxed(lock.context("cannot set up the rslock client")?))
    }
}
