//! The fault schedule: when each fault starts, how long it lasts and what it hits, drawn from
//! the run's seed before the run begins, written to `schedule.json` in the run's folder, and
//! replayable with `--schedule`. The same seed and nemeses give the same schedule.
//!
//! Each nemesis draws from its own random stream (derived from the seed and the nemesis's
//! name), so adding a nemesis to a run does not move another's faults. Lock-aware faults are
//! scheduled as windows in which they are armed; the client they hit is the one holding the
//! lock when they go off, which the history records.

pub mod check;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::bad_input::bad;
use crate::nemesis::window::{Shape, Window};
use crate::nemesis::{self, Nemesis};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub seed: u64,
    /// The lock the schedule was drawn for (`redis`, …); absent in schedules stored before it
    /// was recorded. A replay refuses a schedule drawn for another lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
    pub windows: Vec<Window>,
}

/// What a schedule is drawn from.
pub struct Plan<'a> {
    pub seed: u64,
    pub lock: &'a str,
    /// Each nemesis with how long its faults last.
    pub nemeses: &'a [(&'static dyn Nemesis, Duration)],
    pub shape: &'a Shape,
    /// When every fault must be over.
    pub heal_at: Duration,
    /// The mean quiet time between two faults of one nemesis.
    pub fault_interval: Duration,
}

/// The stream of one nemesis: FNV-1a of its name, stable across builds and catalogue order.
fn stream(seed: u64, nemesis: &str) -> u64 {
    seed ^ crate::stable_hash::fnv1a(nemesis)
}

impl Schedule {
    /// Draws the schedule of every nemesis of the plan.
    pub fn plan(plan: &Plan) -> Schedule {
        let mut windows = Vec::new();
        let heal_at = plan.heal_at.as_millis() as u64;
        let interval = plan.fault_interval.as_millis() as u64;
        for (nemesis, duration) in plan.nemeses {
            let duration = duration.as_millis() as u64;
            let mut rng = ChaCha8Rng::seed_from_u64(stream(plan.seed, nemesis.name()));
            let quiet =
                |rng: &mut ChaCha8Rng| rng.gen_range(interval / 2..=interval + interval / 2);
            let mut start = quiet(&mut rng);
            while start + duration <= heal_at {
                let mut window = Window {
                    nemesis: nemesis.name().to_string(),
                    start_ms: start,
                    duration_ms: duration,
                    targets: Vec::new(),
                    cuts: Vec::new(),
                    one_way: false,
                };
                nemesis.aim().draw(&mut window, plan.shape, &mut rng);
                windows.push(window);
                // A zero gap would never move on: every window advances the clock.
                start += (duration + quiet(&mut rng)).max(1);
            }
        }
        windows.sort_by(|a, b| (a.start_ms, &a.nemesis).cmp(&(b.start_ms, &b.nemesis)));
        Schedule {
            seed: plan.seed,
            lock: Some(plan.lock.to_string()),
            windows,
        }
    }

    pub fn load(path: &Path) -> Result<Schedule> {
        let text = crate::bad_input::read_input_file("--schedule", path)?;
        serde_json::from_str(&text).map_err(|e| {
            bad(format!(
                "--schedule {} is not a schedule: {e}",
                path.display()
            ))
        })
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)? + "\n";
        crate::files::safe_write::replace(path, text)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The nemeses the schedule uses, in a stable order; an unknown name is bad input.
    pub fn nemeses(&self) -> Result<Vec<&'static dyn Nemesis>> {
        let mut names: Vec<&str> = self.windows.iter().map(|w| w.nemesis.as_str()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|name| {
                nemesis::find(name).ok_or_else(|| {
                    bad(format!(
                        "the schedule names a nemesis lockpick does not know: {name}"
                    ))
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(names: &[&str], seed: u64) -> Schedule {
        let nemeses: Vec<(&'static dyn Nemesis, Duration)> = names
            .iter()
            .map(|n| (nemesis::find(n).unwrap(), Duration::from_secs(2)))
            .collect();
        Schedule::plan(&Plan {
            seed,
            lock: "redlock",
            nemeses: &nemeses,
            shape: &Shape::of(5, 3),
            heal_at: Duration::from_secs(29),
            fault_interval: Duration::from_secs(1),
        })
    }

    #[test]
    fn the_same_seed_draws_the_same_schedule() {
        let names = ["pause-node", "partition-ring", "kill-client"];
        assert_eq!(plan_of(&names, 7), plan_of(&names, 7));
        assert_ne!(plan_of(&names, 7), plan_of(&names, 8));
    }

    #[test]
    fn adding_a_nemesis_does_not_move_another_s_faults() {
        let alone = plan_of(&["pause-node"], 3);
        let both = plan_of(&["pause-node", "loss"], 3);
        let pauses: Vec<&Window> = both
            .windows
            .iter()
            .filter(|w| w.nemesis == "pause-node")
            .collect();
        assert_eq!(alone.windows.iter().collect::<Vec<_>>(), pauses);
    }

    #[test]
    fn every_window_fits_before_the_heal_and_aims_at_real_nodes() {
        let shape = Shape::of(5, 3);
        let all: Vec<&str> = nemesis::names();
        let schedule = plan_of(&all, 11);
        assert!(!schedule.windows.is_empty());
        for w in &schedule.windows {
            assert!(w.start_ms + w.duration_ms <= 29_000, "{w:?}");
            for node in w
                .targets
                .iter()
                .chain(w.cuts.iter().flat_map(|(a, b)| [a, b]))
            {
                let the_leader = node == crate::nemesis::window::LEADER;
                assert!(shape.has(node) || the_leader, "{w:?} aims at {node}");
            }
        }
    }

    #[test]
    fn a_ring_partition_leaves_each_server_a_majority() {
        let schedule = plan_of(&["partition-ring"], 5);
        let window = &schedule.windows[0];
        for server in &window.targets {
            let cut = window
                .cuts
                .iter()
                .filter(|(a, b)| a == server || b == server)
                .count();
            // 5 servers: each is cut from 2 and sees itself and 2 others, a majority of 3.
            assert_eq!(cut, 2, "{window:?}");
        }
    }

    #[test]
    fn a_window_longer_than_the_run_draws_nothing() {
        let nemeses = [(
            nemesis::find("pause-holder").unwrap(),
            Duration::from_secs(2),
        )];
        let schedule = Schedule::plan(&Plan {
            seed: 1,
            lock: "redis",
            nemeses: &nemeses,
            shape: &Shape::of(1, 2),
            heal_at: Duration::from_secs(2),
            fault_interval: Duration::from_secs(1),
        });
        assert!(schedule.windows.is_empty());
    }
}
