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

/// The clock our lock clients reason with (elapsed time, lease validity): the host's monotonic
/// clock plus an offset that the harness can change while the client runs, by writing a signed
/// number of milliseconds to the client's skew file (the clock nemesis does; a sequence number may
/// follow, for [`crate::exec_clock`]). It never stamps the
/// history. Third-party clients (rslock) read the real clock and cannot be skewed this way.
#[derive(Clone, Debug, Default)]
pub struct SkewableClock {
    skew_file: Option<std::path::PathBuf>,
}

impl SkewableClock {
    pub fn new(skew_file: Option<std::path::PathBuf>) -> SkewableClock {
        SkewableClock { skew_file }
    }

    /// Milliseconds on this client's clock.
    pub fn now_ms(&self) -> i64 {
        (monotonic_ns() / 1_000_000) as i64 + self.skew_ms()
    }

    /// The current offset; 0 without a file, or while the file is missing or being replaced.
    pub fn skew_ms(&self) -> i64 {
        self.skew_file
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skew_file_moves_the_clock() {
        let dir = std::env::temp_dir().join(format!("lockpick-skew-{}", std::process::id()));
        let clock = SkewableClock::new(Some(dir.clone()));
        assert_eq!(clock.skew_ms(), 0, "no file, no skew");
        std::fs::write(&dir, "-30000 7\n").unwrap();
        let skewed = clock.now_ms();
        let real = SkewableClock::default().now_ms();
        assert!((real - skewed - 30_000).abs() < 1_000, "{real} vs {skewed}");
        std::fs::remove_file(&dir).unwrap();
    }
}
