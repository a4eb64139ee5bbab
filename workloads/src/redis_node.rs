//! One connection to one redis-server, and the two commands every Redis-based lock needs:
//! set-if-absent with a lease, and delete-if-still-mine. Shared by the single-node lock and
//! Redlock so that both classify outcomes the same way.

use std::time::Duration;

use redis::{from_redis_value, Client, Connection, RedisError, Script, Value};

use crate::error::WorkloadError;
use crate::lease::{expires_by, rate_allowance};
use crate::lock_client::Outcome;

/// Deletes the key only if it still holds this client's value: releasing someone else's lock
/// after our lease expired would hand the lock to a third client.
const COMPARE_AND_DELETE: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end"#;

/// A Lua function answering how long, in µs of the server's clock, until `key` is gone: from
/// its absolute expiry (`PEXPIRETIME`, Redis 7) and one reading of its clock (`TIME`), so no
/// whole-ms rounding is lost. Redis keeps a key while its clock in whole ms is at most the
/// expiry, so it is gone at the start of the next ms; a server without `PEXPIRETIME` answers by
/// `PTTL` + that ms.
macro_rules! until_gone_lua {
    () => {
        r#"
local function until_gone_us(key)
    local when = redis.pcall("pexpiretime", key)
    if type(when) == "number" and when >= 0 then
        local now = redis.call("time")
        local left = (when + 1) * 1000 - (tonumber(now[1]) * 1000000 + tonumber(now[2]))
        if left < 0 then
            return 0
        end
        return left
    end
    return (redis.call("pttl", key) + 1) * 1000
end
"#
    };
}

/// Extends the key's lease only if it still holds this client's value (a watchdog's renewal,
/// as Redisson's): extending someone else's lock would keep a lock we no longer hold. Answers
/// how long until the key is gone, in µs as the server counts it, or -1 when not ours.
const COMPARE_AND_EXTEND: &str = concat!(
    until_gone_lua!(),
    r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    redis.call("pexpire", KEYS[1], ARGV[2])
    return until_gone_us(KEYS[1])
else
    return -1
end"#
);

/// If the key holds `ARGV[1]`: how long, in µs of the server's clock read once (`TIME`), until
/// it is gone and since it was set (a lease of `ARGV[2]` ms), from its expiry as an absolute
/// ms (`PEXPIRETIME`, Redis 7). Redis keeps a key while its clock in whole ms is at most the
/// expiry, so it is gone at the start of the next ms. Else -1.
const TIMES_IF_EQUAL: &str = r#"
if redis.call("get", KEYS[1]) ~= ARGV[1] then
    return -1
end
local when = redis.call("pexpiretime", KEYS[1])
if when < 0 then
    return redis.error_reply("the key has no expiry")
end
local now = redis.call("time")
local now_us = tonumber(now[1]) * 1000000 + tonumber(now[2])
return {(when + 1) * 1000 - now_us, now_us - (when - tonumber(ARGV[2])) * 1000}"#;

/// `SET key value NX PX ttl`, answering how long until the key is gone, in µs as the server
/// counts it, when set, or -1 when the key was taken.
const SET_IF_ABSENT: &str = concat!(
    until_gone_lua!(),
    r#"
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    return until_gone_us(KEYS[1])
else
    return -1
end"#
);

impl From<RedisError> for WorkloadError {
    fn from(source: RedisError) -> WorkloadError {
        WorkloadError::Client {
            what: "a Redis client",
            source: Box::new(source),
        }
    }
}

/// What a server said of a key, by its own clock in µs: how long until the key is gone and how
/// long since it was set. Signed: a server whose clock jumped may say anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyTimes {
    pub until_gone_us: i64,
    pub since_set_us: i64,
}

impl KeyTimes {
    /// When the key is certainly gone, from an answer received at `completion` (ns on the run
    /// clock): the server read its clock before it answered, so its count runs from no later
    /// than `completion`, plus 500 ppm of it for its clock running slower than ours.
    /// `None` when the server's clock says it should be gone already: a clock that jumped.
    pub fn gone_by(&self, completion: u64) -> Option<u64> {
        Some(expires_by(
            completion,
            u64::try_from(self.until_gone_us).ok()?,
        ))
    }

