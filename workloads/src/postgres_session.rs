//! One PostgreSQL session with every statement bounded in time, as the lock clients' contract
//! asks: tokio-postgres on a one-thread runtime of the session's own, each call under a timeout.
//! A call that times out after sending leaves the session in an unknown state (the statement may
//! still run): the outcome is `Info` and the session is dropped, which closes its connection, so
//! the server ends it (and with it any advisory lock it held) instead of the client reusing it.

use std::time::Duration;

use tokio::runtime::Runtime;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row};

use crate::error::WorkloadError;
use crate::lock_client::Outcome;

/// The database and user every lockpick PostgreSQL server has (`initdb -U postgres`).
pub const DATABASE: &str = "postgres";

pub struct PostgresSession {
    runtime: Runtime,
    address: String,
    timeout: Duration,
    client: Option<Client>,
}

impl PostgresSession {
    /// A session with the server at `address` (`ip:port`), connected on first use.
    pub fn new(address: &str, timeout: Duration) -> Result<PostgresSession, WorkloadError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(WorkloadError::Runtime)?;
        Ok(PostgresSession {
            runtime,
            address: address.to_string(),
            timeout,
            client: None,
        })
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Whether the session is connected now (an advisory lock lives only as long as that).
    pub fn is_connected(&self) -> bool {
        self.client.as_ref().is_some_and(|c| !c.is_closed())
    }

    /// Ends the session: its connection closes, and the server releases what it held.
    pub fn disconnect(&mut self) {
        self.client = None;
    }

    /// Runs one statement and returns its rows. `Fail` when it certainly did not run (no
    /// connection, or the server refused it), `Info` when nobody knows (a timeout or a connection
    /// lost after sending).
    pub fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Outcome<Vec<Row>> {
        if let Err(why) = self.connect() {
            return Outcome::Fail(why);
        }
        let Some(client) = self.client.as_ref() else {
            return Outcome::Fail("not connected".to_string());
        };
        let answer = self.runtime.block_on(async {
            tokio::time::timeout(self.timeout, client.query(sql, params)).await
        });
        match answer {
            Ok(Ok(rows)) => Outcome::Ok(rows),
            // The server answered with an error: the statement did not take effect.
            Ok(Err(e)) if e.as_db_error().is_some() => {
                Outcome::Fail(format!("the server refused it: {e}"))
            }
            Ok(Err(e)) => {
                self.client = None;
                Outcome::Info(format!("the connection failed after sending: {e}"))
            }
            Err(_) => {
                self.client = None;
                Outcome::Info(format!("no answer within {:?}", self.timeout))
            }
        }
    }

    fn connect(&mut self) -> Result<(), String> {
        if self.is_connected() {
            return Ok(());
        }
        let (host, port) = self
            .address
            .rsplit_once(':')
            .ok_or_else(|| format!("{} is not ip:port", self.address))?;
        let mut config = tokio_postgres::Config::new();
        config
            .host(host)
            .port(
                port.parse()
                    .map_err(|_| format!("bad port in {}", self.address))?,
            )
            .user(DATABASE)
            .dbname(DATABASE)
            .connect_timeout(self.timeout)
            .application_name("lockpick");
        let timeout = self.timeout;
        let connected = self.runtime.block_on(async move {
            match tokio::time::timeout(timeout, config.connect(NoTls)).await {
                Ok(Ok(pair)) => Ok(pair),
                Ok(Err(e)) => Err(format!("cannot connect: {e}")),
                Err(_) => Err(format!("cannot connect within {timeout:?}")),
            }
        });
        let (client, connection) = connected?;
        // The connection's own task drives the socket; it ends when the client is dropped.
        self.runtime.spawn(async move {
            let _ = connection.await;
        });
        self.client = Some(client);
        Ok(())
    }
}
