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
/// as Redisson's): extending someone else's lock would keep a lock we no longer hold. Answers
/// the key's remaining time in ms as the server counts it (`PTTL`), or -1 when not ours.
const COMPARE_AND_EXTEND: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    redis.call("pexpire", KEYS[1], ARGV[2])
    return redis.call("pttl", KEYS[1])
else
    return -1
end"#;

/// The key's remaining time in ms if it holds `ARGV[1]`, else -1.
const REMAINING_IF_EQUAL: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("pttl", KEYS[1])
else
    return -1
end"#;

/// `SET key value NX PX ttl`, answering the key's remaining time in ms as the server counts it
/// (`PTTL`) when set, or -1 when the key was taken.
const SET_IF_ABSENT: &str = r#"
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    return redis.call("pttl", KEYS[1])
else
    return -1
end"#;

/// When a key the server said had `remaining_ms` to live, in an answer received at
/// `completion` (ns on the run clock), has certainly expired: the server's own count (its
/// clock in whole ms, truncated, so the key expires no later than that), plus 500 ppm of it for
/// its clock running slower than ours (the most NTP slews a clock).
pub fn expires_by(completion: u64, remaining_ms: u64) -> u64 {
    completion + remaining_ms * 1_000_000 + rate_allowance(remaining_ms)
}

/// 500 ppm of a span the server counted, in ns.
pub fn rate_allowance(span_ms: u64) -> u64 {
    span_ms * 500
}

/// A lower bound of when the server set a key whose lease is `ttl_ms` long and which it said had
/// `remaining_ms` left, in an answer to a request sent at `sent` (ns on the run clock): it was
/// set `ttl_ms - remaining_ms` before the server counted, less 1 ms for the count's truncation
/// and the rate allowance.
pub fn set_after(sent: u64, ttl_ms: u64, remaining_ms: u64) -> u64 {
    let elapsed = ttl_ms.saturating_sub(remaining_ms);
    sent.saturating_sub(elapsed * 1_000_000 + 1_000_000 + rate_allowance(ttl_ms))
}

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
    set_if_absent: Script,
    remaining_if_equal: Script,
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
            set_if_absent: Script::new(SET_IF_ABSENT),
            remaining_if_equal: Script::new(REMAINING_IF_EQUAL),
        })
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// `SET key value NX PX ttl`: `Ok(Some(remaining ms))` when set, as the server counts it,
    /// `Ok(None)` when the key was taken.
    pub fn set_if_absent(&mut self, key: &str, value: &str, ttl: Duration) -> Outcome<Option<u64>> {
        let script = self.set_if_absent.clone();
        let ttl_ms = ttl.as_millis() as u64;
        self.request(|c| {
            let remaining = script.key(key).arg(value).arg(ttl_ms).invoke::<i64>(c)?;
            Ok(u64::try_from(remaining).ok())
        })
    }

    /// The remaining time of `key` in ms, as the server counts it, if it holds `value` (bytes
    /// of any kind, as a library's own lock value): `Ok(None)` when gone or someone else's.
    pub fn remaining_if_equal(&mut self, key: &[u8], value: &[u8]) -> Outcome<Option<u64>> {
        let script = self.remaining_if_equal.clone();
        self.request(|c| {
            let remaining = script.key(key).arg(value).invoke::<i64>(c)?;
            Ok(u64::try_from(remaining).ok())
        })
    }

    /// `PTTL key`: the key's remaining time in ms as the server counts it, -1 when it has no
    /// expiry, -2 when it does not exist.
    pub fn remaining(&mut self, key: &str) -> Outcome<i64> {
        self.request(|c| redis::cmd("PTTL").arg(key).query::<i64>(c))
    }

    /// Deletes `key` if it still holds `value`: `Ok(true)` when deleted, `Ok(false)` when it was
    /// gone or someone else's.
    pub fn delete_if_equal(&mut self, key: &str, value: &str) -> Outcome<bool> {
        let script = self.compare_and_delete.clone();
        self.request(|c| script.key(key).arg(value).invoke::<i64>(c).map(|n| n == 1))
    }

    /// Sets the lease of `key` to `ttl` from now if it still holds `value`: `Ok(Some(remaining
    /// ms))` when extended, as the server counts it, `Ok(None)` when it was gone or someone
    /// else's.
    pub fn extend_if_equal(
        &mut self,
        key: &str,
        value: &str,
        ttl: Duration,
    ) -> Outcome<Option<u64>> {
        let script = self.compare_and_extend.clone();
        let ttl_ms = ttl.as_millis() as u64;
        self.request(|c| {
            let remaining = script.key(key).arg(value).arg(ttl_ms).invoke::<i64>(c)?;
            Ok(u64::try_from(remaining).ok())
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

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_servers_count_bounds_the_expiry_and_the_set() {
        // Answered at 100 ms with 1000 ms left: gone by 1100 ms and half a ms of rate.
        assert_eq!(expires_by(100 * MS, 1000), 1100 * MS + MS / 2);
        // Asked at 500 ms, 700 ms left of a 1000 ms lease: set at 200 ms, less 1 ms of
        // truncation and half a ms of rate.
        assert_eq!(set_after(500 * MS, 1000, 700), 200 * MS - MS - MS / 2);
        assert_eq!(set_after(MS, 1000, 0), 0);
    }
}
