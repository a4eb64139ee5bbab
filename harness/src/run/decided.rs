//! `--until decided`: a run whose verdict is already certain ends early. A violation the
//! history proves stays proven however the history goes on (a hold only grows as its events
//! arrive, an accepted stale write stays accepted, a grant order that is certain stays certain),
//! so once the checkers find one in the history written so far, the verdict is invalid whatever
//! follows; the run then heals, stops its clients and takes its final read as at the time limit,
//! and the whole history is checked as always.
//!
//! The history so far is checked again from its file (flushed every few milliseconds) at most
//! every quarter second, and never more often than ten times the last check's cost, so the
//! checks take at most about a tenth of the controller's time however long the history grows.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use lockpick_checkers::Validity;

const EVERY: Duration = Duration::from_millis(250);

pub struct Decider {
    history: PathBuf,
    last: Option<Instant>,
    cost: Duration,
}

impl Decider {
    pub fn new(history: PathBuf) -> Decider {
        Decider {
            history,
            last: None,
            cost: Duration::ZERO,
        }
    }

    /// Whether the history written so far proves a violation (checked when it is time to).
    pub fn decided(&mut self) -> bool {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now - last < EVERY.max(self.cost * 10))
        {
            return false;
        }
        self.last = Some(now);
        let Ok(file) = std::fs::File::open(&self.history) else {
            return false;
        };
        let results = lockpick_checkers::check_reader(std::io::BufReader::new(file));
        self.cost = now.elapsed();
        results.valid == Validity::Invalid
    }
}
