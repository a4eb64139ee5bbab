//! `zookeeper`: a three-server ZooKeeper ensemble and the ephemeral-sequential lock recipe; the
//! session timeout is the lease, and the token is the lock node's sequence number.

use std::time::Duration;

use anyhow::Context;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::zookeeper_lock::ZookeeperLock;
use lockpick_workloads::LockClient;

use super::{boxed, Capabilities, Lock, Support};
use crate::service::zookeeper::{ZookeeperService, TICK_MS};
use crate::service::{LockService, ServiceEntry};

pub struct Zookeeper;

const TICK: Duration = Duration::from_millis(TICK_MS);

impl Lock for Zookeeper {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    fn about(&self) -> &'static str {
        "A 3-server ZooKeeper ensemble: the ephemeral-sequential recipe; token = sequence number."
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            servers: 3,
            token: "the lock node's sequence number",
            server_clock: crate::service::zookeeper::SERVICE.server_clock,
            leader: crate::service::zookeeper::SERVICE.leader,
            delayable_server_links: Support::Yes,
            names_granting_servers: Support::No(
                "a ZooKeeper lock is granted by the ensemble as a whole, not by servers the \
                 client can name",
            ),
            client_clock: Support::No(
                "the ZooKeeper client does not reason with its own clock; skewing it would do \
                 nothing",
            ),
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        &crate::service::zookeeper::SERVICE
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(ZookeeperService::new())
    }

    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        if ttl < TICK * 2 || ttl > TICK * 20 {
            return Err(format!(
                "its session timeout is between {:?} and {:?} here (2 to 20 ticks of {:?})",
                TICK * 2,
                TICK * 20,
                TICK
            ));
        }
        Ok(())
    }

    fn in_default_comparison(&self) -> bool {
        true
    }

    /// Slower than one server: a JVM per member, and an ensemble that elects a leader.
    fn start_up(&self) -> Duration {
        Duration::from_millis(6000)
    }

    fn lease_silence(&self, ttl: Duration) -> Option<Duration> {
        // Sessions expire in buckets of one tick.
        Some(ttl + TICK)
    }

    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        let (ttl, timeout) = (spec.ttl(), spec.op_timeout());
        let lock = ZookeeperLock::new(&spec.nodes, &spec.key, ttl, timeout, spec.run_clock());
        Ok(boxed(lock.context("cannot set up the ZooKeeper client")?))
    }
}
