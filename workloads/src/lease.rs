//! A held lock's lease as the history records it (see `checkers/HISTORY.md`), and the watchdog
//! that keeps it alive while the worker works.
//!
//! Every lease here ends unless renewed: a Redis key's PX, an etcd lease, a ZooKeeper session.
//! A client that works longer than that must renew in the background, as Redisson's watchdog
//! and etcd's keep-alive do. The watchdog is a thread of the client process, so freezing the
//! process (SIGSTOP) freezes the renewals too: that is what a paused holder looks like.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde::Serialize;

use crate::clock::RunClock;

/// When a lease (a key, a row) the server said was gone in `until_gone_us` (its own count, in
/// µs), in an answer
/// received at `completion` (ns on the run clock), has certainly expired: the server read its
/// clock before it answered, plus 500 ppm of the span for its clock running slower than ours
/// (the most NTP slews a clock). Shared by every lock whose server counts its leases.
pub fn expires_by(completion: u64, until_gone_us: u64) -> u64 {
    completion + until_gone_us * 1_000 + rate_allowance(until_gone_us.div_ceil(1_000))
}

/// 500 ppm of a span the server counted, in ns.
pub fn rate_allowance(span_ms: u64) -> u64 {
    span_ms * 500
}

/// What the client knows of its lease, in ns on the run clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Lease {
    /// By the lock's own protocol, the lease is certainly held until at least then.
    pub live_until: u64,
    /// The lease has certainly ended by then, unless renewed later; `None` when the client
    /// cannot bound it.
    pub expires_by: Option<u64>,
}

impl Lease {
    /// The bounds a lease of `length` has after a request that set it was sent at `invoke` and
    /// answered at `completion`: the server applied it in between. `early` is taken off the
    /// lower bound and `late` added to the upper one (a drift allowance, an expiry loop's period).
    pub fn set_between(
        invoke: u64,
        completion: u64,
        length: Duration,
        early: Duration,
        late: Duration,
    ) -> Lease {
        Lease {
            live_until: (invoke + nanos(length)).saturating_sub(nanos(early)),
            expires_by: Some(completion + nanos(length) + nanos(late)),
        }
    }

    /// The same lease after a renewal whose outcome is unknown: still live as long as before,
    /// but it may have been extended by an unknown amount.
    pub fn unbounded(self) -> Lease {
        Lease {
            expires_by: None,
            ..self
        }
    }
}

/// The lock server's own count of a lease, asked after a client program reported its bounds:
/// what lockpick checks the report against (`checkers/HISTORY.md`, "Claims are claims").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ServerLease {
    /// When the server's answer came (ns on the run clock).
    pub asked_at: u64,
    /// The lease's remaining time as the server counted it (Redis `PTTL`); `None`: the server
    /// holds the key with no expiry at all.
    pub remaining_ms: Option<u64>,
    /// By the server's count, the lease (or whatever now holds its key, which came after it)
    /// has certainly ended by then; `None` with `remaining_ms`: never.
    pub ended_by: Option<u64>,
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// What one renewal attempt did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewed {
    /// The lease was extended; its new bounds.
    Extended(Lease),
    /// Nobody knows whether it was extended (a request timed out after sending).
    Unknown,
    /// Certainly not extended, but the lease may still be ours (nothing was sent): try again.
    Unchanged,
    /// The lease is certainly no longer ours: stop renewing.
    Lost,
    /// The client gives the lease up, but its last attempt's effect is unknown: the lease is
    /// unbounded from now on, and renewals stop.
    GaveUp,
}

/// Called with each renewal the watchdog makes that changed the lease's bounds.
pub type OnRenewal = Box<dyn FnMut(Renewal) + Send>;

/// One renewal, as the history records it (a `renew` line).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Renewal {
    /// The lease's bounds after it.
    pub lease: Lease,
    /// The lock server's own count of the lease, when it was asked (an exec program's `extend`).
    pub server: Option<ServerLease>,
    /// When its request was sent, on the run clock, when known: a renewal sent after the lease
    /// had certainly ended is a grant of its own, and the checkers tell it so.
    pub sent: Option<u64>,
}

impl Renewal {
    pub fn of(lease: Lease) -> Renewal {
        Renewal {
            lease,
            server: None,
            sent: None,
        }
    }
}

/// A renewal sent once the lease had certainly ended (its process woke from a freeze, say) and
/// whose outcome is unknown cannot have extended it: a renewal only extends a lease that is
/// still the client's (a compare-and-extend, a keep-alive of a live lease, a live session). The
/// lease is lost, and its bounds stay as they were. A renewal the service says succeeded is
/// reported as it is: the service's word, even if it contradicts the bound.
pub fn too_late(current: &Lease, sent: u64, renewed: Renewed) -> Renewed {
    match (renewed, current.expires_by) {
        (Renewed::Unknown | Renewed::GaveUp, Some(ended)) if sent >= ended => Renewed::Lost,
        (renewed, _) => renewed,
    }
}

/// Where one renewal leaves the lease: the bounds to report (if they changed) and whether to go
/// on renewing. Once a renewal's outcome was unknown, no later renewal can bound the lease
/// again: the unanswered request may still be applied after them.
pub fn after_renewal(
    current: &mut Lease,
    unknown_seen: &mut bool,
    renewed: Renewed,
) -> (Option<Lease>, bool) {
    match renewed {
        Renewed::Extended(mut lease) => {
            if *unknown_seen {
                lease.expires_by = None;
            }
            lease.live_until = lease.live_until.max(current.live_until);
            *current = lease;
            (Some(lease), true)
        }
        Renewed::Unknown => {
            *unknown_seen = true;
            *current = current.unbounded();
            (Some(*current), true)
        }
        Renewed::GaveUp => {
            let (report, _) = after_renewal(current, unknown_seen, Renewed::Unknown);
            (report, false)
        }
        Renewed::Unchanged => (None, true),
        Renewed::Lost => (None, false),
    }
}

