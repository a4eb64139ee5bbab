//! The search, apart from the servers: which smaller schedules to try, in which order, and
//! which to keep. Whether a candidate fails is the oracle's word (`trial` replays it on real
//! servers), so the search itself is pure and its unit tests use a made-up oracle.
//!
//! Order, as in delta debugging: first cut away the faults that came after the violation, then
//! ddmin over the remaining fault windows (fewer windows), then shorter windows, fewer clients,
//! a shorter time limit and a later start. Each step keeps a candidate only when the oracle says it fails, so
//! the best schedule so far is always one that was seen to fail.

use crate::nemesis::window::Window;

/// One schedule to replay, with the run knobs the search may shrink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub windows: Vec<Window>,
    pub clients: u32,
    pub time_limit_ms: u64,
}

/// The oracle's answer about a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// It showed the violation often enough.
    Fails,
    /// It did not.
    Passes,
    /// The search must end: budget spent, Ctrl-C, or the harness failed.
    Stop,
}

pub trait Oracle {
    /// Replays `candidate`; `step` says what it tries, for the progress lines.
    fn test(&mut self, step: &str, candidate: &Candidate) -> Answer;
}

/// What bounds the candidates.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The run's healed time at the end: every fault must end before `time limit - quiet`.
    pub quiet_ms: u64,
    /// When the run's first violation of the kind sought had happened (ms since the run began).
    pub violation_ms: Option<u64>,
}

/// Time after the last fault (and the violation) that a shortened run keeps, so the frozen or
/// cut-off client has time to act on its stale belief once the fault is over.
const AFTERMATH_MS: u64 = 1000;
/// Time limits are rounded up to this, so that they read as a person would write them.
const TIME_STEP_MS: u64 = 100;
/// The fewest clients that can overlap or overtake each other.
const MIN_CLIENTS: u32 = 2;
/// Probes per bisection: each narrows the interval by half.
const BISECTION_PROBES: u32 = 3;

/// Shrinks `start` (a candidate already seen to fail) as far as the oracle allows.
pub fn shrink(start: Candidate, limits: &Limits, oracle: &mut dyn Oracle) -> Candidate {
    let mut search = Search {
        best: start,
        stopped: false,
        oracle,
        limits,
    };
    search.cut_after_violation();
    search.fewer_windows();
    search.shorter_windows();
    search.fewer_clients();
    search.shorter_time_limit();
    search.later_start();
    search.best
}

struct Search<'a> {
    best: Candidate,
    stopped: bool,
    oracle: &'a mut dyn Oracle,
    limits: &'a Limits,
}

