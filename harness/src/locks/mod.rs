//! The catalogue of locks. Each lock is one self-describing entry: the service its servers run
//! (how many, how to start them, when they are ready), the client that takes it, the fencing
//! token it hands out, the lease rules it lives by, and what it can and cannot be put through.
//! The run, the configuration, `bench` and `compare` consult this catalogue and nothing else:
//! no other file matches on a lock's name.
//!
//! Adding a lock: a file here with its entry, its client in `workloads/src/`, and one line in
//! [`LOCKS`] (plus its `mod`); its service in `service/` if it runs on servers not yet known.

mod etcd;
pub mod exec;
mod mariadb;
mod nats_kv;
mod postgres_advisory;
mod postgres_lease;
mod redis;
mod redis_sentinel;
mod redlock;
mod rslock;
mod zookeeper;

use std::time::Duration;

use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::exec_server_check::ServerCheck;
use lockpick_workloads::LockClient;

use crate::service::{LockService, ServiceEntry};

/// Every lock lockpick knows, in the order `--help` and `compare` list them; the first is
/// `--lock`'s default.
pub static LOCKS: &[&dyn Lock] = &[
    &redis::Redis,
    &redis_sentinel::RedisSentinel,
    &redlock::Redlock,
    &rslock::Rslock,
    &etcd::Etcd,
    &zookeeper::Zookeeper,
    &postgres_advisory::PostgresAdvisory,
    &postgres_lease::PostgresLease,
    &mariadb::Mariadb,
    &nats_kv::NatsKv,
];

/// The lock `--lock` takes when none is named: the first of [`LOCKS`].
pub fn default_name() -> &'static str {
    LOCKS[0].name()
}

/// The locks `compare` runs when nothing names them: those whose entry asks for it
/// (`in_default_comparison`), comma-separated.
pub fn default_comparison() -> String {
    let names: Vec<&str> = LOCKS
        .iter()
        .filter(|lock| lock.in_default_comparison())
        .map(|lock| lock.name())
        .collect();
    names.join(",")
}

/// Finds a lock by its name: a built-in one, or `exec:<service>:<command>` (see [`exec`]).
pub fn find(name: &str) -> Option<&'static dyn Lock> {
    if name.starts_with(exec::PREFIX) {
        return exec::find(name).ok().map(|e| e as &'static dyn Lock);
    }
    LOCKS.iter().copied().find(|lock| lock.name() == name)
}

/// Finds a lock by its name and the short name it is to be shown by: only an exec lock takes
/// one (its whole command is no name to show).
pub fn find_named(name: &str, short_name: Option<&str>) -> Result<&'static dyn Lock, String> {
    match short_name {
        None => find(name).ok_or_else(|| format!("{name:?} is not a lock lockpick knows")),
        Some(_) if name.starts_with(exec::PREFIX) => {
            exec::find_named(name, short_name).map(|e| e as &'static dyn Lock)
        }
        Some(short) => Err(format!(
            "only an exec lock takes a short name ({short:?}): {name} is named already"
        )),
    }
}

/// A lock's label as a store folder's name: an unnamed exec lock's command holds spaces and
/// slashes, so every other character becomes `_`, and a long one is cut and ends in a hash of
/// the whole.
pub fn store_name(lock: &dyn Lock) -> String {
    let name = lock.label();
    let safe: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect();
    if safe == name && name.len() <= 48 {
        return safe;
    }
    let hash = crate::stable_hash::fnv1a(name);
    let cut: String = safe.chars().take(40).collect();
    format!("{cut}-{:08x}", hash as u32)
}

/// The names of every lock, for `--help` and error messages.
pub fn names() -> Vec<&'static str> {
    LOCKS.iter().map(|lock| lock.name()).collect()
}

pub use crate::service::support::Support;

/// What a lock is and can do: what a nemesis checks before it agrees to run against it.
#[derive(Clone, Copy, Debug)]
pub struct Capabilities {
    /// How many servers its service runs on.
    pub servers: usize,
    /// The fencing token its holders get, in words; `"none"` when it gives none.
    pub token: &'static str,
    /// Whether its servers' clocks can be moved: its service entry's `server_clock`.
    pub server_clock: Support,
    /// Whether its client says which servers granted a lock (for faults aimed at them).
    pub names_granting_servers: Support,
    /// Whether its client reasons with its own clock (so skewing that clock matters).
    pub client_clock: Support,
    /// Whether one of its servers leads the others: its service entry's `leader`.
    pub leader: Support,
    /// Whether its clients reach the servers only at the addresses they are given, so that a
    /// delay proxy on each of those links holds all their traffic to the servers.
    pub delayable_server_links: Support,
}

