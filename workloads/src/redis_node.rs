//! One connection to one redis-server, and the two commands every Redis-based lock needs:
//! set-if-absent with a lease, and delete-if-still-mine. Shared by the single-node lock and
//! Redlock so that both classify outcomes the same way.

use std::time::Duration;

use redis::{Client, Connection, RedisError, Script};

use crate::lock_client::Outcome;

/// Deletes the key only if it still holds this client's value: releasing someone else's lock
/// after our lease expired would hand the lock to a third client.
const COMPARE_AND_DELETE: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end"#;

/// Extends the key's lease only if it still holds this client's value (a watchdog's renewal,
/// as Redisson's): extending someone else's lock would keep a lock we no longer hold.
const COMPARE_AND_EXTEND: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("pexpire", KEYS[1], ARGV[2])
else
    return 0
end"#;

pub struct RedisNode {
    address: String,
    client: Client,
    timeout: Duration,
    /// One connection per node and client: on a multiplexed connection a request queued behind a
    /// stalled one would time out too. Dropped after any error, since a late reply may still
    /// arrive on it.
    connection: Option<Connection>,
    compare_and_delete: Script,
    compare_and_extend: Script,
}

impl RedisNode {
    /// A client of the server at `address` (`ip:port`) whose every request gives up after
    /// `timeout`.
    pub fn new(address: &str, timeout: Duration) -> Result<RedisNode, RedisError> {
        Ok(RedisNode {
            address: address.to_string(),
            client: Client::open(format!("redis://{address}/"))?,
            timeout,
            connection: None,
            compare_and_delete: Script::new(COMPARE_AND_DELETE),
            compare_and_extend: Script::new(COMPARE_AND_EXTEND),
        })
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// `SET key value NX PX ttl`: `Ok(true)` when set, `Ok(false)` when the key was taken.
    pub fn set_if_absent(&mut self, key: &str, value: &str, ttl: Duration) -> Outcome<bool> {
        let command = redis::cmd("SET")
            .arg(key)
            .arg(value)
            .arg("NX")
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .clone();
        self.request(|c| command.query::<Option<String>>(c).map(|r| r.is_some()))
    }

    /// Deletes `key` if it still holds `value`: `Ok(true)` when deleted, `Ok(false)` when it was
    /// gone or someone else's.
    pub fn delete_if_equal(&mut self, key: &str, value: &str) -> Outcome<bool> {
        let script = self.compare_and_delete.clone();
        self.request(|c| script.key(key).arg(value).invoke::<i64>(c).map(|n| n == 1))
    }

    /// Sets the lease of `key` to `ttl` from now if it still holds `value`: `Ok(true)` when
    /// extended, `Ok(false)` when it was gone or someone else's.
    pub fn extend_if_equal(&mut self, key: &str, value: &str, ttl: Duration) -> Outcome<bool> {
        let script = self.compare_and_extend.clone();
        let ttl_ms = ttl.as_millis() as u64;
        self.request(|c| {
            script
                .key(key)
                .arg(value)
                .arg(ttl_ms)
                .invoke::<i64>(c)
                .map(|n| n == 1)
        })
    }

    fn request<T>(
        &mut self,
        send: impl FnOnce(&mut Connection) -> Result<T, RedisError>,
    ) -> Outcome<T> {
        let connection = match self.connection() {
            Ok(c) => c,
            Err(e) => return Outcome::Fail(e),
        };
        match send(connection) {
            Ok(v) => Outcome::Ok(v),
            Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
                self.connection = None;
                Outcome::Info(format!("{}: {e}", self.address))
            }
            // The server answered with an error: the command was not applied.
            Err(e) => Outcome::Fail(format!("{}: {e}", self.address)),
        }
    }

    /// The open connection, or a new one. `Err` means nothing was sent.
    fn connection(&mut self) -> Result<&mut Connection, String> {
        if self.connection.is_none() {
            let cannot = |e: RedisError| format!("{}: cannot connect: {e}", self.address);
            let connection = self
                .client
                .get_connection_with_timeout(self.timeout)
                .map_err(cannot)?;
            connection
                .set_read_timeout(Some(self.timeout))
                .and_then(|_| connection.set_write_timeout(Some(self.timeout)))
                .map_err(cannot)?;
            self.connection = Some(connection);
        }
        Ok(self.connection.as_mut().expect("just set"))
    }
}