impl Search<'_> {
    /// Tries a candidate and keeps it if it fails.
    fn attempt(&mut self, step: &str, candidate: Candidate) -> bool {
        if self.stopped || candidate == self.best {
            return false;
        }
        match self.oracle.test(step, &candidate) {
            Answer::Fails => {
                self.best = candidate;
                true
            }
            Answer::Passes => false,
            Answer::Stop => {
                self.stopped = true;
                false
            }
        }
    }

    /// The shortest time limit that still holds every window of `windows`, its aftermath and
    /// the quiet time.
    fn fitting_time_limit(&self, windows: &[Window], after_ms: u64) -> u64 {
        let faults_end = windows
            .iter()
            .map(|w| w.start_ms + w.duration_ms)
            .max()
            .unwrap_or(0)
            .max(after_ms);
        round_up(faults_end + AFTERMATH_MS + self.limits.quiet_ms)
    }

    /// Faults that began after the violation cannot have caused it: drop them and end the run
    /// soon after the violation.
    fn cut_after_violation(&mut self) {
        let Some(violation) = self.limits.violation_ms else {
            return;
        };
        let mut windows: Vec<Window> = (self.best.windows.iter())
            .filter(|w| w.start_ms <= violation)
            .cloned()
            .collect();
        if windows.is_empty() {
            windows = self.best.windows.iter().take(1).cloned().collect();
        }
        let time_limit_ms =
            (self.fitting_time_limit(&windows, violation)).min(self.best.time_limit_ms);
        let candidate = Candidate {
            windows,
            time_limit_ms,
            ..self.best.clone()
        };
        self.attempt("cut what came after the violation", candidate);
    }

    /// ddmin (Zeller and Hildebrandt) over the fault windows: try each chunk alone, then each
    /// complement, and split finer when neither fails. Never tries no window at all.
    fn fewer_windows(&mut self) {
        let mut parts = 2;
        while self.best.windows.len() >= 2 && !self.stopped {
            let windows = self.best.windows.clone();
            let chunks = split(&windows, parts);
            let total = windows.len();
            let mut reduced = false;
            for (i, chunk) in chunks.iter().enumerate() {
                let step = format!(
                    "{} of {total} windows (chunk {} of {parts})",
                    chunk.len(),
                    i + 1
                );
                if self.attempt(&step, self.with_windows(chunk.clone())) {
                    parts = 2;
                    reduced = true;
                    break;
                }
            }
            if !reduced && parts > 2 {
                for i in 0..chunks.len() {
                    let rest: Vec<Window> = (chunks.iter().enumerate())
                        .filter(|(j, _)| *j != i)
                        .flat_map(|(_, c)| c.iter().cloned())
                        .collect();
                    let step = format!(
                        "{} of {total} windows (without chunk {})",
                        rest.len(),
                        i + 1
                    );
                    if self.attempt(&step, self.with_windows(rest)) {
                        parts = (parts - 1).max(2);
                        reduced = true;
                        break;
                    }
                }
            }
            if !reduced {
                if parts >= total {
                    return;
                }
                parts = (parts * 2).min(total);
            }
        }
    }

    fn with_windows(&self, windows: Vec<Window>) -> Candidate {
        Candidate {
            windows,
            ..self.best.clone()
        }
    }

    /// Each window as short as still fails, by bisection between nothing and its length.
    fn shorter_windows(&mut self) {
        for i in 0..self.best.windows.len() {
            let mut failing = self.best.windows[i].duration_ms;
            let mut passing = 0;
            for _ in 0..BISECTION_PROBES {
                let probe = (passing + failing) / 2;
                if probe == 0 || probe == passing || self.stopped {
                    break;
                }
                let mut candidate = self.best.clone();
                candidate.windows[i].duration_ms = probe;
                let step = format!("window {} lasting {probe} ms", i + 1);
                if self.attempt(&step, candidate) {
                    failing = probe;
                } else {
                    passing = probe;
                }
            }
        }
    }

    /// As few clients as still fail (never fewer than the windows aim at, nor than two).
    fn fewer_clients(&mut self) {
        let aimed = (self.best.windows.iter())
            .flat_map(|w| {
                w.targets
                    .iter()
                    .chain(w.cuts.iter().flat_map(|(a, b)| [a, b]))
            })
            .filter_map(|name| name.strip_prefix('c')?.parse::<u32>().ok())
            .map(|c| c + 1)
            .max()
            .unwrap_or(0);
        let fewest = aimed.max(MIN_CLIENTS);
        let set = |c: &mut Candidate, n: u64| c.clients = n as u32;
        self.bisect_down(fewest as u64, |c| c.clients as u64, set, "clients");
    }

    /// As short a time limit as still fails, no shorter than the faults, their aftermath and
    /// the quiet time need.
    fn shorter_time_limit(&mut self) {
        let fewest = self.fitting_time_limit(&self.best.windows, 0);
        self.bisect_down(
            fewest,
            |c| c.time_limit_ms,
            |c, n| c.time_limit_ms = round_up(n),
            "ms time limit",
        );
    }

    /// Every fault later, by as much of the room the time limit leaves after the faults, their
    /// aftermath and the quiet time as still fails (the latest first, then bisection; the faults
    /// keep their spacing). A fault that still breaks the lock when it comes later shows the
    /// violation is no artefact of the run's start (servers just up, the first acquisitions).
    /// It comes last and uses only that room: it never makes the run longer, nor keeps the
    /// time limit from getting shorter.
    fn later_start(&mut self) {
        let faults_end = (self.best.windows.iter())
            .map(|w| w.start_ms + w.duration_ms)
            .max()
            .unwrap_or(0);
        let room = (self.best.time_limit_ms)
            .saturating_sub(faults_end + AFTERMATH_MS + self.limits.quiet_ms)
            / TIME_STEP_MS
            * TIME_STEP_MS;
        if room == 0 || self.best.windows.is_empty() {
            return;
        }
        let base = self.best.clone();
        let later = |by: u64| {
            let mut candidate = base.clone();
            for w in &mut candidate.windows {
                w.start_ms += by;
            }
            candidate
        };
        let step = |by: u64| format!("faults {by} ms later");
        if self.attempt(&step(room), later(room)) {
            return;
        }
        let (mut failing, mut passing) = (0, room);
        for _ in 0..BISECTION_PROBES {
            let probe = (failing + passing) / 2 / TIME_STEP_MS * TIME_STEP_MS;
            if probe == failing || self.stopped {
                return;
            }
            if self.attempt(&step(probe), later(probe)) {
                failing = probe;
            } else {
                passing = probe;
            }
        }
    }

    /// Tries the floor first (often the answer), then bisects between it and the current value.
    fn bisect_down(
        &mut self,
        floor: u64,
        get: fn(&Candidate) -> u64,
        set: fn(&mut Candidate, u64),
        unit: &str,
    ) {
        let mut failing = get(&self.best);
        if floor >= failing {
            return;
        }
        let mut candidate = self.best.clone();
        set(&mut candidate, floor);
        if self.attempt(&format!("{} {unit}", get(&candidate)), candidate) {
            return;
        }
        let mut passing = floor;
        for _ in 0..BISECTION_PROBES {
            let probe = passing + (failing - passing) / 2;
            if probe == passing || self.stopped {
                return;
            }
            let mut candidate = self.best.clone();
            set(&mut candidate, probe);
            let shown = get(&candidate);
            if shown >= failing {
                return;
            }
            if self.attempt(&format!("{shown} {unit}"), candidate) {
                failing = shown;
            } else {
                passing = probe;
            }
        }
    }
}

fn round_up(ms: u64) -> u64 {
    ms.div_ceil(TIME_STEP_MS) * TIME_STEP_MS
}

/// `items` in `parts` chunks of nearly equal length, in order.
fn split(items: &[Window], parts: usize) -> Vec<Vec<Window>> {
    let parts = parts.clamp(1, items.len().max(1));
    let mut chunks = Vec::with_capacity(parts);
    let mut start = 0;
    for i in 0..parts {
        let end = start + (items.len() - start) / (parts - i);
        chunks.push(items[start..end].to_vec());
        start = end;
    }
    chunks
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
