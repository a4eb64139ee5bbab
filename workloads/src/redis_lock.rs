//! The single-node Redis lease: `SET key <random value> NX PX <ttl>` to acquire, a Lua
//! compare-and-delete to release. Redis hands out no fencing token, so grants carry none.

use std::time::Duration;

use rand::Rng;
use redis::{Client, Connection, RedisError, Script};

use crate::lock_client::{Grant, LockClient, Outcome};

/// Deletes the key only if it still holds this client's value: releasing someone else's lock
/// after our lease expired would hand the lock to a third client.
const COMPARE_AND_DELETE: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end"#;

pub struct RedisLock {
    client: Client,
    key: String,
    ttl: Duration,
    timeout: Duration,
    /// One connection per client: on a multiplexed connection a request queued behind a stalled
    /// one would time out too. Dropped after any error, since a late reply may still arrive on it.
    connection: Option<Connection>,
    release: Script,
}

impl RedisLock {
    /// A client of the lock `key` on the Redis server at `address` (`ip:port`). Every request
    /// gives up after `timeout`, which must be shorter than `ttl`.
    pub fn new(
        address: &str,
        key: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<RedisLock, RedisError> {
        Ok(RedisLock {
            client: Client::open(format!("redis://{address}/"))?,
            key: key.to_string(),
            ttl,
            timeout,
            connection: None,
            release: Script::new(COMPARE_AND_DELETE),
        })
    }

    /// The open connection, or a new one. `Err` means nothing was sent.
    fn connection(&mut self) -> Result<&mut Connection, String> {
        if self.connection.is_none() {
            let connection = self
                .client
                .get_connection_with_timeout(self.timeout)
                .map_err(|e| format!("cannot connect: {e}"))?;
            for set in [Connection::set_read_timeout, Connection::set_write_timeout] {
                set(&connection, Some(self.timeout)).map_err(|e| format!("cannot connect: {e}"))?;
            }
            self.connection = Some(connection);
        }
        Ok(self.connection.as_mut().expect("just set"))
    }

    /// Classifies an error from a request that was (or may have been) sent.
    fn after_send<T>(&mut self, error: RedisError) -> Outcome<T> {
        if error.is_io_error() || error.is_timeout() || error.is_connection_dropped() {
            self.connection = None;
            Outcome::Info(error.to_string())
        } else {
            // The server answered with an error: the command was not applied.
            Outcome::Fail(error.to_string())
        }
    }
}

impl LockClient for RedisLock {
    fn try_acquire(&mut self, _wait: Duration) -> Outcome<Grant> {
        let value = format!("{:032x}", rand::thread_rng().gen::<u128>());
        let ttl_ms = self.ttl.as_millis() as u64;
        let key = self.key.clone();
        let connection = match self.connection() {
            Ok(c) => c,
            Err(e) => return Outcome::Fail(e),
        };
        let reply: Result<Option<String>, RedisError> = redis::cmd("SET")
            .arg(&key)
            .arg(&value)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms)
            .query(connection);
        match reply {
            Ok(Some(_)) => Outcome::Ok(Grant {
                token: None,
                handle: value,
            }),
            Ok(None) => Outcome::Fail("held by another client".to_string()),
            Err(e) => self.after_send(e),
        }
    }

    fn release(&mut self, grant: &Grant) -> Outcome<()> {
        let script = self.release.clone();
        let key = self.key.clone();
        let connection = match self.connection() {
            Ok(c) => c,
            Err(e) => return Outcome::Fail(e),
        };
        let deleted: Result<i64, RedisError> =
            script.key(&key).arg(&grant.handle).invoke(connection);
        match deleted {
            Ok(1) => Outcome::Ok(()),
            Ok(_) => {
                Outcome::Fail("the lock was no longer ours: the lease had expired".to_string())
            }
            Err(e) => self.after_send(e),
        }
    }
}
