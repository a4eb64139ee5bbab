//! Two locks on one PostgreSQL server, the "row in a database" locks the field uses most.
//!
//! - [`AdvisoryLock`]: `pg_try_advisory_lock` on a session of its own. The session is the
//!   lease: the lock is held while the session lives, and ends when the server ends the session
//!   (the client's connection closes, or TCP keepalives find the client gone). No token, and no
//!   bound on how long a session lives: a frozen client's kernel keeps its connection alive.
//! - [`LeaseLock`]: a lease row (`holder`, `expires_at` by the database's own clock, `token`)
//!   taken with one `UPDATE … RETURNING` that bumps the token on every grant, so the token only
//!   grows and fences; renewed by a watchdog, released by clearing the holder.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::RunClock;
use crate::error::WorkloadError;
use crate::lease::{expires_by, Lease, OnRenewal, Renewed, Watchdog};
use crate::lock_client::{
    random_value, Grant, LockClient, Outcome, ReleaseFail, ReleaseFailKind, Released,
};
use crate::postgres_session::PostgresSession;

/// The table of lease rows, made by the service before any client runs.
pub const LEASE_TABLE: &str = "CREATE TABLE lockpick_leases (name text PRIMARY KEY, \
     holder text, expires_at timestamptz NOT NULL DEFAULT '-infinity', \
     token bigint NOT NULL DEFAULT 0)";

/// The advisory lock's key: a stable 64-bit number from the lock's name.
fn advisory_key(name: &str) -> i64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    }) as i64
}

pub struct AdvisoryLock {
    session: PostgresSession,
    key: i64,
    clock: RunClock,
}

impl AdvisoryLock {
    pub fn new(
        address: &str,
        name: &str,
        timeout: Duration,
        clock: RunClock,
    ) -> Result<AdvisoryLock, WorkloadError> {
        Ok(AdvisoryLock {
            session: PostgresSession::new(address, timeout)?,
            key: advisory_key(name),
            clock,
        })
    }
}

impl LockClient for AdvisoryLock {
    fn try_acquire(&mut self, _wait: Duration, _on_renewal: OnRenewal) -> Outcome<Grant> {
        let invoke = self.clock.now();
        let rows = match self
            .session
            .query("SELECT pg_try_advisory_lock($1)", &[&self.key])
        {
            Outcome::Ok(rows) => rows,
            Outcome::Fail(e) => return Outcome::Fail(e),
            Outcome::Info(e) => return Outcome::Info(e),
        };
        match rows.first().and_then(|r| r.try_get::<_, bool>(0).ok()) {
            Some(true) => Outcome::Ok(Grant {
                token: None,
                handle: self.key.to_string(),
                granted_by: vec![self.session.address().to_string()],
                // Held while the session lives, which nothing here can bound: claim no more
                // than the moment the request was sent, and no end.
                lease: Lease {
                    live_until: invoke,
                    expires_by: None,
                },
                granted_after: None,
                lower_tokens_gone: false,
                server_lease: None,
            }),
            Some(false) => Outcome::Fail("held by another session".to_string()),
            None => Outcome::Info("pg_try_advisory_lock gave no answer".to_string()),
        }
    }

    fn release(&mut self, _grant: &Grant) -> Released {
        if !self.session.is_connected() {
            // Not sent; when the server ends a session whose connection broke is not known.
            return Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotHeld,
                "the session had ended, and its lock with it",
            ));
        }
        match self
            .session
            .query("SELECT pg_advisory_unlock($1)", &[&self.key])
        {
            Outcome::Ok(rows) if rows.first().and_then(|r| r.try_get(0).ok()) == Some(true) => {
                Outcome::Ok(())
            }
            Outcome::Ok(_) => Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotOurs,
                "the session no longer held the lock",
            )),
            Outcome::Fail(e) => Outcome::Fail(ReleaseFail::refused(e)),
            Outcome::Info(e) => {
                // The session is gone with its connection: so is the lock, whatever the unlock
                // did. Unknown all the same: when the server noticed is not known.
                Outcome::Info(e)
            }
        }
    }
}

pub struct LeaseLock {
    session: PostgresSession,
    /// The watchdog's own session, so a renewal never waits behind the worker's statement.
    renewer: Arc<Mutex<PostgresSession>>,
    name: String,
    ttl: Duration,
    clock: RunClock,
    watchdog: Option<Watchdog>,
}

/// `UPDATE`s of the lease row; each returns the token and the ms the lease has left by the
/// database's clock, rounded up (`expires_by` takes µs).
const TAKE: &str = "UPDATE lockpick_leases SET holder = $2, token = token + 1, \
     expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond' \
     WHERE name = $1 AND (holder IS NULL OR expires_at <= clock_timestamp()) \
     RETURNING token, ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint";
