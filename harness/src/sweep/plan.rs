//! The sweep's grid, built and checked before any run starts: every point × lock × fencing
//! mode × seed is one run, configured exactly as `lockpick run` would configure it (the same
//! parser, the same checks), with the swept knob set to the point's value.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Parser;

use super::range::{self, Range, Value};
use crate::cli::{CellKnobs, RunArgs, RunKnobs, SweepArgs};
use crate::compare::plan::repeat_seed;
use crate::config::{bad, parse_duration, RunConfig};

/// Parses one run's flags exactly as `lockpick run` would.
#[derive(Parser)]
struct RunCommand {
    #[command(flatten)]
    run: RunArgs,
}

/// A sweep's runs are as short as a comparison's cells unless `--time-limit` says otherwise.
const DEFAULT_TIME_LIMIT: &str = "10s";

/// Most runs at once, as in a comparison.
const MAX_PARALLEL: usize = 16;

/// The store's folder of sweeps, `<store>/sweep/<time>/` each.
pub const SWEEPS: &str = "sweep";

/// Most seeds a point.
const MAX_SEEDS: usize = 100;

/// One line of the plots: a lock with a fencing mode.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Series {
    pub lock: String,
    pub fencing: String,
}

/// One point of the range, resolved for the runs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Point {
    /// The value as every run of the point was given it (`1500ms`, `4`).
    pub value: String,
    /// The value on the plot's x axis: seconds, a count, or its ratio to the TTL.
    pub x: f64,
    /// Its ratio to the TTL, where the knob is read against the TTL (for the TTL itself: the
    /// pause over the TTL, when the runs' fault duration is given).
    pub ratio: Option<f64>,
}

/// One run of the grid.
pub struct Job {
    pub point: usize,
    pub series: usize,
    pub config: RunConfig,
}

pub struct Grid {
    pub knob: &'static super::knob::Knob,
    pub points: Vec<Point>,
    pub series: Vec<Series>,
    pub nemesis: String,
    pub seeds: Vec<u64>,
    pub jobs: Vec<Job>,
    pub parallel: usize,
    /// The sweep's folder, `<store>/sweep/<time>/`, made before any run: its outputs go there.
    pub dir: PathBuf,
    /// The TTL every run shares (`None` when the TTL is swept).
    pub ttl: Option<Duration>,
    /// The one run's time it takes, roughly: its time limit, quiet time and set-up.
    pub run_estimate: Duration,
}

