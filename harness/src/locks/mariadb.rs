//! `mariadb`: `GET_LOCK(name, 0)` on a MariaDB session of the client's own, the named lock many
//! MySQL shops use. The session is the lease, as with PostgreSQL's advisory lock: no token, and
//! nothing bounds how long a session outlives a frozen client (its kernel keeps the connection
//! alive); a killed client's connection closes and its lock ends at once; a cut-off client's
//! session ends if the server's TCP keepalives give up on it; a restarted server has no sessions
//! at all.

use std::time::Duration;

use anyhow::Context;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::mariadb_lock::NamedLock;
use lockpick_workloads::LockClient;

use super::{boxed, Capabilities, Lock, Support};
use crate::service::mariadb::{MariadbService, SERVICE};
use crate::service::{LockService, ServiceEntry};

pub struct Mariadb;

impl Lock for Mariadb {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn about(&self) -> &'static str {
        "One MariaDB server: GET_LOCK on the client's session; no token."
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
                "a named lock does not reason with the client's clock; skewing it would do \
                 nothing",
            ),
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        &SERVICE
    }

    fn service(&self) -> Box<dyn LockService> {
        Box::new(MariadbService::new())
    }

    fn in_default_comparison(&self) -> bool {
        true
    }

    /// `mariadb-install-db` makes the system tables before the server starts: seconds, not
    /// the tenth of one a redis-server takes.
    fn start_up(&self) -> Duration {
        Duration::from_secs(3)
    }

    /// A session has no length: it lives while its connection does.
    fn lease_silence(&self, _ttl: Duration) -> Option<Duration> {
        None
    }

    /// The lock lasts as long as its MariaDB session: no TTL is read.
    fn reads_ttl(&self) -> bool {
        false
    }

    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        let node = spec.first_node()?;
        let lock = NamedLock::new(node, &spec.key, spec.op_timeout(), spec.run_clock());
        Ok(boxed(lock.context("cannot set up the MariaDB client")?))
    }
}
