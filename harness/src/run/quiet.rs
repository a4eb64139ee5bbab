//! The quiet phase, extended while a jam is decided. A lock refused to everyone at the end of a
//! run, while nobody held it, is a jam only once refused for longer than the jam bound; a run
//! that ends sooner could only call it unknown ("refused to everyone for the last 2.107 s ... a
//! jam needs over 3000 ms"). So in the last second before the time limit the history so far is
//! checked every quarter second, and as soon as it shows such a stretch the clients are asked to go on taking turns past the limit
//! (SIGUSR1; `lockpick client` listens), by at most the jam bound, until the history proves the
//! jam or the lock is granted again; then they are told to stop (SIGUSR2). Every fault is
//! healed by then, so what the extension shows is the lock's own doing.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use lockpick_checkers::liveness::Liveness;
use lockpick_checkers::words::seconds;
use nix::sys::signal::{kill, Signal};

use crate::cluster::Cluster;
use crate::processes::children::Role;

/// How often the history is checked again during the extension.
const EVERY: Duration = Duration::from_millis(250);

enum State {
    /// Not yet looked: the look comes `MARGIN` before the time limit.
    Waiting,
    /// Extended until `until` (run clock), checked again at `next`.
    Extended { until: u64, next: Instant },
    /// Over: the deadline in force from now on.
    Over { deadline: u64 },
}

pub struct QuietPhase {
    history: PathBuf,
    deadline: u64,
    by: Duration,
    state: State,
    /// When the history may be looked at again, in the last moments before the limit.
    next_look: Instant,
}

impl QuietPhase {
    pub fn new(history: PathBuf, deadline: u64, by: Duration) -> QuietPhase {
        QuietPhase {
            history,
            deadline,
            by,
            state: State::Waiting,
            next_look: Instant::now(),
        }
    }

    /// The deadline in force at `now`, after looking at the history when it is time to.
    pub fn deadline(&mut self, now: u64, cluster: &mut Cluster) -> u64 {
        // Looked at a second before the limit (a quarter of a short run), so that the clients
        // hear of the extension before their own deadline stops them.
        let margin = Duration::from_secs(1).min(Duration::from_nanos(self.deadline / 4));
        match self.state {
            State::Waiting if now + margin.as_nanos() as u64 >= self.deadline => {
                let next = self.next_look;
                if self.by.is_zero() || now >= self.deadline {
                    self.state = State::Over {
                        deadline: self.deadline,
                    };
                    return self.deadline;
                }
                if Instant::now() < next {
                    return self.deadline;
                }
                self.next_look = Instant::now() + EVERY;
                let Some(suspected) = self.look().and_then(suspicion) else {
                    return self.deadline;
                };
                crate::tell!(
                    "lockpick: near the end of the run {suspected}: the quiet phase goes on for \
                     up to {} more (the jam bound), until the jam is proven or the lock is \
                     granted again",
                    seconds(self.by.as_nanos() as u64)
                );
                signal_clients(cluster, Signal::SIGUSR1);
                let until = self.deadline + self.by.as_nanos() as u64;
                self.state = State::Extended {
                    until,
                    next: Instant::now() + EVERY,
                };
                until
            }
            State::Waiting => self.deadline,
            State::Extended { until, next } if Instant::now() >= next => {
                let looked = self.look();
                let proven = looked.as_ref().is_some_and(|l| !l.jams.is_empty());
                let cleared = looked.as_ref().is_some_and(|l| l.refused_at_end == 0);
                if proven || cleared || now >= until {
                    let why = if proven {
                        "the jam is proven"
                    } else if cleared {
                        "the lock was granted again or the refusals stopped"
                    } else {
                        "the jam bound has passed"
                    };
                    crate::tell!(
                        "lockpick: the quiet phase ended {} past the time limit: {why}",
                        seconds(now.saturating_sub(self.deadline))
                    );
                    signal_clients(cluster, Signal::SIGUSR2);
                    let deadline = now.min(until);
                    self.state = State::Over { deadline };
                    return deadline;
                }
                self.state = State::Extended {
                    until,
                    next: Instant::now() + EVERY,
                };
                until
            }
            State::Extended { until, .. } => until,
            State::Over { deadline } => deadline,
        }
    }

    /// How long the extension went on, once it is over (0 when there was none).
    pub fn extended_by(&self) -> u64 {
        match self.state {
            State::Over { deadline } => deadline.saturating_sub(self.deadline),
            State::Extended { until, .. } => until.saturating_sub(self.deadline),
            State::Waiting => 0,
        }
    }

    /// The liveness checker's word on the history so far.
    fn look(&self) -> Option<Liveness> {
        let file = std::fs::File::open(&self.history).ok()?;
        let results = lockpick_checkers::check_reader(std::io::BufReader::new(file));
        results.liveness
    }
}

/// What the history shows at its end that a longer quiet phase could decide: refusals to
/// everyone while nobody held the lock, not yet a proven jam.
fn suspicion(liveness: Liveness) -> Option<String> {
    if !liveness.jams.is_empty() || liveness.refused_at_end == 0 {
        return None;
    }
    Some(liveness.unproven.unwrap_or_else(|| {
        format!(
            "the lock was refused to everyone for the last {} while nobody held it",
            seconds(liveness.refused_at_end)
        )
    }))
}

/// Sends `signal` to every client process still running (one that has ended hears nothing).
fn signal_clients(cluster: &mut Cluster, signal: Signal) {
    for process in cluster.client_processes() {
        let role = Role::Client(process);
        if cluster.children().has_exited(&role) {
            continue;
        }
        if let Some(pid) = cluster.children().pid(&role) {
            let _ = kill(pid, signal);
        }
    }
}
