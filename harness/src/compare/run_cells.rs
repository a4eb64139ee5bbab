//! Running a comparison's planned cells: every repeat of each of the shard's cells is a job,
//! `parallel` workers take them in turn, each cell runs as `lockpick run` would run it, and the
//! first error of a cell stops the others. An automatic parallelism is lowered by one when a
//! cell's start-up took much longer than its service's quickest so far ([`pace`]): the worker
//! with the highest number stops after its cell.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;

use super::judge::cell::{Cell, Figures, Judgement, Outcome};
use super::judge::judgement::Measured;
use super::pace::Pace;
use super::plan::{Plan, PlannedCell};
use crate::config::RunConfig;
use crate::report::summary_md;
use crate::run;
use crate::run::startup_times::StartupTimes;

/// One repeat of a cell that ended: the cell's place in the plan, the repeat, its outcome.
pub(super) type Finished = (usize, usize, Outcome);

/// What the workers running a comparison's cells share.
struct Workers<'a> {
    plan: &'a Plan,
    /// Repeats that can run, of every cell: the `N` of each `[n/N]` told.
    total: usize,
    queue: Mutex<std::vec::IntoIter<(usize, usize)>>,
    finished: Mutex<Vec<Finished>>,
    /// The first error of a cell, which stops the others.
    failure: Mutex<Option<anyhow::Error>>,
    /// Workers numbered from this one on stop taking jobs.
    limit: AtomicUsize,
    pace: Mutex<Pace>,
}

/// Runs the shard's cells, `parallel` at a time, and returns every repeat that ended, by cell
/// and repeat, with how many ran at once: its own step because it is the only one that runs
/// servers.
pub(super) fn run_all(
    plan: &Plan,
    in_shard: &[bool],
    runnable: usize,
    interrupt: &Arc<AtomicBool>,
) -> Result<(Vec<Finished>, Pace)> {
    // One job per cell and repeat; an n/a cell is one job that runs nothing.
    let mut jobs: Vec<(usize, usize)> = plan
        .cells
        .iter()
        .enumerate()
        .filter(|(i, _)| in_shard[*i])
        .flat_map(|(i, c)| {
            let n = c.configs.as_ref().map_or(1, |configs| configs.len());
            (0..n).map(move |r| (i, r))
        })
        .collect();
    // The longest first (a ZooKeeper cell's start-up and teardown before a Redis cell's), so
    // the last cells to end are short ones and the comparison's wall time is the least.
    jobs.sort_by_key(|&(i, r)| {
        let took = match &plan.cells[i].configs {
            Ok(configs) => configs[r].time_limit + configs[r].lock.start_up(),
            Err(_) => std::time::Duration::ZERO,
        };
        (std::cmp::Reverse(took), i, r)
    });
    let workers = Workers {
        plan,
        total: runnable * plan.seeds.len(),
        queue: Mutex::new(jobs.into_iter()),
        finished: Mutex::new(Vec::new()),
        failure: Mutex::new(None),
        limit: AtomicUsize::new(plan.parallel),
        pace: Mutex::new(Pace::new(&plan.parallelism)),
    };
    std::thread::scope(|scope| {
        for number in 0..plan.parallel {
            let workers = &workers;
            scope.spawn(move || workers.work(number, interrupt));
        }
    });
    if let Some(e) = workers.failure.into_inner().unwrap() {
        return Err(e.context("a cell of the comparison failed"));
    }
    let mut outcomes = workers.finished.into_inner().unwrap();
    outcomes.sort_by_key(|(index, repeat, _)| (*index, *repeat));
    Ok((outcomes, workers.pace.into_inner().unwrap()))
}

impl Workers<'_> {
    /// One worker: takes jobs until none is left, the comparison is interrupted, a cell fails
    /// or the parallelism was lowered below its `number`.
    fn work(&self, number: usize, interrupt: &Arc<AtomicBool>) {
        loop {
            if number >= self.limit.load(Ordering::SeqCst) {
                return;
            }
            let Some((index, repeat)) = self.queue.lock().unwrap().next() else {
                return;
            };
            let planned = &self.plan.cells[index];
            let config = match &planned.configs {
                Ok(configs) => &configs[repeat],
                Err(reason) => {
                    let reason = reason.clone();
                    let outcome = Outcome::NotApplicable { reason };
                    self.finished.lock().unwrap().push((index, repeat, outcome));
                    continue;
                }
            };
            if interrupt.load(Ordering::SeqCst) {
                return;
            }
            match run_cell(config, Arc::clone(interrupt)) {
                Ok(Some((figures, startup))) => {
                    let lowered = self.pace.lock().unwrap().cell_started(
                        config.lock.service_entry().name,
                        &planned.name.to_string(),
                        &startup,
                    );
                    if let Some(limit) = lowered {
                        self.limit.store(limit, Ordering::SeqCst);
                    }
                    let mut done = self.finished.lock().unwrap();
                    self.tell_ran(&done, planned, repeat, config, &figures);
                    done.push((index, repeat, Outcome::Ran(Box::new(figures))));
                }
                Ok(None) => return, // interrupted: the flag is already set
                Err(e) => {
                    self.failure.lock().unwrap().get_or_insert(e);
                    interrupt.store(true, Ordering::SeqCst);
                }
            }
        }
    }

    /// Tells one repeat that ran and how it stands against its expectation: its own step
    /// because it is counted among those that ran so far (`done`, which the caller holds).
    fn tell_ran(
        &self,
        done: &[Finished],
        planned: &PlannedCell,
        repeat: usize,
        config: &RunConfig,
        figures: &Figures,
    ) {
        let (total, repeats) = (self.total, self.plan.seeds.len());
        let ran = done.iter().filter(|(_, _, o)| matches!(o, Outcome::Ran(_)));
        let judged = Cell::new(
            planned.name.clone(),
            &planned.expected,
            vec![Outcome::Ran(Box::new(figures.clone()))],
        );
        let which = if repeats > 1 {
            format!(" repeat {}/{repeats} (seed {})", repeat + 1, config.seed)
        } else {
            String::new()
        };
        let decided = figures
            .decided_at
            .map_or(String::new(), |s| format!(", decided at {s:.1} s"));
        crate::tell!(
            "[{}/{total}] {}{which}: {} (expected {}: {}{decided})",
            ran.count() + 1,
            crate::text::terminal::field(&planned.name.to_string()),
            figures.verdict,
            planned.expected.words(),
            match &judged.judgement {
                Judgement::Holds => "as expected",
                Judgement::Broken(_) => "NOT as expected",
                _ => "unproven",
            }
        );
    }
}

/// Runs one cell: its figures and how long it took to reach contention; `None` if it was
/// interrupted before its end.
fn run_cell(
    config: &RunConfig,
    interrupt: Arc<AtomicBool>,
) -> Result<Option<(Figures, StartupTimes)>> {
    let started = Instant::now();
    let finished = run::run(config, interrupt, summary_md::RunSummary::FolderOnly)?;
    finished.left_nothing_behind()?;
    if finished.interrupted {
        return Ok(None);
    }
    let startup = finished.startup;
    Ok(Some((
        Figures::measure(
            Measured {
                results: &finished.results,
                model: &finished.model,
                history: &finished.history,
                time_limit: config.time_limit,
                show_programs: !config.server_bins.is_empty(),
            },
            finished.dir,
            config.command.clone(),
            config.seed,
            started.elapsed(),
        ),
        startup,
    )))
}