const EXTEND: &str = "UPDATE lockpick_leases \
     SET expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond' \
     WHERE name = $1 AND holder = $2 AND expires_at > clock_timestamp() \
     RETURNING token, ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint";
const GIVE_BACK: &str = "UPDATE lockpick_leases SET holder = NULL \
     WHERE name = $1 AND holder = $2 AND expires_at > clock_timestamp() RETURNING token";
const ROW: &str = "INSERT INTO lockpick_leases (name) VALUES ($1) ON CONFLICT DO NOTHING";

impl LeaseLock {
    pub fn new(
        address: &str,
        name: &str,
        ttl: Duration,
        timeout: Duration,
        clock: RunClock,
    ) -> Result<LeaseLock, WorkloadError> {
        Ok(LeaseLock {
            session: PostgresSession::new(address, timeout)?,
            renewer: Arc::new(Mutex::new(PostgresSession::new(address, timeout)?)),
            name: name.to_string(),
            ttl,
            clock,
            watchdog: None,
        })
    }
}

/// The token and remaining ms of a `TAKE` or `EXTEND`, `None` when no row matched.
fn token_and_remaining(rows: &[tokio_postgres::Row]) -> Option<(i64, i64)> {
    let row = rows.first()?;
    Some((row.try_get(0).ok()?, row.try_get(1).ok()?))
}

fn ttl_ms(ttl: Duration) -> f64 {
    ttl.as_millis() as f64
}

/// One renewal of `holder`'s lease on `name`, its bounds read on `clock`.
fn renew(
    session: &mut PostgresSession,
    name: &str,
    holder: &str,
    ttl: Duration,
    clock: RunClock,
) -> Renewed {
    let invoke = clock.now();
    match session.query(EXTEND, &[&name, &holder, &ttl_ms(ttl)]) {
        Outcome::Ok(rows) => match token_and_remaining(&rows) {
            Some((_, remaining)) => Renewed::Extended(Lease {
                live_until: invoke + ttl.as_nanos() as u64,
                expires_by: Some(expires_by(clock.now(), remaining.max(0) as u64 * 1_000)),
            }),
            None => Renewed::Lost,
        },
        Outcome::Fail(_) => Renewed::Unchanged,
        Outcome::Info(_) => Renewed::Unknown,
    }
}

impl LockClient for LeaseLock {
    fn try_acquire(&mut self, _wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        // The row exists once; taking it is the UPDATE alone. An insert that did not run is
        // harmless: the UPDATE then matches nothing and fails.
        let _ = self.session.query(ROW, &[&self.name]);
        let holder = random_value();
        let invoke = self.clock.now();
        let rows = match self
            .session
            .query(TAKE, &[&self.name, &holder, &ttl_ms(self.ttl)])
        {
            Outcome::Ok(rows) => rows,
            Outcome::Fail(e) => return Outcome::Fail(e),
            Outcome::Info(e) => return Outcome::Info(e),
        };
        let Some((token, remaining)) = token_and_remaining(&rows) else {
            return Outcome::Fail("held by another client".to_string());
        };
        // Live for the TTL from the request's sending; ended by the database's own count.
        let lease = Lease {
            live_until: invoke + self.ttl.as_nanos() as u64,
            expires_by: Some(expires_by(
                self.clock.now(),
                remaining.max(0) as u64 * 1_000,
            )),
        };
        let (renewer, name, handle) = (Arc::clone(&self.renewer), self.name.clone(), holder);
        let (ttl, clock) = (self.ttl, self.clock);
        let held = handle.clone();
        self.watchdog = Some(Watchdog::start(
            self.clock,
            lease,
            ttl / 3,
            ttl / 3,
            on_renewal,
            move || {
                let mut session = renewer.lock().unwrap_or_else(|e| e.into_inner());
                renew(&mut session, &name, &held, ttl, clock)
            },
        ));
        Outcome::Ok(Grant {
            token: Some(token.max(0) as u64),
            handle,
            granted_by: vec![self.session.address().to_string()],
            lease,
            granted_after: None,
            lower_tokens_gone: false,
            server_lease: None,
        })
    }

    fn release(&mut self, grant: &Grant) -> Released {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        match self.session.query(GIVE_BACK, &[&self.name, &grant.handle]) {
            Outcome::Ok(rows) if !rows.is_empty() => Outcome::Ok(()),
            Outcome::Ok(_) => Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotOurs,
                "the lock was no longer ours: the lease had expired",
            )),
            Outcome::Fail(e) => Outcome::Fail(ReleaseFail::refused(e)),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::advisory_key;

    #[test]
    fn an_advisory_key_is_stable_and_differs_by_name() {
        assert_eq!(advisory_key("lock"), advisory_key("lock"));
        assert_ne!(advisory_key("lock"), advisory_key("lock2"));
    }
}
