//! `lockpick sweep`: varies one knob over a range (a fault's duration, the TTL, a clock jump, a
//! delay, the work time, the number of clients) for one or more locks and fencing modes, with
//! k seeds a point, and plots safety (the share of runs with overlapping holders, with stale
//! writes the resource accepted) and availability (the time from a fault on the holder to the
//! next grant; acquire latency percentiles) against it. Every run is an ordinary stored run,
//! run through the comparison's pool. Its rooms, in the order a sweep goes through them:
//!
//! - `knob` and `range`: the knobs a sweep can vary, and `--vary KNOB=FROM..TO` read;
//! - `plan`: the grid, every run configured as `lockpick run` would configure it;
//! - `measure` and `stats`: one run's figures, and a point's over its seeds;
//! - `outcome`, `plot` and `page`: `sweep.json`, `sweep.md`, the SVG plots and `sweep.html`.
//!
//! A sweep judges nothing: it exits 0 when every run ended, 2 when Ctrl-C stopped it (the
//! points done are written), 254 on bad input, before anything starts.

pub mod knob;
mod measure;
mod outcome;
mod page;
mod plan;
mod plot;
pub mod range;
mod stats;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::cli::SweepArgs;
use crate::compare::run_cells::{run_jobs, run_stored};
use crate::files::safe_write;
use measure::RunMeasure;
use outcome::Outcome;
use plan::Grid;
use stats::PointStats;

/// The files a sweep writes into its folder.
pub const PAGE: &str = "sweep.html";
pub const JSON: &str = "sweep.json";
pub const MARKDOWN: &str = "sweep.md";

/// Runs the sweep and writes its outputs; returns the exit code (see the module's doc).
pub fn sweep(args: &SweepArgs, interrupt: Arc<AtomicBool>) -> Result<u8> {
    let grid = plan::plan(args)?;
    announce(&grid);
    let started = Instant::now();
    let total = grid.jobs.len();
    let runs = run_jobs(
        &grid.jobs,
        &std::sync::atomic::AtomicUsize::new(grid.parallel),
        &interrupt,
        |job| {
            if interrupt.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let seed = job.config.seed;
            Ok(run_stored(&job.config, Arc::clone(&interrupt))?
                .map(|(finished, _)| RunMeasure::of(&finished, job.point, job.series, seed)))
        },
        |before, job, run| tell_run(&grid, before + 1, total, started, job, run),
    )
    .map_err(|e| e.context("a run of the sweep failed"))?;
    let interrupted = interrupt.load(Ordering::SeqCst);
    let runs: Vec<RunMeasure> = runs.into_iter().map(|(_, r)| r).collect();
    let outcome = Outcome {
        knob: grid.knob,
        nemesis: grid.nemesis.clone(),
        ttl_s: grid.ttl.map(|t| t.as_secs_f64()),
        pause_s: grid.jobs[0]
            .config
            .faults
            .fault_duration_given
            .then(|| grid.jobs[0].config.faults.fault_duration.as_secs_f64())
            .filter(|_| grid.knob.name != "fault-duration"),
        stats: PointStats::all(grid.points.len(), grid.series.len(), &runs),
        points: grid.points,
        series: grid.series,
        seeds: grid.seeds,
        planned_runs: total,
        interrupted,
        runs,
    };
    let dir = &grid.dir;
    write(&outcome, dir).with_context(|| format!("cannot write the sweep into {dir:?}"))?;
    crate::say!("{}", outcome.headline());
    for row in outcome.rows() {
        crate::say!("  {}", row[..9].join(" | "));
    }
    crate::say!("sweep: {}", dir.join(PAGE).display());
    Ok(if interrupted { 2 } else { 0 })
}

/// Tells what the grid will cost before it starts: its runs and roughly how long they take.
fn announce(grid: &Grid) {
    let runs = grid.jobs.len();
    let waves = runs.div_ceil(grid.parallel) as u32;
    crate::tell!(
        "lockpick sweep: {} over {} points × {} locks and fencing modes × {} seeds = {runs} runs, \
         {} at a time: about {} (each run about {:.0} s)",
        grid.knob.name,
        grid.points.len(),
        grid.series.len(),
        grid.seeds.len(),
        grid.parallel,
        minutes(grid.run_estimate * waves),
        grid.run_estimate.as_secs_f64()
    );
}

/// Tells one run that ended, the `n`th of `total`, with the time the rest should take at the
/// pace so far.
fn tell_run(
    grid: &Grid,
    n: usize,
    total: usize,
    started: Instant,
    job: &plan::Job,
    run: &RunMeasure,
) {
    let per_run = started.elapsed() / n as u32;
    let eta = minutes(per_run * (total - n) as u32);
    let series = &grid.series[job.series];
    crate::tell!(
        "[{n}/{total}] {}={} {} fencing {} seed {}: {} ({} overlaps, {} stale writes), ETA {eta}",
        grid.knob.name,
        grid.points[job.point].value,
        series.lock,
        series.fencing,
        run.seed,
        run.verdict,
        run.overlaps,
        run.stale_writes
    );
}

/// A duration as `4 min 10 s`.
fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}

/// Writes `sweep.json`, `sweep.md`, each plot's SVG and `sweep.html` into the sweep's folder
/// `dir`, made by the plan before any run (each file created exclusively, never through a link).
fn write(outcome: &Outcome, dir: &Path) -> Result<()> {
    let json = serde_json::to_string_pretty(outcome)?;
    safe_write::write_new(&dir.join(JSON), json)?;
    safe_write::write_new(&dir.join(MARKDOWN), outcome.markdown())?;
    let mut plots = Vec::new();
    for measure in plot::MEASURES {
        let svg = plot::svg(outcome, measure)
            .map_err(|e| anyhow::anyhow!("cannot draw the plot {:?}: {e}", measure.title))?;
        safe_write::write_new(&dir.join(measure.file), &svg)?;
        plots.push((measure, svg));
    }
    safe_write::write_new(&dir.join(PAGE), page::render(outcome, &plots, dir))?;
    Ok(())
}
