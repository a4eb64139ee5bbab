//! Running a comparison's planned cells: every repeat of each of the shard's cells is a job,
//! `parallel` workers take them in turn, each cell runs as `lockpick run` would run it, and the
//! first error of a cell stops the others. The pool ([`run_jobs`]) and one stored run
//! ([`run_stored`]) serve `lockpick sweep` too. An automatic parallelism is lowered by one when
//! a cell's start-up took much longer than its service's quickest so far ([`pace`]): the worker
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

/// Runs `jobs`, `limit` at a time, each through `run`, and returns every job that ended with
/// its index, in the jobs' order. `limit` starts as the number of workers; a job may lower it,
/// and workers numbered from it on stop after their job. A job that returns `None` was
/// interrupted or not started because the flag was set (`run` looks at it, since a job that
/// runs nothing may still end) and ends its worker; the first error stops the others (it sets
/// the flag) and is returned. `done` is called once a job ended, with how many had ended before
/// it (counted under the same lock, so the numbers it tells are in order).
pub(crate) fn run_jobs<J: Sync, T: Send>(
    jobs: &[J],
    limit: &AtomicUsize,
    interrupt: &Arc<AtomicBool>,
    run: impl Fn(&J) -> Result<Option<T>> + Sync,
    done: impl Fn(usize, &J, &T) + Sync,
) -> Result<Vec<(usize, T)>> {
    let queue = Mutex::new(jobs.iter().enumerate());
    let finished: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let work = |number: usize| loop {
        if number >= limit.load(Ordering::SeqCst).max(1) {
            return;
        }
        let Some((index, job)) = queue.lock().unwrap().next() else {
            return;
        };
        match run(job) {
            Ok(Some(result)) => {
                let mut ended = finished.lock().unwrap();
                done(ended.len(), job, &result);
                ended.push((index, result));
            }
            Ok(None) => return, // interrupted: the flag is already set
            Err(e) => {
                failure.lock().unwrap().get_or_insert(e);
                interrupt.store(true, Ordering::SeqCst);
            }
        }
    };
    std::thread::scope(|scope| {
        for number in 0..limit.load(Ordering::SeqCst).max(1) {
            let work = &work;
            scope.spawn(move || work(number));
        }
    });
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(e);
    }
    let mut ended = finished.into_inner().unwrap();
    ended.sort_by_key(|(index, _)| *index);
    Ok(ended)
}

/// What the workers running a comparison's cells tell as they go.
struct Workers<'a> {
    plan: &'a Plan,
    /// Repeats that can run, of every cell: the `N` of each `[n/N]` told.
    total: usize,
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
    let limit = AtomicUsize::new(plan.parallel);
    let pace = Mutex::new(Pace::new(&plan.parallelism));
    let workers = Workers {
        plan,
        total: runnable * plan.seeds.len(),
    };
    // How many repeats ran so far: n/a cells end too, but are not counted in `[n/N]`.
    let ran = std::sync::atomic::AtomicUsize::new(0);
    let ended = run_jobs(
        &jobs,
        &limit,
        interrupt,
        |&(index, repeat)| match &plan.cells[index].configs {
            Ok(_) if interrupt.load(Ordering::SeqCst) => Ok(None),
            Ok(configs) => {
                let config = &configs[repeat];
                let Some((figures, startup)) = run_cell(config, Arc::clone(interrupt))? else {
                    return Ok(None);
                };
                let lowered = pace.lock().unwrap().cell_started(
                    config.lock.service_entry().name,
                    &plan.cells[index].name.to_string(),
                    config.lock.start_up().as_secs_f64(),
                    &startup,
                );
                if let Some(lowered) = lowered {
                    limit.store(lowered, Ordering::SeqCst);
                }
                Ok(Some(Outcome::Ran(Box::new(figures))))
            }
            Err(reason) => Ok(Some(Outcome::NotApplicable {
                reason: reason.clone(),
            })),
        },
        |_, &(index, repeat), outcome| {
            if let (Outcome::Ran(figures), Ok(configs)) = (outcome, &plan.cells[index].configs) {
                let n = ran.fetch_add(1, Ordering::SeqCst);
                workers.tell_ran(n, &plan.cells[index], repeat, &configs[repeat], figures);
            }
        },
    )
    .map_err(|e| e.context("a cell of the comparison failed"))?;
    let ended = ended
        .into_iter()
        .map(|(job, outcome)| (jobs[job].0, jobs[job].1, outcome))
        .collect();
    Ok((ended, pace.into_inner().unwrap()))
}

impl Workers<'_> {
    /// Tells one repeat that ran and how it stands against its expectation, the `ran_before +
    /// 1`th to run.
    fn tell_ran(
        &self,
        ran_before: usize,
        planned: &PlannedCell,
        repeat: usize,
        config: &RunConfig,
        figures: &Figures,
    ) {
        let (total, repeats) = (self.total, self.plan.seeds.len());
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
            ran_before + 1,
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
    let Some((finished, took)) = run_stored(config, interrupt)? else {
        return Ok(None);
    };
    let startup = finished.startup;
    let figures = Figures::measure(
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
        took,
    );
    Ok(Some((figures, startup)))
}

/// Runs one configuration as an ordinary stored run (its folder written, no summary published)
/// and returns it with how long it took; `None` if it was interrupted before its end. Fails if
/// teardown left part of it behind, so no further run starts beside it.
pub(crate) fn run_stored(
    config: &RunConfig,
    interrupt: Arc<AtomicBool>,
) -> Result<Option<(run::Finished, std::time::Duration)>> {
    let started = Instant::now();
    let finished = run::run(config, interrupt, summary_md::RunSummary::FolderOnly)?;
    finished.left_nothing_behind()?;
    if finished.interrupted {
        return Ok(None);
    }
    Ok(Some((finished, started.elapsed())))
}