/// A thread that renews one grant's lease every `period` until stopped or the lease is lost.
pub struct Watchdog {
    stopped: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts renewing: first after `first`, then every `period`. `renew` makes one attempt
    /// (bounded by the client's own timeout); `on_renewal` hears of every change of the bounds.
    pub fn start(
        clock: RunClock,
        lease: Lease,
        first: Duration,
        period: Duration,
        mut on_renewal: OnRenewal,
        mut renew: impl FnMut() -> Renewed + Send + 'static,
    ) -> Watchdog {
        let stopped = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = Arc::clone(&stopped);
        let thread = thread::spawn(move || {
            let (mut current, mut unknown_seen) = (lease, false);
            let mut wait = first;
            loop {
                let (flag, condvar) = &*signal;
                let guard = flag.lock().unwrap_or_else(|e| e.into_inner());
                let (guard, _) = condvar
                    .wait_timeout_while(guard, wait, |stopped| !*stopped)
                    .unwrap_or_else(|e| e.into_inner());
                if *guard {
                    return;
                }
                drop(guard);
                let sent = clock.now();
                let renewed = too_late(&current, sent, renew());
                let (report, go_on) = after_renewal(&mut current, &mut unknown_seen, renewed);
                if let Some(lease) = report {
                    on_renewal(Renewal {
                        sent: Some(sent),
                        ..Renewal::of(lease)
                    });
                }
                if !go_on {
                    return;
                }
                wait = period;
            }
        });
        Watchdog {
            stopped,
            thread: Some(thread),
        }
    }

    /// Stops renewing. Returns once the thread is gone: a renewal in flight finishes first (within
    /// the client's timeout), and nothing is renewed or reported after this returns.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        let (flag, condvar) = &*self.stopped;
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        condvar.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_lease_set_between_two_moments_is_bounded_by_both() {
        let lease = Lease::set_between(
            100 * MS,
            130 * MS,
            Duration::from_secs(1),
            Duration::from_millis(12),
            Duration::from_millis(500),
        );
        assert_eq!(lease.live_until, 1_088 * MS);
        assert_eq!(lease.expires_by, Some(1_630 * MS));
    }

    #[test]
    fn an_unknown_renewal_unbounds_every_later_one() {
        let mut current = Lease {
            live_until: 10,
            expires_by: Some(20),
        };
        let mut unknown = false;
        let (report, go_on) = after_renewal(&mut current, &mut unknown, Renewed::Unknown);
        assert_eq!(
            report,
            Some(Lease {
                live_until: 10,
                expires_by: None
            })
        );
        assert!(go_on);
        let extended = Lease {
            live_until: 30,
            expires_by: Some(40),
        };
        let (report, _) = after_renewal(&mut current, &mut unknown, Renewed::Extended(extended));
        assert_eq!(
            report,
            Some(Lease {
                live_until: 30,
                expires_by: None
            })
        );
    }

    #[test]
    fn a_lost_lease_stops_the_renewals_and_reports_nothing() {
        let mut current = Lease {
            live_until: 10,
            expires_by: Some(20),
        };
        let mut unknown = false;
        assert_eq!(
            after_renewal(&mut current, &mut unknown, Renewed::Lost),
            (None, false)
        );
        assert_eq!(
            after_renewal(&mut current, &mut unknown, Renewed::Unchanged),
            (None, true)
        );
        assert_eq!(
            current,
            Lease {
                live_until: 10,
                expires_by: Some(20)
            }
        );
    }

    #[test]
    fn an_unknown_renewal_sent_after_the_lease_ended_extends_nothing() {
        let lease = Lease {
            live_until: 10,
            expires_by: Some(20),
        };
        assert_eq!(too_late(&lease, 25, Renewed::Unknown), Renewed::Lost);
        assert_eq!(too_late(&lease, 25, Renewed::GaveUp), Renewed::Lost);
        assert_eq!(too_late(&lease, 15, Renewed::Unknown), Renewed::Unknown);
        let unbounded = lease.unbounded();
        assert_eq!(too_late(&unbounded, 25, Renewed::Unknown), Renewed::Unknown);
        let extended = Renewed::Extended(lease);
        assert_eq!(too_late(&lease, 25, extended), extended);
    }

    #[test]
    fn the_watchdog_reports_its_renewals_and_none_after_stop() {
        let (sender, renewals) = mpsc::channel();
        let lease = Lease {
            live_until: 0,
            expires_by: Some(0),
        };
        let mut n = 0;
        let watchdog = Watchdog::start(
            RunClock::start(),
            lease,
            Duration::ZERO,
            Duration::from_millis(5),
            Box::new(move |r: Renewal| sender.send(r.lease).unwrap()),
            move || {
                n += 1;
                Renewed::Extended(Lease {
                    live_until: n,
                    expires_by: Some(n + 1),
                })
            },
        );
        let first = renewals.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(
            first,
            Lease {
                live_until: 1,
                expires_by: Some(2)
            }
        );
        renewals.recv_timeout(Duration::from_secs(10)).unwrap();
        watchdog.stop();
        let _pending: Vec<Lease> = renewals.try_iter().collect();
        // The sender lives in the thread's closure: stop returned, so the thread and the channel
        // are gone, and no renewal can follow.
        assert_eq!(
            renewals.recv_timeout(Duration::from_secs(1)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        );
    }
}
