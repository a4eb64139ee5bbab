//! `redis`: one redis-server; `SET key value NX PX ttl` to acquire, a Lua compare-and-delete to
//! release. No fencing token: the textbook lease the fencing argument is about.

use std::time::Duration;

use anyhow::Context;

use super::{boxed, Capabilities, Lock, Support};
use crate::service::redis::RedisService;
use crate::service::{LockService, ServiceEntry};
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::exec_server_check::ServerCheck;
use lockpick_workloads::redis_lock::RedisLock;
use lockpick_workloads::redis_server_check::RedisServerCheck;
use lockpick_workloads::LockClient;

pub struct Redis;

impl Lock for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn about(&self) -> &'static str {
        "One redis-server; SET NX PX to acquire, Lua compare-and-delete to release; no token."
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            servers: 1,
            token: "none",
            server_clock: crate::service::redis::SERVICE.server_clock,
            leader: crate::service::redis::SERVICE.leader,
            delayable_server_links: Support::Yes,
            names_granting_servers: Support::Yes,
            client_clock: Support::No(
                "only the redlock client reasons with its own clock; skewing this one would do \
                 nothing",
            ),
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        &crate::service::redis::SERVICE
    }

    /// One server per request where Redlock's clients ask five: 0.09 cores measured
    /// (docs/performance.md), against 0.38 and 0.40 for redlock and rslock.
    fn contention_cores(&self) -> f64 {
        0.1
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(RedisService::new(1))
    }

    fn lease_silence(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl)
    }

    fn in_default_comparison(&self) -> bool {
        true
    }

    /// One redis-server holds the lock key: its PTTL is the server's word on the lease.
    fn server_check(&self, spec: &ClientSpec) -> Option<Box<dyn ServerCheck>> {
        let node = spec.nodes.first()?;
        let check = RedisServerCheck::new(node, &spec.key, spec.op_timeout())?;
        Some(Box::new(check))
    }

    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        let (ttl, timeout) = (spec.ttl(), spec.op_timeout());
        let lock = RedisLock::new(
            spec.first_node()?,
            &spec.key,
            ttl,
            timeout,
            spec.run_clock(),
        );
        Ok(boxed(lock.context("cannot set up the redis client")?))
    }
}