    /// A lower bound of when the key was set, from a request sent at `sent`: the server read its
    /// clock after the request arrived, less 500 ppm of the span for its clock running faster.
    /// `None` when the server's clock says it was set in the future: a clock that jumped back.
    pub fn set_after(&self, sent: u64) -> Option<u64> {
        let span_ns = u64::try_from(self.since_set_us).ok()? * 1_000;
        Some(sent.saturating_sub(span_ns + rate_allowance(span_ns.div_ceil(1_000_000))))
    }
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
    times_if_equal: Script,
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
            times_if_equal: Script::new(TIMES_IF_EQUAL),
        })
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// `SET key value NX PX ttl`: `Ok(Some(µs until gone))` when set, as the server counts it,
    /// `Ok(None)` when the key was taken.
    pub fn set_if_absent(&mut self, key: &str, value: &str, ttl: Duration) -> Outcome<Option<u64>> {
        let script = self.set_if_absent.clone();
        let ttl_ms = ttl.as_millis() as u64;
        self.request(|c| {
            let remaining = script.key(key).arg(value).arg(ttl_ms).invoke::<i64>(c)?;
            Ok(u64::try_from(remaining).ok())
        })
    }

    /// How long until `key` is gone and since it was set with a lease of `ttl`, by the
    /// server's own clock, if it holds `value` (bytes of any kind, as a library's own lock
    /// value): `Ok(None)` when gone or someone else's.
    pub fn times_if_equal(
        &mut self,
        key: &[u8],
        value: &[u8],
        ttl: Duration,
    ) -> Outcome<Option<KeyTimes>> {
        let script = self.times_if_equal.clone();
        let ttl_ms = ttl.as_millis() as u64;
        self.request(|c| {
            let answer = script.key(key).arg(value).arg(ttl_ms).invoke::<Value>(c)?;
            // -1: not ours; anything but the pair is an error, never taken for "not ours".
            if answer == Value::Int(-1) {
                return Ok(None);
            }
            let (until_gone_us, since_set_us) = from_redis_value::<(i64, i64)>(answer)?;
            Ok(Some(KeyTimes {
                until_gone_us,
                since_set_us,
            }))
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

    /// Sets the lease of `key` to `ttl` from now if it still holds `value`: `Ok(Some(µs until
    /// gone))` when extended, as the server counts it, `Ok(None)` when it was gone or someone
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

    /// `WAIT replicas timeout_ms` on this connection: how many replicas acknowledged every
    /// write this connection made before it (the SET just sent), as the primary counts them
    /// when the count is reached or `timeout` passes. `timeout` must be shorter than this
    /// client's request timeout, or the read gives up first (an `Info`).
    pub fn wait_replicas(&mut self, replicas: u32, timeout: Duration) -> Outcome<u64> {
        let timeout_ms = (timeout.as_millis() as u64).max(1);
        self.request(|c| {
            redis::cmd("WAIT")
                .arg(replicas)
                .arg(timeout_ms)
                .query::<u64>(c)
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
        // Answered at 100 ms, gone in 1000.5 ms by the server's count: and 500 ppm of that.
        assert_eq!(
            expires_by(100 * MS, 1_000_500),
            1100 * MS + MS / 2 + 500_500
        );
        // Asked at 500 ms, set 300 ms before by the server's count, less 500 ppm of that.
        let times = KeyTimes {
            until_gone_us: 700_000,
            since_set_us: 300_000,
        };
        assert_eq!(times.set_after(500 * MS), Some(200 * MS - 150_000));
        assert_eq!(times.gone_by(100 * MS), Some(800 * MS + 350_000));
        // A clock that jumped gives no bound.
        let jumped = KeyTimes {
            until_gone_us: -1,
            since_set_us: -1,
        };
        assert_eq!((jumped.set_after(MS), jumped.gone_by(MS)), (None, None));
    }
}
