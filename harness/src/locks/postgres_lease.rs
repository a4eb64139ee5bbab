//! `postgres-lease`: a lease row on one PostgreSQL server (`holder`, `expires_at` by the
//! database's clock, `token`), taken with one `UPDATE … RETURNING` that bumps the token on every
//! grant and renewed by a watchdog. The token only grows: it fences.

use std::time::Duration;

use anyhow::Context;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::postgres_lock::LeaseLock;
use lockpick_workloads::LockClient;

use super::{boxed, Capabilities, Lock, Support};
use crate::service::postgres::{PostgresService, SERVICE};
use crate::service::{LockService, ServiceEntry};

pub struct PostgresLease;

impl Lock for PostgresLease {
    fn name(&self) -> &'static str {
        "postgres-lease"
    }

    fn about(&self) -> &'static str {
        "One PostgreSQL server: a lease row taken by UPDATE ... RETURNING; token = grant counter."
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            servers: 1,
            token: "the lease row's grant counter",
            server_clock: SERVICE.server_clock,
            leader: SERVICE.leader,
            delayable_server_links: Support::Yes,
            names_granting_servers: Support::Yes,
            client_clock: Support::No(
                "the lease is timed by the database's clock, not the client's; skewing it would \
                 do nothing",
            ),
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        &SERVICE
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(PostgresService::new())
    }

    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        if ttl < Duration::from_millis(100) {
            return Err("a lease row needs at least 100ms (try --ttl 1s)".to_string());
        }
        Ok(())
    }

    /// The row expires by the database's clock one TTL after its last renewal was applied; the
    /// next taker's UPDATE is what sees it expired, so no loop adds slack.
    fn lease_silence(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl)
    }

    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        let (ttl, timeout) = (spec.ttl(), spec.op_timeout());
        let lock = LeaseLock::new(
            spec.first_node()?,
            &spec.key,
            ttl,
            timeout,
            spec.run_clock(),
        );
        Ok(boxed(lock.context("cannot set up the PostgreSQL client")?))
    }
}
