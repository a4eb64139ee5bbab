//! The run's clock: nanoseconds since the run began on the host's monotonic clock.
//!
//! Every process of a run (controller, clients, resource) reads the same kernel monotonic clock
//! and subtracts the same origin, which the controller hands to each of them; so their
//! timestamps are comparable without any synchronisation, and no faked wall clock or clock jump
//! can reach the history.

use nix::time::{clock_gettime, ClockId};

#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    origin_ns: u64,
}

impl RunClock {
    /// A clock whose zero is now.
    pub fn start() -> RunClock {
        RunClock {
            origin_ns: monotonic_ns(),
        }
    }

    /// A clock whose zero is `origin_ns` on the host's monotonic clock (as another process of
    /// the same run reported it).
    pub fn from_origin(origin_ns: u64) -> RunClock {
        RunClock { origin_ns }
    }

    pub fn origin_ns(&self) -> u64 {
        self.origin_ns
    }

    /// Nanoseconds since the run began.
    pub fn now(&self) -> u64 {
        monotonic_ns().saturating_sub(self.origin_ns)
    }
}

/// The host's CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always readable");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}
