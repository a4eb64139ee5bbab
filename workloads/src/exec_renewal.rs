//! The renewals a client program's library makes on its own, in the background (python-redis-lock's
//! `auto_renewal` thread, redis-semaphore's refresh timer), as the program reports them with
//! `renewed` lines (`workloads/PROTOCOL.md`).
//!
//! Unseen, such renewals leave a lease with no known end: any of them may have moved it. A
//! program whose hello says `"reports_renewals": true` promises a `renewed` line after every
//! renewal its library attempts, once its outcome is known. Each report moves the bounds of the
//! lease of the acquisition the client holds, by the same rules as lockpick's own watchdog
//! ([`after_renewal`]): an `ok` report with `expires_ms` bounds the lease anew, counted from the
//! moment lockpick read the line (the renewal was applied before its reply, the reply came before
//! the line, and the line before lockpick read it, so the bound is never too early); an
//! `unknown` one leaves the lease unbounded from then on (the request may still be applied after
//! any later renewal); a `fail` one means the lease is no longer the client's, and later reports
//! of that acquisition are not taken. Each is recorded as a `renew` line, behind its grant.
//!
//! Reports are read on the thread that reads the program's stdout, the moment they come, so a
//! renewal is recorded while its acquisition is held rather than at the next request.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::clock::RunClock;
use crate::exec_answer::Verdict;
use crate::lease::{after_renewal, too_late, Lease, OnRenewal, Renewal, Renewed};

/// One `renewed` line.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenewalReport {
    /// What the renewal did: `ok` (extended), `fail` (the lock was no longer ours), `unknown`.
    pub renewed: Verdict,
    /// After an `ok`: the lease has certainly ended this long after this line, unless renewed
    /// later. Omitted: no end is known.
    #[serde(default)]
    pub expires_ms: Option<u64>,
    /// The renewal's request was sent no earlier than this long after the program received
    /// request `since_id`, by its own monotonic clock: lockpick then knows, on its run clock, a
    /// moment before which it was not sent (that request's sending + this).
    #[serde(default)]
    pub sent_after_ms: Option<u64>,
    /// The request `sent_after_ms` counts from (one of the last few the program received).
    #[serde(default)]
    pub since_id: Option<u64>,
    /// After an `ok` with `sent_after_ms`: the lease is certainly held at least this long after
    /// the renewal was sent.
    #[serde(default)]
    pub valid_ms: Option<u64>,
    #[serde(default)]
    pub error: Option<String>,
}

/// Where a client's programs send their renewal reports: the acquisition it holds, if any.
/// Shared by the client and the thread that reads each program's stdout.
#[derive(Clone)]
pub struct Renewals {
    clock: RunClock,
    held: Arc<Mutex<Option<Held>>>,
    /// The last few requests sent to the program, by id, with when each was written (run
    /// clock): what a report's `since_id` names.
    requests: Arc<Mutex<VecDeque<(u64, u64)>>>,
}

/// The acquisition the reports are for.
struct Held {
    on_renewal: OnRenewal,
    /// Its lease as last recorded; `None` until the grant's answer came (reports read before it
    /// wait in `early`, with the moment each was read).
    lease: Option<Lease>,
    early: Vec<(u64, Option<u64>, RenewalReport)>,
    unknown_seen: bool,
    /// A report said the lock was no longer ours: later ones are not taken.
    lost: bool,
}

impl Renewals {
    pub fn new(clock: RunClock) -> Renewals {
        Renewals {
            clock,
            held: Arc::default(),
            requests: Arc::default(),
        }
    }

    /// Request `id` is about to be written to the program (so the program receives it later).
    pub fn request_sent(&self, id: u64) {
        let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        // A restarted program counts ids from 1 again: its predecessor's are no use.
        requests.retain(|(known, _)| *known < id);
        if requests.len() == 4 {
            requests.pop_front();
        }
        requests.push_back((id, self.clock.now()));
    }