/// Checks the flags and builds every run's configuration: any refusal is bad input, before
/// anything starts.
pub fn plan(args: &SweepArgs) -> Result<Grid> {
    let Range { knob, values } = range::parse(&args.vary, args.points)?;
    if (knob.given)(&args.knobs) {
        return Err(bad(format!(
            "--{} is the knob the sweep varies: give its values with --vary only",
            knob.name
        )));
    }
    let locks = list("--locks", &args.locks)?;
    let fencings = list("--fencing", &args.fencing)?;
    if let Some(f) = fencings
        .iter()
        .find(|f| !["off", "on"].contains(&f.as_str()))
    {
        return Err(bad(format!("--fencing {f:?}: use off, on or off,on")));
    }
    let nemeses: Vec<&'static dyn crate::nemesis::Nemesis> = (args.nemesis.split('+'))
        .filter(|n| *n != crate::nemesis::NONE)
        .map(|n| {
            crate::nemesis::find(n).ok_or_else(|| {
                bad(format!(
                    "--nemesis: unknown nemesis {n:?}: use one of {}",
                    crate::nemesis::names().join(", ")
                ))
            })
        })
        .collect::<Result<_>>()?;
    for lock in &locks {
        let found = crate::locks::find_named(lock, None).map_err(bad)?;
        if let Some(why) = (knob.ignored)(found, &nemeses) {
            return Err(bad(format!(
                "--vary {}: {} ignores it: {why}",
                knob.name, lock
            )));
        }
    }
    if args.seeds == 0 || args.seeds > MAX_SEEDS {
        return Err(bad(format!(
            "--seeds {} must be between 1 and {MAX_SEEDS}",
            args.seeds
        )));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let parallel = args.parallel.unwrap_or(cores.min(MAX_PARALLEL));
    if parallel == 0 || parallel > MAX_PARALLEL {
        return Err(bad(format!(
            "--parallel {parallel} must be between 1 and {MAX_PARALLEL}"
        )));
    }
    let runs = values.len() * locks.len() * fencings.len() * args.seeds;
    if runs > args.max_runs {
        return Err(bad(format!(
            "the sweep has {runs} runs ({} points × {} locks × {} fencing modes × {} seeds), more \
             than --max-runs {}: raise it to run them all",
            values.len(),
            locks.len(),
            fencings.len(),
            args.seeds,
            args.max_runs
        )));
    }
    let knobs = args.knobs.or(&CellKnobs {
        run: RunKnobs {
            time_limit: Some(DEFAULT_TIME_LIMIT.to_string()),
            ..RunKnobs::default()
        },
        ..CellKnobs::default()
    });
    let ttl = parse_duration("--ttl", knobs.run.ttl())?;
    let pause = match &knobs.faults.fault_duration {
        Some(text) => Some(parse_duration("--fault-duration", text)?),
        None => None,
    };
    range::words(knob, &values, ttl)?;
    let store = std::path::absolute(&args.store)
        .map_err(|e| bad(format!("--store {}: {e}", args.store.display())))?;
    // Each run is given its store as a flag word: a path that is no text would be changed on
    // the way, and the runs stored elsewhere than the sweep.
    let Some(store_word) = store.to_str().map(str::to_string) else {
        return Err(bad(format!(
            "--store {}: the path is not UTF-8 text; give a folder whose path is",
            store.display()
        )));
    };
    crate::store::check_writable(&store, SWEEPS)?;
    let seed = args.seed.unwrap_or_else(rand::random);
    let seeds: Vec<u64> = (0..args.seeds).map(|r| repeat_seed(seed, r)).collect();
    let points: Vec<Point> = values.iter().map(|v| point(knob, *v, ttl, pause)).collect();
    let series: Vec<Series> = locks
        .iter()
        .flat_map(|lock| {
            fencings.iter().map(move |f| Series {
                lock: lock.clone(),
                fencing: f.clone(),
            })
        })
        .collect();
    let mut jobs = Vec::new();
    let mut checked = Vec::new();
    for (p, value) in values.iter().enumerate() {
        for (s, line) in series.iter().enumerate() {
            for &seed in &seeds {
                let mut knobs = knobs.clone();
                (knob.set)(&mut knobs, value.word(ttl));
                let config = configure(line, &args.nemesis, &knobs, seed, &store_word)?;
                if !checked.contains(&line.lock) {
                    crate::run::preflight(&config)?;
                    checked.push(line.lock.clone());
                }
                jobs.push(Job {
                    point: p,
                    series: s,
                    config,
                });
            }
        }
    }
    let first = &jobs[0].config;
    let run_estimate = first.time_limit + first.quiet + Duration::from_secs(3);
    // The sweep's own folder, made last of all the checks and before any run: exclusively (two
    // sweeps started in one millisecond get one each), never through a link.
    let dir = crate::store::create_run_dir(&store, SWEEPS, &[])?;
    // A sweep keeps no logs of its own: each run keeps its own.
    let _ = std::fs::remove_dir(dir.join(crate::store::LOGS));
    Ok(Grid {
        knob,
        points,
        series,
        nemesis: args.nemesis.clone(),
        seeds,
        jobs,
        parallel,
        dir,
        ttl: (knob.name != "ttl").then_some(ttl),
        run_estimate,
    })
}

/// A comma-separated list, each item once.
fn list(flag: &str, text: &str) -> Result<Vec<String>> {
    let mut items: Vec<String> = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(bad(format!("{flag} {text:?} has an empty item")));
        }
        if !items.iter().any(|i| i == item) {
            items.push(item.to_string());
        }
    }
    Ok(items)
}

/// A point as the plots place it.
fn point(knob: &super::knob::Knob, value: Value, ttl: Duration, pause: Option<Duration>) -> Point {
    let word = value.word(ttl);
    let seconds = |v: Value| parse_duration("", &v.word(ttl)).map_or(0.0, |d| d.as_secs_f64());
    let (x, ratio) = match value {
        Value::Count(n) => (n as f64, None),
        _ if knob.against_ttl => {
            let ratio = seconds(value) / ttl.as_secs_f64();
            (ratio, Some(ratio))
        }
        _ => {
            let s = seconds(value);
            (s, pause.map(|p| p.as_secs_f64() / s))
        }
    };
    Point {
        value: word,
        x,
        ratio,
    }
}

/// One run's configuration, built as `lockpick run` builds it from the same words.
fn configure(
    series: &Series,
    nemesis: &str,
    knobs: &CellKnobs,
    seed: u64,
    store: &str,
) -> Result<RunConfig> {
    let mut words: Vec<String> = [
        "lockpick",
        "--lock",
        &series.lock,
        "--nemesis",
        &nemesis.replace('+', ","),
        "--fencing",
        &series.fencing,
        "--seed",
        &seed.to_string(),
        "--store",
        store,
    ]
    .iter()
    .map(|w| w.to_string())
    .collect();
    words.extend(knobs.words());
    let parsed = RunCommand::try_parse_from(&words).map_err(|e| {
        let line = e.to_string();
        bad(line.lines().next().unwrap_or("bad flags").to_string())
    })?;
    let mut command = vec!["lockpick".to_string(), "run".to_string()];
    command.extend(words[1..].iter().cloned());
    RunConfig::from_args(&parsed.run, command).map_err(|e| {
        bad(format!(
            "{} (fencing {}): {}",
            series.lock, series.fencing, e
        ))
    })
}
