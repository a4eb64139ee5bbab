//! `redis-sentinel`: the Redis lease on a replicated Redis (a primary, two replicas) whose
//! Sentinels fail it over: the client asks the Sentinels for the primary, `SET key value NX PX
//! ttl` there, and releases with a compare-and-delete. No fencing token. Replication is
//! asynchronous, so a failover may promote a replica that never had the key: the hole
//! Kleppmann's critique of Redis locks opens with. `--wait-replicas n` adds `WAIT n` after the
//! SET (fewer acknowledgements: not acquired).

use std::time::Duration;

use anyhow::Context;

use super::{boxed, Capabilities, Lock, Support};
use crate::service::redis_sentinel::{self, SentinelService};
use crate::service::{LockService, ServiceEntry};
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::redis_sentinel_lock::{SentinelLock, SentinelSettings, SENTINEL_PORT};
use lockpick_workloads::LockClient;

pub struct RedisSentinel;

impl Lock for RedisSentinel {
    fn name(&self) -> &'static str {
        "redis-sentinel"
    }

    fn about(&self) -> &'static str {
        "A Redis primary, 2 replicas and 3 Sentinels; SET NX PX on the primary the Sentinels \
         name; no token."
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            servers: redis_sentinel::NODES,
            token: "none",
            server_clock: redis_sentinel::SERVICE.server_clock,
            leader: redis_sentinel::SERVICE.leader,
            delayable_server_links: Support::No(
                "its clients find the Sentinels from each server's own address (port 26379), which \
                 the delay proxies do not carry",
            ),
            names_granting_servers: Support::Yes,
            client_clock: Support::No(
                "only the redlock client reasons with its own clock; skewing this one would do \
                 nothing",
            ),
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        &redis_sentinel::SERVICE
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(SentinelService::new())
    }

    /// Not yet: a program's client must ask the Sentinels, and the exec protocol names only
    /// the servers' data addresses.
    fn lends_servers(&self) -> bool {
        false
    }

    fn replicas(&self) -> u32 {
        redis_sentinel::NODES as u32 - 1
    }

    fn lease_silence(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl)
    }

    fn in_default_comparison(&self) -> bool {
        true
    }

    /// Three servers and their Sentinels, which must all see each other before a run starts.
    fn start_up(&self) -> Duration {
        Duration::from_millis(2500)
    }

    /// The servers' addresses are the data ports (what a grant names); the Sentinels listen
    /// beside each on their own port.
    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        let sentinels = spec
            .nodes
            .iter()
            .map(|node| {
                let ip = node.rsplit_once(':').map_or(node.as_str(), |(ip, _)| ip);
                format!("{ip}:{SENTINEL_PORT}")
            })
            .collect();
        let settings = SentinelSettings {
            sentinels,
            sentinel_timeout: spec.node_timeout(),
            wait_replicas: spec.wait_replicas,
        };
        let lock = SentinelLock::new(
            settings,
            &spec.key,
            spec.ttl(),
            spec.op_timeout(),
            spec.run_clock(),
        );
        Ok(boxed(
            lock.context("cannot set up the redis-sentinel client")?,
        ))
    }
}
