//! What one run of a sweep showed, read off its checked history: its safety (overlapping
//! holders, stale writes the resource accepted) and its availability (how long the lock stayed
//! out of reach after a fault hit its holder, and how long acquires took).

use lockpick_checkers::fault::Target;
use lockpick_checkers::model::{Hold, Model};
use lockpick_checkers::Validity;
use serde::Serialize;

use crate::report::summary_md::Counts;

/// One finished run of the grid.
#[derive(Clone, Debug, Serialize)]
pub struct RunMeasure {
    pub point: usize,
    pub series: usize,
    pub seed: u64,
    pub verdict: Validity,
    pub overlaps: usize,
    pub stale_writes: usize,
    /// Accesses the resource rejected: the fence at work (0 without fencing).
    pub rejected: usize,
    /// Seconds from each fault that hit the client holding the lock to the next grant to
    /// another client.
    pub next_grant_s: Vec<f64>,
    /// Faults on the holder after which no other client was granted the lock before the run
    /// ended: not measured, only counted.
    pub never_granted: usize,
    /// Every successful acquire's latency, in microseconds.
    #[serde(skip)]
    pub acquire_us: Vec<u64>,
    /// The run's folder: an ordinary stored run (report, shrink and check work on it).
    pub dir: std::path::PathBuf,
}

impl RunMeasure {
    pub fn of(
        finished: &crate::run::Finished,
        point: usize,
        series: usize,
        seed: u64,
    ) -> RunMeasure {
        let counts = Counts::of(&finished.results);
        let (next_grant_s, never_granted) = next_grants(&finished.model);
        RunMeasure {
            point,
            series,
            seed,
            verdict: finished.results.valid,
            overlaps: counts.overlaps,
            stale_writes: counts.stale_writes,
            rejected: (finished.results.stale_accesses.as_ref()).map_or(0, |s| s.rejected),
            next_grant_s,
            never_granted,
            acquire_us: (finished.history.acquire_latencies.iter())
                .map(|(_, ns)| ns / 1_000)
                .collect(),
            dir: finished.dir.clone(),
        }
    }
}

/// For each fault aimed at one client alone while that client held the lock (a kill, a pause,
/// a partition of the holder), the time from the fault's start to the next grant to any other
/// client, in seconds; and how many such faults saw no later grant at all.
pub fn next_grants(model: &Model) -> (Vec<f64>, usize) {
    let mut gaps = Vec::new();
    let mut never = 0;
    for fault in &model.faults {
        let [Target::Client(victim)] = fault.targets.as_slice() else {
            continue;
        };
        if fault.effective == Some(false) || !held_at(&model.holds, *victim, fault.start) {
            continue;
        }
        let next = (model.holds.iter())
            .filter(|h| h.process != *victim && h.start > fault.start)
            .map(|h| h.start)
            .min();
        match next {
            Some(start) => gaps.push((start - fault.start) as f64 / 1e9),
            None => never += 1,
        }
    }
    (gaps, never)
}

/// Whether `process` believed it held the lock at `at`: its latest grant before then had not
/// been given back by then.
fn held_at(holds: &[Hold], process: u64, at: u64) -> bool {
    let latest = (holds.iter())
        .filter(|h| h.process == process && h.start <= at)
        .max_by_key(|h| h.start);
    latest.is_some_and(|h| !h.released || h.end > at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockpick_checkers::fault::FaultKind;
    use lockpick_checkers::model::FaultWindow;

    fn hold(process: u64, start: u64, end: u64, released: bool) -> Hold {
        let mut hold = Hold::default();
        (hold.process, hold.start, hold.end, hold.released) = (process, start, end, released);
        hold
    }

    fn model_of(holds: Vec<Hold>, faults: Vec<FaultWindow>) -> Model {
        let mut model = Model::default();
        (model.holds, model.faults) = (holds, faults);
        model
    }

    fn kill(process: u64, start: u64) -> FaultWindow {
        FaultWindow {
            id: start,
            fault: FaultKind::Kill,
            targets: vec![Target::Client(process)],
            start,
            stop: Some(start + 10),
            nemesis: None,
            effective: Some(true),
            leader: None,
            leader_after: None,
            leadership_moved: None,
        }
    }

    #[test]
    fn a_killed_holder_counts_from_its_kill_to_the_next_grant_and_a_bystander_not_at_all() {
        let model = model_of(
            vec![
                hold(1, 0, 100, true),
                hold(2, 200, 250, false), // never released: killed at 300
                hold(3, 2_300_000_000, 2_400_000_000, true),
            ],
            vec![kill(2, 300), kill(1, 400), kill(3, 2_500_000_000)],
        );
        let (gaps, never) = next_grants(&model);
        assert_eq!(gaps, [(2_300_000_000u64 - 300) as f64 / 1e9]);
        assert_eq!(never, 0, "client 1 had released; client 3 too");
        let model = model_of(vec![hold(1, 0, 100, false)], vec![kill(1, 50)]);
        assert_eq!(next_grants(&model), (vec![], 1));
    }
}
