//! `postgres-advisory`: `pg_try_advisory_lock` on a PostgreSQL session of the client's own. The
//! session is the lease: no token, and nothing bounds how long a session outlives a frozen
//! client (its kernel keeps the connection alive); a cut-off client's session ends if the
//! server's TCP keepalives give up on it, and its lock with it, while the client works on; a
//! restarted server has no sessions at all.

use std::time::Duration;

use anyhow::Context;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::postgres_lock::AdvisoryLock;
use lockpick_workloads::LockClient;

use super::{boxed, Capabilities, Lock, Support};
use crate::service::postgres::{PostgresService, SERVICE};
use crate::service::{LockService, ServiceEntry};

pub struct PostgresAdvisory;

impl Lock for PostgresAdvisory {
    fn name(&self) -> &'static str {
        "postgres-advisory"
    }

    fn about(&self) -> &'static str {
        "One PostgreSQL server: pg_try_advisory_lock on the client's session; no token."
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            servers: 1,
            token: "none",
            server_clock: SERVICE.server_clock,
            leader: SERVICE.leader,
            delayable_server_links: Support::Yes,
            names_granting_servers: Support::Yes,
            client_clock: Support::No(
                "an advisory lock does not reason with the client's clock; skewing it would do \
                 nothing",
            ),
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        &SERVICE
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(PostgresService::new())
    }

    /// A session has no length: it lives while its connection does.
    fn lease_silence(&self, _ttl: Duration) -> Option<Duration> {
        None
    }

    /// The lock lasts as long as its PostgreSQL session: no TTL is read.
    fn reads_ttl(&self) -> bool {
        false
    }

    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        let node = spec.first_node()?;
        let lock = AdvisoryLock::new(node, &spec.key, spec.op_timeout(), spec.run_clock());
        Ok(boxed(lock.context("cannot set up the PostgreSQL client")?))
    }
}
