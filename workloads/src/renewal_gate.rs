//! Keeps a lease's renewals behind its grant in the history.
//!
//! A lock client starts renewing (its watchdog thread) before `try_acquire` returns, so a
//! renewal can happen before the worker has recorded the acquire's `ok`: etcd's first
//! keep-alive is due at once when the lock call waited a third of the TTL. Recorded as it
//! happened, that `renew` would come before its grant, and the checker would rightly call the
//! history malformed. The gate makes the order hold by construction, whatever the client does:
//! renewals reported before the grant is recorded are held, and recorded right after it.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use lockpick_checkers::{OpType, F};
use serde_json::json;

use crate::lease::{OnRenewal, Renewal};
use crate::recorder::Recorder;

/// The renewals of one acquisition, held until its grant is recorded.
pub struct RenewalGate<W: Write> {
    state: Arc<Mutex<Held>>,
    recorder: Recorder<W>,
    acquisition: String,
}

/// What the gate knows: whether the grant is recorded, and the renewals that waited for it.
#[derive(Default)]
struct Held {
    granted: bool,
    waiting: Vec<Renewal>,
}

impl<W: Write + Send + 'static> RenewalGate<W> {
    pub fn new(recorder: &Recorder<W>, acquisition: &str) -> RenewalGate<W> {
        RenewalGate {
            state: Arc::default(),
            recorder: recorder.clone(),
            acquisition: acquisition.to_string(),
        }
    }

    /// What the lock client calls with each renewal: recorded as a standalone `renew` line once
    /// the grant is, held until then.
    pub fn on_renewal(&self) -> OnRenewal {
        let state = Arc::clone(&self.state);
        let (recorder, acquisition) = (self.recorder.clone(), self.acquisition.clone());
        Box::new(move |renewal: Renewal| {
            let mut held = state.lock().unwrap_or_else(|e| e.into_inner());
            if held.granted {
                // A controller that stopped listening is noticed by the worker's next record.
                let _ = record_renewal(&recorder, &acquisition, renewal);
            } else {
                held.waiting.push(renewal);
            }
        })
    }

    /// Records the grant with `record_grant`, then every renewal that waited for it, and lets
    /// later ones through. Under the gate's lock: no renewal can slip in before the grant.
    pub fn open(&self, record_grant: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let mut held = self.state.lock().unwrap_or_else(|e| e.into_inner());
        record_grant()?;
        held.granted = true;
        for renewal in std::mem::take(&mut held.waiting) {
            record_renewal(&self.recorder, &self.acquisition, renewal)?;
        }
        Ok(())
    }
}

fn record_renewal<W: Write>(
    recorder: &Recorder<W>,
    acquisition: &str,
    renewal: Renewal,
) -> io::Result<()> {
    let mut value = json!({ "acquisition": acquisition, "lease": renewal.lease });
    if let Some(server) = renewal.server {
        value["server_lease"] = json!(server);
    }
    if let Some(sent) = renewal.sent {
        value["sent"] = json!(sent);
    }
    recorder.record(OpType::Ok, F::Renew, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::RunClock;
    use lockpick_checkers::{Op, Process};
    use std::thread;

    /// A writer that keeps what it was given, shared with the test.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<u8>>>);

    impl Write for Kept {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn lines(kept: &Kept) -> Vec<Op> {
        let text = String::from_utf8(kept.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    use crate::lease::Lease;

    const LEASE: Lease = Lease {
        live_until: 5,
        expires_by: Some(9),
    };

    #[test]
    fn a_renewal_before_the_grant_is_recorded_after_it() {
        let kept = Kept::default();
        let recorder = Recorder::new(kept.clone(), RunClock::start(), Process::Client(1));
        let gate = RenewalGate::new(&recorder, "1.1");
        let mut renew = gate.on_renewal();
        // The watchdog's thread renews twice before the worker has recorded the grant.
        let mut renew = thread::spawn(move || {
            renew(Renewal::of(LEASE));
            renew(Renewal::of(LEASE));
            renew
        })
        .join()
        .unwrap();
        gate.open(|| recorder.record(OpType::Ok, F::Acquire, json!({"acquisition": "1.1"})))
            .unwrap();
        renew(Renewal::of(LEASE));
        let fs: Vec<F> = lines(&kept).iter().map(|op| op.f).collect();
        assert_eq!(fs, [F::Acquire, F::Renew, F::Renew, F::Renew]);
    }

    #[test]
    fn renewals_racing_the_grant_never_come_before_it() {
        for _ in 0..200 {
            let kept = Kept::default();
            let recorder = Recorder::new(kept.clone(), RunClock::start(), Process::Client(1));
            let gate = RenewalGate::new(&recorder, "1.1");
            let mut renew = gate.on_renewal();
            let racer = thread::spawn(move || (0..5).for_each(|_| renew(Renewal::of(LEASE))));
            gate.open(|| recorder.record(OpType::Ok, F::Acquire, json!({"acquisition": "1.1"})))
                .unwrap();
            racer.join().unwrap();
            let ops = lines(&kept);
            assert_eq!(ops.len(), 6);
            assert_eq!(ops[0].f, F::Acquire, "{ops:?}");
            assert!(ops.windows(2).all(|w| w[0].time <= w[1].time));
        }
    }
}
