//! `redis`: one redis-server; `SET key value NX PX ttl` to acquire, a Lua compare-and-delete to
//! release. No fencing token: the textbook lease the fencing argument is about.

use anyhow::Context;

use super::{boxed, Capabilities, ClientParams, Lock, Support};
use crate::service::redis::RedisService;
use crate::service::LockService;
use lockpick_workloads::redis_lock::RedisLock;
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
            server_clock: Support::Yes,
            names_granting_servers: Support::Yes,
            client_clock: Support::No(
                "only the redlock client reasons with its own clock; skewing this one would do \
                 nothing",
            ),
        }
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(RedisService::new(1))
    }

    fn client(&self, p: ClientParams) -> anyhow::Result<Box<dyn LockClient>> {
        RedisLock::new(&p.nodes[0], p.key, p.ttl, p.op_timeout)
            .map(boxed)
            .map_err(anyhow::Error::msg)
            .context("cannot set up the redis client")
    }
}
