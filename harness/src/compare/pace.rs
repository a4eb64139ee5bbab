//! How many cells run at once while a comparison goes: the planned parallelism
//! ([`Parallelism`]), lowered by one when a cell's start-up measurably slowed down. A start-up
//! is the part of a cell that needs the CPU (the start-up gate already keeps start-ups from
//! crowding each other), so one that took far longer than its service's quickest in the same
//! comparison, and longer than its lock's usual start-up, says the machine is busier than the
//! plan assumed: the other cells' contention, or someone else's work. A given `--parallel N` is never changed.

use std::collections::BTreeMap;

use serde::Serialize;

use super::plan::parallelism::Parallelism;
use crate::run::startup_times::StartupTimes;

/// A start-up this many times its service's quickest so far is a slow one...
const SLOWER: f64 = 2.0;
/// ...if it also took this many seconds more (a 0.05 s Redis start doubling is noise).
const AT_LEAST_SECONDS: f64 = 1.0;

/// The parallelism as planned and as it went: `compare.json` keeps it.
#[derive(Clone, Debug, Serialize)]
pub struct Pace {
    #[serde(flatten)]
    pub planned: Parallelism,
    /// Cells at once when the comparison ended.
    pub at_end: usize,
    /// Each lowering, as the terminal told it.
    pub lowered: Vec<String>,
    /// Each service's quickest start-up so far, in seconds.
    #[serde(skip)]
    quickest: BTreeMap<String, f64>,
}

impl Pace {
    pub fn new(planned: &Parallelism) -> Pace {
        Pace {
            planned: planned.clone(),
            at_end: planned.at_once,
            lowered: Vec::new(),
            quickest: BTreeMap::new(),
        }
    }

    /// Takes in the start-up of a cell (`cell`, on `service`, whose lock's servers take about
    /// `usual` seconds to start) that ran; returns the lowered parallelism if it slowed down
    /// enough to lower it. A start-up within its usual time is not slow however quick the
    /// service's quickest was: an etcd cluster's election alone varies from 0.3 s to 2 s with
    /// its randomized timeouts, on an idle machine too.
    pub fn cell_started(
        &mut self,
        service: &str,
        cell: &str,
        usual: f64,
        startup: &StartupTimes,
    ) -> Option<usize> {
        let took = startup.service_seconds;
        let quickest = *self
            .quickest
            .entry(service.to_string())
            .and_modify(|q| *q = q.min(took))
            .or_insert(took);
        let slow = took > SLOWER * quickest && took - quickest > AT_LEAST_SECONDS && took > usual;
        if !slow || !self.planned.automatic || self.at_end <= 1 {
            return None;
        }
        self.at_end -= 1;
        let line = format!(
            "{cell}: {service} started in {took:.1} s, {:.1}× its quickest ({quickest:.1} s): \
             {} at a time from now",
            took / quickest.max(f64::EPSILON),
            self.at_end
        );
        crate::tell!("lockpick compare: {line}");
        self.lowered.push(line);
        Some(self.at_end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(service_seconds: f64) -> StartupTimes {
        StartupTimes {
            service_seconds,
            ..StartupTimes::default()
        }
    }

    fn planned(at_once: usize, automatic: bool) -> Parallelism {
        Parallelism {
            at_once,
            automatic,
            reason: String::new(),
        }
    }

    #[test]
    fn a_start_up_far_slower_than_its_services_quickest_lowers_it_by_one() {
        let mut pace = Pace::new(&planned(6, true));
        assert_eq!(
            pace.cell_started("zookeeper", "a", 3.0, &started(1.5)),
            None
        );
        assert_eq!(pace.cell_started("etcd", "b", 3.0, &started(0.5)), None);
        // Slower, but not twice its quickest, or not a second more.
        assert_eq!(
            pace.cell_started("zookeeper", "c", 3.0, &started(2.9)),
            None
        );
        assert_eq!(pace.cell_started("etcd", "d", 3.0, &started(1.4)), None);
        // Twice its quickest and more, but within its usual start-up (an election's luck).
        assert_eq!(pace.cell_started("etcd", "e", 3.0, &started(2.2)), None);
        assert_eq!(
            pace.cell_started("zookeeper", "f", 3.0, &started(3.2)),
            Some(5)
        );
        assert_eq!(pace.at_end, 5);
        assert!(pace.lowered[0].contains("f: zookeeper started in 3.2 s"));
    }

    #[test]
    fn a_given_parallelism_is_never_lowered() {
        let mut pace = Pace::new(&planned(8, false));
        pace.cell_started("zookeeper", "a", 3.0, &started(1.0));
        assert_eq!(
            pace.cell_started("zookeeper", "b", 3.0, &started(9.0)),
            None
        );
        assert_eq!(pace.at_end, 8);
    }
}
