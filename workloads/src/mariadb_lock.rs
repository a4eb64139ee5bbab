//! MariaDB's named lock, the lock many MySQL shops use: `GET_LOCK(name, 0)` on a session of the
//! client's own, `RELEASE_LOCK(name)` to give it back. The session is the lease: the lock is held
//! while the session lives, and ends when the server ends the session (the client's connection
//! closes, or the server's TCP keepalives find the client gone). No token, and no bound on how
//! long a session lives: a frozen client's kernel keeps its connection alive.
//!
//! `GET_LOCK` answers 1 (granted), 0 (held by another session) or NULL (an error);
//! `RELEASE_LOCK` answers 1 (released), 0 (held by another session) or NULL (nobody holds it).
//! A session may take the same name again (the count nests), which the worker never does: it
//! releases before it acquires.

use std::time::Duration;

use crate::clock::RunClock;
use crate::error::WorkloadError;
use crate::lease::{Lease, OnRenewal};
use crate::lock_client::{Grant, LockClient, Outcome, ReleaseFail, ReleaseFailKind, Released};
use crate::mariadb_session::MariadbSession;

/// Lock names longer than this are refused by the server (MariaDB's limit is 64 characters).
const MAX_NAME: usize = 64;

pub struct NamedLock {
    session: MariadbSession,
    name: String,
    clock: RunClock,
}

impl NamedLock {
    pub fn new(
        address: &str,
        name: &str,
        timeout: Duration,
        clock: RunClock,
    ) -> Result<NamedLock, WorkloadError> {
        Ok(NamedLock {
            session: MariadbSession::new(address, timeout)?,
            name: lock_name(name),
            clock,
        })
    }
}

/// The server's name for the run's lock: the key itself when it fits, else a stable hash of it.
fn lock_name(key: &str) -> String {
    if key.len() <= MAX_NAME {
        return key.to_string();
    }
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("lockpick-{hash:016x}")
}

impl LockClient for NamedLock {
    fn try_acquire(&mut self, _wait: Duration, _on_renewal: OnRenewal) -> Outcome<Grant> {
        let invoke = self.clock.now();
        let answer = match self
            .session
            .first::<(Option<i64>,)>("SELECT GET_LOCK(?, 0)", (self.name.as_str(),))
        {
            Outcome::Ok(row) => row.and_then(|(value,)| value),
            Outcome::Fail(e) => return Outcome::Fail(e),
            Outcome::Info(e) => return Outcome::Info(e),
        };
        match answer {
            Some(1) => Outcome::Ok(Grant {
                token: None,
                handle: self.name.clone(),
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
            Some(_) => Outcome::Fail("held by another session".to_string()),
            // NULL: the server hit an error taking it; whether it holds it now is not known,
            // and the session is dropped so that it holds nothing.
            None => {
                self.session.disconnect();
                Outcome::Info("GET_LOCK answered NULL".to_string())
            }
        }
    }

    fn release(&mut self, _grant: &Grant) -> Released {
        if !self.session.is_connected() {
            // Not sent; the session that held the lock is gone, and its lock with it.
            return Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotHeld,
                "the session had ended, and its lock with it",
            ));
        }
        match self
            .session
            .first::<(Option<i64>,)>("SELECT RELEASE_LOCK(?)", (self.name.as_str(),))
        {
            Outcome::Ok(Some((Some(1),))) => Outcome::Ok(()),
            Outcome::Ok(Some((Some(_),))) => Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotOurs,
                "another session held the lock",
            )),
            Outcome::Ok(_) => Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotHeld,
                "no session held the lock",
            )),
            Outcome::Fail(e) => Outcome::Fail(ReleaseFail::refused(e)),
            // The session is gone with its connection: so is the lock, whatever the release
            // did. Unknown all the same: when the server noticed is not known.
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_name_is_the_key_when_it_fits_and_a_stable_hash_when_not() {
        assert_eq!(lock_name("lockpick"), "lockpick");
        let long = "k".repeat(100);
        assert_eq!(lock_name(&long), lock_name(&long));
        assert!(lock_name(&long).len() <= MAX_NAME);
        assert_ne!(lock_name(&long), lock_name(&"k".repeat(101)));
    }
}
