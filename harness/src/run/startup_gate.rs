//! The start-up gate: the runs of one `lockpick` process (a comparison's cells) share the
//! machine's cores, and a service's start-up is the CPU-bound part of a run (three JVMs loading
//! classes, an etcd cluster electing), where the contention phase mostly waits on leases and
//! timers. A start-up asks the gate for the cores its service's catalogue entry says it keeps
//! busy and waits until they are free, so two ZooKeeper ensembles do not start at once on two
//! cores, and a start-up is not slowed into a failed readiness check by another. A start-up too
//! short to matter (redis-server: 0 cores) needs no cores, but it yields to the heavy ones
//! starting or waiting to (for at most [`LIGHT_YIELD`]): its own clients would start and
//! contend at once, and the cores they take are the ones a JVM start-up is waiting for (in the
//! example gate, six Redis cells' clients tripled two ZooKeeper start-ups and made them the
//! comparison's last cells to end). Of the heavy start-ups waiting, the one that needs the most
//! cores goes first (the one that asked first among equals): a ZooKeeper start-up that needs
//! both cores is not passed over by etcd start-ups that fit beside each other, and the etcd
//! start-ups then go together rather than one on each side of it. A lone run never waits.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The start-ups in progress and waiting, as the gate counts them.
struct Gate {
    /// Cores held by start-ups in progress, in hundredths (whole numbers keep the sums exact).
    busy: u64,
    /// Start-ups that need cores and wait for them: (cores wanted, ticket), tickets in the
    /// order they asked.
    waiting: Vec<(u64, u64)>,
    next_ticket: u64,
}

impl Gate {
    /// The ticket of the waiting start-up that goes next: the most cores wanted, then the
    /// first asked.
    fn next(&self) -> Option<u64> {
        let most = self.waiting.iter().map(|&(want, _)| want).max()?;
        (self.waiting.iter())
            .filter(|&&(want, _)| want == most)
            .map(|&(_, ticket)| ticket)
            .min()
    }
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    busy: 0,
    waiting: Vec::new(),
    next_ticket: 0,
});
static FREED: Condvar = Condvar::new();

/// The longest a start-up that needs no cores yields to heavy ones: a bound, so that a stream
/// of heavy start-ups never holds a light cell back for long.
pub const LIGHT_YIELD: Duration = Duration::from_secs(5);

/// A start-up's hold on the gate; the cores go back when it is dropped.
pub struct Pass {
    held: u64,
    /// How long the start-up waited for its cores.
    pub waited: Duration,
}

/// Waits until `cores` of the machine's `capacity` are free (at once if nothing else is
/// starting: a start-up that needs more than the machine has still gets to run alone), then
/// holds them until the pass is dropped; the waiting start-up that needs the most cores goes
/// first. A start-up that needs none waits while heavy ones start or wait, for at most [`LIGHT_YIELD`].
pub fn enter(cores: f64, capacity: usize) -> Pass {
    let asked = Instant::now();
    let capacity = capacity.max(1) as u64 * 100;
    let want = ((cores.max(0.0) * 100.0).round() as u64).min(capacity);
    let mut gate = GATE.lock().unwrap_or_else(|e| e.into_inner());
    if want == 0 {
        if gate.busy == 0 && gate.waiting.is_empty() {
            return Pass {
                held: 0,
                waited: Duration::ZERO,
            };
        }
        let until = asked + LIGHT_YIELD;
        while gate.busy > 0 || !gate.waiting.is_empty() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            gate = FREED
                .wait_timeout(gate, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        return Pass {
            held: 0,
            waited: asked.elapsed(),
        };
    }
    let ticket = gate.next_ticket;
    gate.next_ticket += 1;
    gate.waiting.push((want, ticket));
    while gate.next() != Some(ticket) || (gate.busy > 0 && gate.busy + want > capacity) {
        gate = FREED.wait(gate).unwrap_or_else(|e| e.into_inner());
    }
    gate.waiting.retain(|&(_, t)| t != ticket);
    gate.busy += want;
    // The next in line may fit beside this one.
    FREED.notify_all();
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
        let mut gate = GATE.lock().unwrap_or_else(|e| e.into_inner());
        gate.busy = gate.busy.saturating_sub(self.held);
        FREED.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two start-ups that each need the whole machine take turns; one that needs nothing
    /// passes at once when nothing heavy starts, and waits for a heavy one in progress until
    /// it ends. (One test: the gate is the process's, shared by every test thread.)
    #[test]
    fn heavy_start_ups_take_turns_and_light_ones_yield_to_them() {
        let alone = enter(0.0, 2);
        assert_eq!(alone.waited, Duration::ZERO, "nothing heavy was starting");
        let first = enter(3.0, 2);
        assert_eq!(
            first.held, 200,
            "a start-up bigger than the machine gets it all"
        );
        let second = std::thread::spawn(|| enter(2.0, 2).waited);
        let light = std::thread::spawn(|| enter(0.0, 2).waited);
        std::thread::sleep(Duration::from_millis(300));
        drop(first);
        let waited = second.join().unwrap();
        assert!(
            waited >= Duration::from_millis(250),
            "the second heavy start-up waited only {waited:?}"
        );
        let light = light.join().unwrap();
        assert!(
            light >= Duration::from_millis(250) && light <= LIGHT_YIELD + Duration::from_secs(1),
            "a light start-up waited {light:?} while a heavy one held the gate"
        );

        // The biggest first: a whole-machine start-up waiting is not passed over by a one-core
        // start-up that would fit beside the one in progress, though it asked later.
        let holding = enter(2.0, 2);
        let (order, told) = std::sync::mpsc::channel();
        let small = {
            let order = order.clone();
            std::thread::spawn(move || {
                let _pass = enter(1.0, 2);
                order.send("small").unwrap();
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        let big = std::thread::spawn(move || {
            let pass = enter(2.0, 2);
            order.send("big").unwrap();
            std::thread::sleep(Duration::from_millis(100));
            drop(pass);
        });
        std::thread::sleep(Duration::from_millis(200));
        drop(holding);
        big.join().unwrap();
        small.join().unwrap();
        let order: Vec<&str> = told.iter().collect();
        assert_eq!(order, ["big", "small"]);
    }
}
