//! The start-up gate: the runs of one `lockpick` process (a comparison's cells) share the
//! machine's cores, and a service's start-up is the CPU-bound part of a run (three JVMs loading
//! classes, an etcd cluster electing), where the contention phase mostly waits on leases and
//! timers. A start-up asks the gate for the cores its service's catalogue entry says it keeps
//! busy and waits until they are free, so two ZooKeeper ensembles do not start at once on two
//! cores, and a start-up is not slowed into a failed readiness check by another. A start-up too
//! short to matter (redis-server: 0 cores) passes at once. A lone run never waits.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Cores held by start-ups in progress, in hundredths (whole numbers keep the sums exact).
static BUSY: Mutex<u64> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

/// A start-up's hold on the gate; the cores go back when it is dropped.
pub struct Pass {
    held: u64,
    /// How long the start-up waited for its cores.
    pub waited: Duration,
}

/// Waits until `cores` of the machine's `capacity` are free (at once if nothing else is
/// starting: a start-up that needs more than the machine has still gets to run alone), then
/// holds them until the pass is dropped.
pub fn enter(cores: f64, capacity: usize) -> Pass {
    let asked = Instant::now();
    let capacity = capacity.max(1) as u64 * 100;
    let want = ((cores.max(0.0) * 100.0).round() as u64).min(capacity);
    if want == 0 {
        return Pass {
            held: 0,
            waited: Duration::ZERO,
        };
    }
    let mut busy = BUSY.lock().unwrap_or_else(|e| e.into_inner());
    while *busy > 0 && *busy + want > capacity {
        busy = FREED.wait(busy).unwrap_or_else(|e| e.into_inner());
    }
    *busy += want;
    Pass {
        held: want,
        waited: asked.elapsed(),
    }
}

/// The machine's cores, the gate's capacity.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Drop for Pass {
    fn drop(&mut self) {
        if self.held == 0 {
            return;
        }
        let mut busy = BUSY.lock().unwrap_or_else(|e| e.into_inner());
        *busy = busy.saturating_sub(self.held);
        FREED.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two start-ups that each need the whole machine take turns; one that needs nothing
    /// passes while they hold it. (One test: the gate is the process's, shared by every test
    /// thread.)
    #[test]
    fn heavy_start_ups_take_turns_and_light_ones_pass() {
        let first = enter(3.0, 2);
        assert_eq!(
            first.held, 200,
            "a start-up bigger than the machine gets it all"
        );
        let light = enter(0.0, 2);
        assert_eq!(light.waited, Duration::ZERO);
        let second = std::thread::spawn(|| {
            let pass = enter(2.0, 2);
            pass.waited
        });
        std::thread::sleep(Duration::from_millis(300));
        drop(first);
        let waited = second.join().unwrap();
        assert!(
            waited >= Duration::from_millis(250),
            "the second heavy start-up waited only {waited:?}"
        );
    }
}
