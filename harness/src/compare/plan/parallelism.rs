//! How many cells of a comparison run at once. Given (`--parallel N`, or `parallel =` in the
//! matrix file) it is used as it is; otherwise it is decided from what the planned cells use
//! (their services' catalogue entries, [`CellCost`]) and what the machine has, not from the core
//! count alone: a cell's contention phase mostly waits on leases and timers, so several fit on
//! one core; its start-up is CPU-bound, and the start-up gate (`run::startup_gate`) staggers
//! those instead of the parallelism; memory bounds it too. While the cells run, a cell whose
//! start-up took much longer than its service's quickest in the comparison lowers it by one
//! (`compare::run_cells`): each cell's own timings tell when the machine is saturated.

use serde::Serialize;

use crate::locks::Lock;
use crate::service::entry::CellCost;

/// Most cells at once: each runs its own servers, clients and namespaces.
pub const MAX_PARALLEL: usize = 16;

/// The share of the cores the cells' contention phases may fill together. Over 1: a cell's
/// contention figure is its average over a full time limit, and the cells of a gate do not all
/// contend at once for all of it (cells held to "invalid" stop at their first proven violation,
/// light cells contend only once the heavy start-ups are through); a quarter over the cores
/// slows the clients' request loops for those seconds, never a lease's timing. Measured on the
/// example gate: 10 at once (2.5 cores of contention on 2) gave the verdicts of one at a time in
/// 10 rounds of 10 (docs/performance.md).
const CONTENTION_SHARE: f64 = 1.25;

/// The share of the available memory the cells together may take.
const MEMORY_SHARE: f64 = 0.5;

/// How many cells run at once, and why: the first line of a comparison says it, and
/// `compare.json` keeps it.
#[derive(Clone, Debug, Serialize)]
pub struct Parallelism {
    /// Cells at once, as the comparison began.
    pub at_once: usize,
    /// Whether it was decided here (else given by `--parallel` or the matrix file).
    pub automatic: bool,
    /// One line: what it was decided from.
    pub reason: String,
}

/// What the machine has, as a decision reads it.
#[derive(Clone, Copy, Debug)]
pub struct Machine {
    pub cores: usize,
    /// Memory available to new processes, in MB (none when it cannot be read).
    pub available_mb: Option<u64>,
}

impl Machine {
    /// This machine, now.
    pub fn now() -> Machine {
        Machine {
            cores: crate::run::startup_gate::cores(),
            available_mb: available_mb(),
        }
    }
}

/// `MemAvailable` of /proc/meminfo, in MB.
fn available_mb() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

/// What a cell of `lock` costs: its service's start-up and memory, its own clients'
/// contention.
pub fn cell_cost(lock: &dyn Lock) -> CellCost {
    CellCost {
        contention_cores: lock.contention_cores(),
        ..lock.service_entry().cost
    }
}

/// The parallelism given by a flag or the file (`given`, with where it came from), else the one
/// that fits `jobs` runs of the cells whose costs are `costs` (one per runnable cell) on
/// `machine`.
pub fn decide(
    given: Option<(usize, &str)>,
    costs: &[CellCost],
    jobs: usize,
    machine: Machine,
) -> Parallelism {
    if let Some((n, from)) = given {
        return Parallelism {
            at_once: n,
            automatic: false,
            reason: format!("{from} {n}"),
        };
    }
    let count = costs.len().max(1) as f64;
    let contention = costs.iter().map(|c| c.contention_cores).sum::<f64>() / count;
    let by_cpu = if contention > 0.0 {
        ((machine.cores as f64 * CONTENTION_SHARE) / contention).floor() as usize
    } else {
        MAX_PARALLEL
    };
    let memory = costs.iter().map(|c| c.memory_mb).max().unwrap_or(0);
    let by_memory = match machine.available_mb {
        Some(mb) if memory > 0 => ((mb as f64 * MEMORY_SHARE) / memory as f64).floor() as usize,
        _ => MAX_PARALLEL,
    };
    let at_once = by_cpu.min(by_memory).min(jobs).clamp(1, MAX_PARALLEL);
    let bound = if at_once == jobs.max(1) && jobs < by_cpu.min(by_memory) {
        format!("every one of the {jobs} runs")
    } else if at_once == MAX_PARALLEL {
        format!("at most {MAX_PARALLEL}")
    } else if by_memory < by_cpu {
        format!(
            "memory: half of {} MB available over {memory} MB per cell",
            machine.available_mb.unwrap_or(0)
        )
    } else {
        format!(
            "{} core(s) × {CONTENTION_SHARE} over {contention:.2} core(s) each cell keeps busy \
             while it contends",
            machine.cores
        )
    };
    let heavy = costs.iter().filter(|c| c.startup_cores >= 1.0).count();
    let staggered = if heavy > 0 {
        format!("; {heavy} CPU-bound start-up(s) take turns at the start-up gate")
    } else {
        String::new()
    };
    Parallelism {
        at_once,
        automatic: true,
        reason: format!("automatic: {bound}{staggered}; lowered if cells slow down"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service;

    fn machine(cores: usize, available_mb: u64) -> Machine {
        Machine {
            cores,
            available_mb: Some(available_mb),
        }
    }

    #[test]
    fn a_given_parallelism_is_used_as_it_is() {
        let p = decide(Some((3, "--parallel")), &[], 10, machine(2, 20_000));
        assert_eq!((p.at_once, p.automatic), (3, false));
        assert_eq!(p.reason, "--parallel 3");
    }

    #[test]
    fn idle_contention_fits_more_cells_than_cores() {
        let zookeeper = &service::zookeeper::SERVICE;
        let cells = vec![zookeeper.cost; 20];
        let p = decide(None, &cells, 20, machine(2, 20_000));
        let contention = zookeeper.cost.contention_cores;
        assert_eq!(
            p.at_once,
            (2.0 * CONTENTION_SHARE / contention).floor() as usize
        );
        assert!(p.at_once > 2, "{p:?}");
        assert!(p.reason.contains("while it contends"), "{}", p.reason);
        assert!(p.reason.contains("start-up gate"), "{}", p.reason);
    }

    #[test]
    fn memory_and_the_number_of_runs_bound_it() {
        let zookeeper = &service::zookeeper::SERVICE;
        let cells = vec![zookeeper.cost; 10];
        let per_cell = zookeeper.cost.memory_mb;
        let p = decide(None, &cells, 10, machine(16, per_cell * 4));
        assert_eq!(p.at_once, 2);
        assert!(p.reason.contains("memory"), "{}", p.reason);
        let p = decide(None, &cells[..3], 3, machine(16, 100_000));
        assert_eq!(p.at_once, 3);
        assert!(p.reason.contains("every one of the 3 runs"), "{}", p.reason);
    }

    /// A lock's clients set its cells' contention: a single Redis server's cell costs less than
    /// one of Redlock's five on the same service, and start-up and memory stay the service's.
    #[test]
    fn a_cell_costs_its_own_clients_contention() {
        let redis = cell_cost(crate::locks::find("redis").unwrap());
        let redlock = cell_cost(crate::locks::find("redlock").unwrap());
        assert!(
            redis.contention_cores < redlock.contention_cores,
            "{redis:?} {redlock:?}"
        );
        assert_eq!(redis.memory_mb, redlock.memory_mb);
        assert_eq!(redis.startup_cores, redlock.startup_cores);
    }
}