    /// Before an acquire is sent: reports from now on are this acquisition's (its library may
    /// renew before the program answers), and go to `on_renewal` once it is granted.
    pub fn expect(&self, on_renewal: OnRenewal) {
        *self.lock() = Some(Held {
            on_renewal,
            lease: None,
            early: Vec::new(),
            unknown_seen: false,
            lost: false,
        });
    }

    /// The acquire was granted with `lease`: the reports that came before its answer are taken
    /// now, in order.
    pub fn granted(&self, lease: Lease) {
        let mut held = self.lock();
        if let Some(held) = held.as_mut() {
            held.lease = Some(lease);
            for (read_at, sent, report) in std::mem::take(&mut held.early) {
                held.take(read_at, sent, report);
            }
        }
    }

    /// The acquisition is over (released, refused, unknown, or its program gone): later reports
    /// belong to nothing and are dropped.
    pub fn stop(&self) {
        *self.lock() = None;
    }

    /// A report read from the program at `read_at`.
    pub fn heard(&self, read_at: u64, report: RenewalReport) {
        // Not before the latest request was written plus the program's count, and never after
        // the line was read.
        let since = report.since_id.and_then(|id| {
            let requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
            requests
                .iter()
                .find(|(known, _)| *known == id)
                .map(|(_, at)| *at)
        });
        let sent = since.zip(report.sent_after_ms).map(|(since, ms)| {
            since
                .saturating_add(ms.saturating_mul(1_000_000))
                .min(read_at)
        });
        let mut held = self.lock();
        let Some(held) = held.as_mut() else {
            return;
        };
        if held.lease.is_none() {
            held.early.push((read_at, sent, report));
        } else {
            held.take(read_at, sent, report);
        }
    }

    pub fn clock(&self) -> RunClock {
        self.clock
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Held {
    fn take(&mut self, read_at: u64, sent: Option<u64>, report: RenewalReport) {
        let Some(current) = self.lease.as_mut() else {
            return;
        };
        if self.lost {
            return;
        }
        let renewed = match report.renewed {
            // Without the moment it was sent, a renewal proves nothing about how long the lease
            // is certainly held: `live_until` stays. With it, `valid_ms` counts from then.
            Verdict::Ok => Renewed::Extended(Lease {
                live_until: sent
                    .zip(report.valid_ms)
                    .map_or(current.live_until, |(sent, ms)| {
                        sent.saturating_add(ms.saturating_mul(1_000_000))
                    }),
                expires_by: report
                    .expires_ms
                    .map(|ms| read_at.saturating_add(ms.saturating_mul(1_000_000))),
            }),
            Verdict::Unknown => Renewed::Unknown,
            Verdict::Fail => Renewed::Lost,
        };
        // An unknown renewal sent once the lease had certainly ended cannot have extended it.
        let renewed = match sent {
            Some(sent) => too_late(current, sent, renewed),
            None => renewed,
        };
        let (recorded, go_on) = after_renewal(current, &mut self.unknown_seen, renewed);
        self.lost = !go_on;
        if let Some(lease) = recorded {
            (self.on_renewal)(Renewal {
                sent,
                ..Renewal::of(lease)
            });
        }
    }
}

/// Whether the program's hello promised `renewed` lines: until it has, such a line is not a
/// protocol message. Set once its hello is read.
#[derive(Clone, Default)]
pub struct ReportsPromised(Arc<AtomicBool>);

impl ReportsPromised {
    pub fn promise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn given(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A line of the program's that is a renewal report, if it is one (an object with `renewed`),
/// parsed; a line that names `renewed` but is no proper report is an error in words.
pub fn renewal_report(line: &str) -> Option<Result<RenewalReport, String>> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    value.as_object()?.get("renewed")?;
    Some(serde_json::from_value(value).map_err(|e| e.to_string()))
}

#[cfg(test)]
mod tests;
