//! `etcd`: a three-member etcd cluster; a lease kept alive by a background thread, and etcd's
//! Lock API. The token is the lock key's create revision, which only grows.

use std::time::Duration;

use anyhow::Context;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::etcd_lock::EtcdLock;
use lockpick_workloads::etcd_lock::{lease_length, EXPIRY_CHECK_PERIOD};
use lockpick_workloads::LockClient;

use super::{boxed, Capabilities, Lock, Support};
use crate::service::etcd::EtcdService;
use crate::service::{LockService, ServiceEntry};

pub struct Etcd;

impl Lock for Etcd {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn about(&self) -> &'static str {
        "A 3-member etcd cluster: lease + keep-alive and etcd's Lock API; token = create revision."
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            servers: 3,
            token: "the lock key's create revision",
            server_clock: crate::service::etcd::SERVICE.server_clock,
            leader: crate::service::etcd::SERVICE.leader,
            delayable_server_links: Support::Yes,
            names_granting_servers: Support::No(
                "an etcd lock is granted by the cluster as a whole, not by servers the client \
                 can name",
            ),
            client_clock: Support::No(
                "the etcd client does not reason with its own clock; skewing it would do nothing",
            ),
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        &crate::service::etcd::SERVICE
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(EtcdService::new())
    }

    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        if ttl.subsec_nanos() != 0 {
            return Err("etcd's leases are whole seconds (try --ttl 1s)".to_string());
        }
        Ok(())
    }

    fn in_default_comparison(&self) -> bool {
        true
    }

    /// Slower than one server: a three-member cluster elects a leader.
    fn start_up(&self) -> Duration {
        Duration::from_millis(3000)
    }

    fn lease_silence(&self, ttl: Duration) -> Option<Duration> {
        // etcd revokes expired leases in a loop that runs every 500 ms.
        Some(lease_length(ttl) + EXPIRY_CHECK_PERIOD)
    }

    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        let (ttl, timeout) = (spec.ttl(), spec.op_timeout());
        let lock = EtcdLock::new(&spec.nodes, &spec.key, ttl, timeout, spec.run_clock());
        Ok(boxed(lock.context("cannot set up the etcd client")?))
    }
}
