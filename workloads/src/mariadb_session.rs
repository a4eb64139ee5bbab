//! One MariaDB session with every statement bounded in time, as the lock clients' contract asks:
//! mysql_async on a one-thread runtime of the session's own, each call under a timeout. A call
//! that times out or loses its connection after sending leaves the session in an unknown state
//! (the statement may still run): the outcome is `Info` and the connection is dropped outside the
//! runtime, so its socket closes at once and the server ends the session (and every named lock
//! it held) instead of the client reusing it.
//!
//! Always over TCP to the address given (`prefer_socket(false)`): mysql_async would otherwise
//! ask the server for its Unix socket and move there, past the run's network faults.

use std::time::Duration;

use mysql_async::prelude::{FromRow, Queryable};
use mysql_async::{Conn, OptsBuilder, Params};
use tokio::runtime::Runtime;

use crate::error::WorkloadError;
use crate::lock_client::Outcome;

/// The user every lockpick MariaDB server lets in from anywhere on the run's network, without a
/// password (made by the server's init file at every start).
pub const USER: &str = "lockpick";

pub struct MariadbSession {
    runtime: Runtime,
    address: String,
    timeout: Duration,
    conn: Option<Conn>,
}

impl MariadbSession {
    /// A session with the server at `address` (`ip:port`), connected on first use.
    pub fn new(address: &str, timeout: Duration) -> Result<MariadbSession, WorkloadError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(WorkloadError::Runtime)?;
        Ok(MariadbSession {
            runtime,
            address: address.to_string(),
            timeout,
            conn: None,
        })
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Whether the session has a connection now (a named lock lives only as long as its
    /// session; one that broke unnoticed shows on the next statement).
    pub fn is_connected(&self) -> bool {
        self.conn.is_some()
    }

    /// Ends the session: its socket closes, and the server releases what it held.
    pub fn disconnect(&mut self) {
        self.conn = None;
    }

    /// Runs one statement with `params` and returns its first row. `Fail` when it certainly did
    /// not run (no connection, or the server refused it), `Info` when nobody knows (a timeout or
    /// a connection lost after sending).
    pub fn first<T>(&mut self, sql: &str, params: impl Into<Params> + Send) -> Outcome<Option<T>>
    where
        T: FromRow + Send + 'static,
    {
        if let Err(why) = self.connect() {
            return Outcome::Fail(why);
        }
        let Some(conn) = self.conn.as_mut() else {
            return Outcome::Fail("not connected".to_string());
        };
        let timeout = self.timeout;
        let answer = self.runtime.block_on(async {
            tokio::time::timeout(timeout, conn.exec_first::<T, _, _>(sql, params)).await
        });
        match answer {
            Ok(Ok(row)) => Outcome::Ok(row),
            // The server answered with an error: the statement did not take effect.
            Ok(Err(mysql_async::Error::Server(e))) => {
                Outcome::Fail(format!("the server refused it: {e}"))
            }
            Ok(Err(e)) => {
                self.conn = None;
                Outcome::Info(format!("the connection failed after sending: {e}"))
            }
            Err(_) => {
                self.conn = None;
                Outcome::Info(format!("no answer within {timeout:?}"))
            }
        }
    }

    fn connect(&mut self) -> Result<(), String> {
        if self.conn.is_some() {
            return Ok(());
        }
        let (host, port) = self
            .address
            .rsplit_once(':')
            .ok_or_else(|| format!("{} is not ip:port", self.address))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("bad port in {}", self.address))?;
        let opts = OptsBuilder::default()
            .ip_or_hostname(host)
            .tcp_port(port)
            .user(Some(USER))
            .prefer_socket(false)
            .tcp_nodelay(true)
            .stmt_cache_size(8);
        let timeout = self.timeout;
        let connected = self.runtime.block_on(async move {
            match tokio::time::timeout(timeout, Conn::new(opts)).await {
                Ok(Ok(conn)) => Ok(conn),
                Ok(Err(e)) => Err(format!("cannot connect: {e}")),
                Err(_) => Err(format!("cannot connect within {timeout:?}")),
            }
        });
        self.conn = Some(connected?);
        Ok(())
    }
}
