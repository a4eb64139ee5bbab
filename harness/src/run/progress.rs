//! Progress of a long run: on a terminal, an `indicatif` bar redrawn in place; without one (a CI
//! log), a plain status line every 10 s, so the log shows the run is alive.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the plain status line is written when there is no terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(10);

pub struct Progress {
    limit: Duration,
    bar: Option<ProgressBar>,
    last_plain: Instant,
}

/// What the progress line reports.
pub struct Status {
    /// ns since the run began.
    pub now: u64,
    pub operations: u64,
    pub faults: usize,
    pub overlaps: u64,
}

impl Status {
    fn words(&self) -> String {
        format!(
            "{} operations, {} fault(s) active, {} overlapping acquisitions so far",
            self.operations, self.faults, self.overlaps
        )
    }
}

impl Progress {
    pub fn new(limit: Duration) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(limit.as_secs().max(1)),
                ProgressDrawTarget::stderr_with_hz(1),
            );
            bar.set_style(
                ProgressStyle::with_template("  {pos} s / {len} s [{bar:30}] {msg}")
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            bar
        });
        Progress {
            limit,
            bar,
            last_plain: Instant::now(),
        }
    }

    pub fn show(&mut self, status: &Status) {
        let seconds = status.now / 1_000_000_000;
        match &self.bar {
            Some(bar) => {
                bar.set_position(seconds.min(self.limit.as_secs()));
                bar.set_message(status.words());
            }
            None if self.last_plain.elapsed() >= PLAIN_EVERY => {
                self.last_plain = Instant::now();
                crate::tell!(
                    "lockpick: {seconds} s / {} s, {}",
                    self.limit.as_secs(),
                    status.words()
                );
            }
            None => {}
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
