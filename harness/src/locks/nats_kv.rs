//! `nats-kv`: a key in a NATS JetStream KV bucket replicated on three servers (Raft), the
//! bucket's `max_age` the lease: create to acquire, compare-and-set update to renew, delete
//! with the revision to release. The token is the revision the create got, which only grows.

use std::time::Duration;

use anyhow::Context;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::nats_kv_lock::{NatsKvLock, EXPIRY_SLACK};
use lockpick_workloads::LockClient;

use super::{boxed, Capabilities, Lock, Support};
use crate::service::nats::{NatsService, SERVICE};
use crate::service::{LockService, ServiceEntry};

pub struct NatsKv;

impl Lock for NatsKv {
    fn name(&self) -> &'static str {
        "nats-kv"
    }

    fn about(&self) -> &'static str {
        "A 3-server NATS JetStream cluster: a KV key, max_age as lease, CAS renew; token = revision."
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            servers: 3,
            token: "the key's revision at its create",
            server_clock: SERVICE.server_clock,
            leader: SERVICE.leader,
            delayable_server_links: Support::No(
                "a NATS client learns the cluster's other servers from the one it reaches and \
                 may connect to them directly, around a proxy",
            ),
            names_granting_servers: Support::No(
                "a KV key is written by the stream's leader and its replicas, not by servers \
                 the client can name",
            ),
            client_clock: Support::No(
                "the lease is timed by the servers' clocks (max_age), not the client's; skewing \
                 it would do nothing",
            ),
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        &SERVICE
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(NatsService::new())
    }

    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        if ttl < Duration::from_millis(500) {
            return Err("a KV bucket's max_age is the lease: at least 500ms (try --ttl 1s)".into());
        }
        Ok(())
    }

    fn in_default_comparison(&self) -> bool {
        true
    }

    // Start-up: the default second. `lockpick bench startup` measured 1.07 s until the three
    // servers are up and the bucket's stream has a leader (0.28 s for the servers alone).

    /// Every server removes the key's message `max_age` after its last write, on a timer.
    fn lease_silence(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl + EXPIRY_SLACK)
    }

    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        let (ttl, timeout) = (spec.ttl(), spec.op_timeout());
        let lock = NatsKvLock::new(&spec.nodes, &spec.key, ttl, timeout, spec.run_clock());
        Ok(boxed(lock.context("cannot set up the NATS client")?))
    }
}