/// One lock in the catalogue. Contract: `service` returns a fresh, unstarted service each time;
/// `client` runs in the client process and returns a client whose every call is bounded by the
/// spec's timeouts.
pub trait Lock: Sync {
    /// The name users type (`--lock redis`).
    fn name(&self) -> &'static str;

    /// The name outputs show it by (store folders, grids, JUnit, expectations): its name, or an
    /// exec lock's short name.
    fn label(&self) -> &'static str {
        self.name()
    }

    /// One line for `--help` and the book's reference table.
    fn about(&self) -> &'static str;

    fn capabilities(&self) -> Capabilities;

    /// The catalogue entry of the service its servers run.
    fn service_entry(&self) -> &'static ServiceEntry;

    /// The service its servers run, not yet started.
    fn service(&self) -> Box<dyn LockService>;

    /// Whether `exec:<this lock's name>:<command>` lends its servers to a user's program. A
    /// lock whose servers another entry already lends (rslock runs Redlock's) says no.
    fn lends_servers(&self) -> bool {
        true
    }

    /// Whether `compare` runs it when neither the matrix nor `--locks` names the locks.
    fn in_default_comparison(&self) -> bool {
        false
    }

    /// Cores one of its cells keeps busy while 5 clients contend: its service's (the worst of
    /// the locks on it) unless the lock's clients measurably cost less. `compare` sizes its
    /// automatic parallelism by it.
    fn contention_cores(&self) -> f64 {
        self.service_entry().cost.contention_cores
    }

    /// Roughly how long its servers take to start, as `lockpick bench` measures it: `compare
    /// --shard` weighs each cell by it.
    fn start_up(&self) -> Duration {
        Duration::from_secs(1)
    }

    /// A check that asks its server for its count of an exec program's lease (the key named
    /// `LOCKPICK_KEY`), recorded as `server_lease`; `None` where no one server holds the
    /// lease to ask (Redlock's are five counts, etcd's and ZooKeeper's live in sessions the
    /// program's library owns).
    fn server_check(&self, _spec: &ClientSpec) -> Option<Box<dyn ServerCheck>> {
        None
    }

    /// How many replicas a grant can wait for (`--wait-replicas`); 0 for a lock whose servers
    /// replicate nothing, which refuses the knob.
    fn replicas(&self) -> u32 {
        0
    }

    /// Refuses a TTL the lock cannot honour, with the reason.
    fn check_ttl(&self, _ttl: Duration) -> Result<(), String> {
        Ok(())
    }

    /// The longest a lease can outlive the last moment its holder's process ran (the `setup`
    /// line's `lease_silence_ms`): a frozen holder renews nothing, so its lease ends one lease
    /// length after its last renewal, plus the service's own slack.
    fn lease_silence(&self, ttl: Duration) -> Option<Duration>;

    /// Whether the lock reads the run's TTL (`--ttl`; an exec program gets it as
    /// `LOCKPICK_TTL_MS`): false for a lock whose lease is its session, which no TTL shortens.
    /// A lock without a lease length of its own to report may still read it.
    fn reads_ttl(&self) -> bool {
        true
    }

    /// How `skew-clients` moves its client's clock (when `client_clock` allows it at all).
    fn client_clock_mover(&self) -> ClientClockMover {
        ClientClockMover::SkewFile
    }

    /// Builds the client, in the client process.
    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>>;
}

/// How `skew-clients` moves a client's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientClockMover {
    /// The client reads its offset from its skew file (our Redlock's `SkewableClock`).
    SkewFile,
    /// The client's program (`exec:`) has its vDSO patched; it tells its clock back.
    ProgramVdso,
}

fn boxed(lock: impl LockClient + 'static) -> Box<dyn LockClient> {
    Box::new(lock)
}

impl std::fmt::Debug for dyn Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lock_names_as_many_servers_as_its_service_starts() {
        for lock in LOCKS {
            assert_eq!(
                lock.capabilities().servers,
                lock.service().node_count(),
                "{}",
                lock.name()
            );
            assert_eq!(find(lock.name()).map(|l| l.name()), Some(lock.name()));
        }
    }
}
