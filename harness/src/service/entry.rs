//! What a lock service's catalogue entry says about it: its name, its servers, whether and how
//! their clocks move. Each service's own file fills one in; the catalogue lists them.

use std::path::Path;

use crate::service::support::Support;

/// How `--server-bin` names another build of a service's server.
#[derive(Clone, Copy, Debug)]
pub enum ServerBinForm {
    /// One executable file (`redis=/opt/redis-7.4/redis-server`).
    Executable,
    /// A folder (ZooKeeper's jars, a database's `bin/`): `unusable` says why a folder will not
    /// do, if it will not.
    Folder {
        unusable: fn(&Path) -> Option<String>,
    },
}

/// One lock service, as the catalogue describes it.
#[derive(Debug)]
pub struct ServiceEntry {
    /// The name `--image`, `--server-bin` and the setup line's `server_versions` know it by.
    pub name: &'static str,
    /// One line: what its servers are.
    pub about: &'static str,
    pub server_bin: ServerBinForm,
    /// A path `--server-bin` could name for it, shown in the flag's refusals.
    pub server_bin_example: &'static str,
    /// Whether its servers' clocks can be moved (and why not): clock nemeses consult it.
    pub server_clock: Support,
    /// How they are moved, when they can be.
    pub clock_mover: ClockMover,
    /// Whether one of its servers leads the others (and why not): the leader nemeses
    /// (`kill-leader`, `pause-leader`, `partition-leader`) consult it.
    pub leader: Support,
    /// Whether its servers are redis-server, whose data `--persistence` keeps on disk across a
    /// restart (and why the knob means nothing to it otherwise): the configuration consults
    /// it, and its `start` gives each server `service::redis::persistence_args`.
    pub persistence: Support,
    /// What a client program (`exec:`, `workloads/PROTOCOL.md`) needs to talk to these servers
    /// beyond `LOCKPICK_SERVERS`: what each address is, how to log in, what is made ready for
    /// it. The book's exec table and PROTOCOL.md are written from it.
    pub connection: &'static str,
    /// What one cell on it costs the machine: `compare` sizes its default parallelism and
    /// its start-up gate from it.
    pub cost: CellCost,
    /// How long its servers get to end on SIGTERM at a run's end before they are killed.
    pub stop_grace: std::time::Duration,
}

/// What one cell of a comparison on a service keeps busy (its servers and 5 clients), measured
/// on a 2-core machine (docs/performance.md says how). A start-up is CPU-bound (a JVM loading
/// classes, an etcd cluster electing); the contention phase mostly waits on leases and timers.
#[derive(Clone, Copy, Debug)]
pub struct CellCost {
    /// Cores its servers' start-up keeps busy: a start-up waits at the gate until that many are
    /// free (0: too short to be worth a wait).
    pub startup_cores: f64,
    /// Cores the cell keeps busy while its clients contend for the lock.
    pub contention_cores: f64,
    /// Resident memory of its servers and clients, in MB.
    pub memory_mb: u64,
}

/// How a clock nemesis moves a service's servers' clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockMover {
    /// The servers start under libfaketime (programs that read the clock through libc, and
    /// are not slowed down by it), which rereads its offset file on every clock read.
    Faketime,
    /// The running server's vDSO is patched through ptrace ([`crate::clock_shift`]): any
    /// program (Go, a JVM), but it needs the server's own pid, so the namespace runtime only.
    Vdso,
}
