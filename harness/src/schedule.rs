//! The fault schedule: when each fault starts, how long it lasts and what it hits, drawn from
//! the run's seed before the run begins, written to `schedule.json` in the run's folder, and
//! replayable with `--schedule`. The same seed and nemeses give the same schedule.
//!
//! Each nemesis draws from its own random stream (derived from the seed and the nemesis), so
//! adding a nemesis to a run does not move another's faults. Lock-aware faults are scheduled as
//! windows in which they are armed; the client they hit is the one holding the lock when they
//! go off, which the history records.

use std::path::Path;

use anyhow::{Context, Result};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::cli::NemesisKind;
use crate::config::{bad, RunConfig};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub nemesis: NemesisKind,
    /// Milliseconds after the run began.
    pub start_ms: u64,
    pub duration_ms: u64,
    /// Nodes (`n1`, `c0`) the fault acts on; empty for lock-aware faults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// For partitions: pairs of nodes that cannot talk. With `one_way`, only the second stops
    /// hearing the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_way: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub seed: u64,
    /// The lock the schedule was drawn for (`redis`, …); absent in schedules stored before it
    /// was recorded. A replay refuses a schedule drawn for another lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
    pub windows: Vec<Window>,
}

/// The nodes a schedule can aim at.
pub struct Shape {
    /// Lock-service servers (`n1`, …).
    pub servers: Vec<String>,
    /// Client nodes (`c0`, …).
    pub clients: Vec<String>,
    /// Every other node (the resource).
    pub others: Vec<String>,
}

impl Shape {
    fn everyone(&self) -> impl Iterator<Item = &String> {
        self.servers.iter().chain(&self.clients).chain(&self.others)
    }
}

impl Schedule {
    /// Draws the schedule of every nemesis of `config`.
    pub fn plan(config: &RunConfig, shape: &Shape) -> Schedule {
        let mut windows = Vec::new();
        let heal_at = config.heal_at().as_millis() as u64;
        let duration = config.fault_duration.as_millis() as u64;
        let interval = config.fault_interval.as_millis() as u64;
        for &nemesis in &config.nemeses {
            let stream = config.seed ^ (nemesis as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut rng = ChaCha8Rng::seed_from_u64(stream);
            let quiet =
                |rng: &mut ChaCha8Rng| rng.gen_range(interval / 2..=interval + interval / 2);
            let mut start = quiet(&mut rng);
            while start + duration <= heal_at {
                let mut window = Window {
                    nemesis,
                    start_ms: start,
                    duration_ms: duration,
                    targets: Vec::new(),
                    cuts: Vec::new(),
                    one_way: false,
                };
                aim(&mut window, shape, &mut rng);
                windows.push(window);
                start += duration + quiet(&mut rng);
            }
        }
        windows.sort_by_key(|w| (w.start_ms, w.nemesis));
        Schedule {
            seed: config.seed,
            lock: Some(config.lock.name().to_string()),
            windows,
        }
    }

    pub fn load(path: &Path) -> Result<Schedule> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| bad(format!("cannot read --schedule {}: {e}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| {
            bad(format!(
                "--schedule {} is not a schedule: {e}",
                path.display()
            ))
        })
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)? + "\n";
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    }

    /// The nemeses the schedule uses, in a stable order.
    pub fn nemeses(&self) -> Vec<NemesisKind> {
        let mut kinds: Vec<NemesisKind> = self.windows.iter().map(|w| w.nemesis).collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }
}

/// Chooses what a time-driven fault hits.
fn aim(window: &mut Window, shape: &Shape, rng: &mut ChaCha8Rng) {
    let server = |rng: &mut ChaCha8Rng| shape.servers.choose(rng).cloned().unwrap_or_default();
    let mut shuffled = shape.servers.clone();
    shuffled.shuffle(rng);
    let across = |a: &[String], b: &[String]| -> Vec<(String, String)> {
        a.iter()
            .flat_map(|x| b.iter().map(move |y| (x.clone(), y.clone())))
            .collect()
    };
    match window.nemesis {
        NemesisKind::PauseNode
        | NemesisKind::ClockForward
        | NemesisKind::ClockBackward
        | NemesisKind::ClockStrobe
        | NemesisKind::KillNode
        | NemesisKind::Loss => window.targets = vec![server(rng)],
        NemesisKind::SkewClients | NemesisKind::KillClient | NemesisKind::DelayClient => {
            window.targets = vec![shape.clients.choose(rng).cloned().unwrap_or_default()]
        }
        NemesisKind::PartitionNode => {
            let isolated = server(rng);
            let rest: Vec<String> = shape
                .everyone()
                .filter(|n| **n != isolated)
                .cloned()
                .collect();
            window.targets = vec![isolated.clone()];
            window.cuts = across(&[isolated], &rest);
        }
        NemesisKind::PartitionHalves => {
            let (minority, majority) = shuffled.split_at(shuffled.len() / 2);
            window.targets = minority.to_vec();
            window.cuts = across(minority, majority);
        }
        NemesisKind::PartitionBridge => {
            let k = shuffled.len().saturating_sub(1) / 2;
            let (a, rest) = shuffled.split_at(k);
            let (bridge, b) = rest.split_at(1.min(rest.len()));
            window.targets = bridge.to_vec();
            window.cuts = across(a, b);
        }
        NemesisKind::PartitionRing => {
            // Each server keeps its nearest neighbours on a shuffled ring: a majority, but a
            // different one for each.
            let n = shuffled.len();
            let reach = (n / 2).div_ceil(2);
            for i in 0..n {
                for j in i + 1..n {
                    let distance = (j - i).min(n - (j - i));
                    if distance > reach {
                        window.cuts.push((shuffled[i].clone(), shuffled[j].clone()));
                    }
                }
            }
            window.targets = shuffled;
        }
        NemesisKind::PartitionClient => {
            let client = shape.clients.choose(rng).cloned().unwrap_or_default();
            let some = rng.gen_range(1..=shuffled.len().max(1));
            window.targets = vec![client.clone()];
            window.cuts = across(&[client], &shuffled[..some.min(shuffled.len())]);
        }
        NemesisKind::PartitionOneWay => {
            let deaf = server(rng);
            let rest: Vec<String> = shape.everyone().filter(|n| **n != deaf).cloned().collect();
            window.targets = vec![deaf.clone()];
            window.cuts = across(&rest, &[deaf]);
            window.one_way = true;
        }
        NemesisKind::None
        | NemesisKind::PauseHolder
        | NemesisKind::PartitionHolder
        | NemesisKind::ClockHolder
        | NemesisKind::DelayHolderWrite => {}
    }
}
