//! `LOCKPICK_INJECT_CLIENT`, in debug builds only (see the parent module).

use std::time::Duration;

use lockpick_workloads::{Grant, LockClient, OnRenewal, Outcome, Released};

pub const VARIABLE: &str = "LOCKPICK_INJECT_CLIENT";

/// A fault a test injects into one client process (`crash:<process>`, `hang:<process>` or
/// `late-grant:<process or all>`): when that client first goes to release the lock (its release
/// invoke already recorded), it panics, or stops making progress for good; or each grant reaches
/// the worker five sixths of a TTL late, after the lease's watchdog has renewed it at least once
/// (every third of the TTL; a library renewing on its own, such as python-redis-lock's thread at
/// two thirds, too: at two thirds late, its renewal and the grant tied, and on a busy machine no
/// renewal raced its grant). Used to prove the run goes on without it, and that a renewal is
/// never recorded before its grant.
#[derive(Clone, Copy)]
enum ClientFault {
    Crash,
    Hang,
    LateGrant(Duration),
}

/// `lock`, with the fault the environment names for client `process`, if any.
pub fn wrap_client(lock: Box<dyn LockClient>, process: u64, ttl: Duration) -> Box<dyn LockClient> {
    match injected_fault(process, ttl) {
        Some(fault) => Box::new(Faulty { inner: lock, fault }),
        None => lock,
    }
}

fn injected_fault(process: u64, ttl: Duration) -> Option<ClientFault> {
    let text = std::env::var(VARIABLE).ok()?;
    let (kind, target) = text.split_once(':')?;
    if target != "all" && target.parse::<u64>().ok()? != process {
        return None;
    }
    match kind {
        "crash" => Some(ClientFault::Crash),
        "hang" => Some(ClientFault::Hang),
        "late-grant" => Some(ClientFault::LateGrant(ttl * 5 / 6)),
        _ => None,
    }
}

struct Faulty {
    inner: Box<dyn LockClient>,
    fault: ClientFault,
}

impl LockClient for Faulty {
    fn try_acquire(&mut self, wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        let outcome = self.inner.try_acquire(wait, on_renewal);
        if let (ClientFault::LateGrant(late), Outcome::Ok(_)) = (self.fault, &outcome) {
            std::thread::sleep(late);
        }
        outcome
    }

    fn release(&mut self, grant: &Grant) -> Released {
        // The release invoke is recorded before this call: the fault leaves it open.
        match self.fault {
            ClientFault::Crash => panic!("injected crash ({VARIABLE})"),
            ClientFault::Hang => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            ClientFault::LateGrant(_) => self.inner.release(grant),
        }
    }
}
