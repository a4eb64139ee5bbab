//! `lockpick shrink <run folder>`: the smallest schedule that still breaks the lock, and one
//! command that replays it. From the run's `schedule.json` and `command.txt`, the [`search`]
//! tries smaller candidates (fewer fault windows by delta debugging, then shorter windows,
//! fewer clients, a shorter time limit, a later start); [`trial`] replays each as a normal `lockpick run`
//! and counts it failing when m of k replays show the same kind of violation; [`source`] reads
//! the run and writes the replay's command line.
//!
//! Everything goes to `<store>/shrink/<time>/`: `schedule.json` (the shrunk schedule),
//! `command.txt` (the replay command), `shrink.json` (what was tried, with runs and seconds) and
//! `run`, a link to a replay of the shrunk schedule that failed (its report and story). The
//! search is bounded by `--budget`; Ctrl-C ends the replay under way and keeps the best schedule
//! found so far.

mod outputs;
mod programs;
mod search;
mod source;
mod trial;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;

use crate::bad_input::bad;
use crate::cli::{ShrinkArgs, ViolationKind};
use crate::config::RunConfig;
use crate::store;
use outputs::write_outputs;
pub use programs::shrink_command;
use search::{Candidate, Limits};
pub use source::reproduce_command;
use source::Source;
pub use trial::Budget;
use trial::Replayer;

/// The most replays of one candidate: more is a typo, and each costs a full run.
const MAX_REPLAYS: u32 = 20;
pub const SHRINK_JSON: &str = "shrink.json";
/// The link to a failing replay of the shrunk schedule.
pub const SHRUNK_RUN: &str = "run";

/// What to shrink, how sure a candidate must be, and what the search may spend.
pub struct Request<'a> {
    /// The violating run's folder.
    pub run: &'a Path,
    pub kind: Option<ViolationKind>,
    pub replays: u32,
    pub min_failures: u32,
    pub budget: Budget,
    /// The store under which `shrink/<time>/` is made.
    pub store: &'a Path,
}

/// What a finished (or interrupted) shrink wrote.
pub struct Shrunk {
    /// `<store>/shrink/<time>/`.
    pub dir: PathBuf,
    /// The shrunk schedule, in `dir`.
    pub schedule: PathBuf,
    /// The replay command, word by word (its `--schedule` is `schedule`).
    pub command: Vec<String>,
    pub from: String,
    pub to: String,
    /// How many replays of the shrunk schedule failed, of how many (`None`: nothing smaller
    /// failed; the run's own schedule is kept).
    pub confirmed: Option<(u32, u32)>,
    pub runs: u32,
    pub seconds: f64,
    /// Why the search stopped early, if it did.
    pub stopped: Option<String>,
}

/// Checks `--replays` and `--min-failures` (k and m) as a shrink takes them.
pub fn check_replays(replays: u32, min_failures: u32, flags: (&str, &str)) -> Result<()> {
    let (k, m) = flags;
    if replays == 0 || replays > MAX_REPLAYS {
        return Err(bad(format!(
            "{k} {replays} must be between 1 and {MAX_REPLAYS}"
        )));
    }
    if min_failures == 0 || min_failures > replays {
        return Err(bad(format!(
            "{m} {min_failures} must be between 1 and {k} {replays}"
        )));
    }
    Ok(())
}

/// Shrinks the run and returns the exit code: 1 when a failing schedule was written, 2 when
/// interrupted (the best so far is still written).
pub fn shrink(args: &ShrinkArgs, interrupt: Arc<AtomicBool>) -> Result<u8> {
    check_replays(
        args.replays,
        args.min_failures,
        ("--replays", "--min-failures"),
    )?;
    let budget = Budget::parse(&args.budget)?;
    if !nix::unistd::geteuid().is_root() {
        return Err(bad("lockpick shrink needs root: run it with sudo"));
    }
    let run =
        std::path::absolute(&args.run).map_err(|e| bad(format!("{}: {e}", args.run.display())))?;
    let store = std::path::absolute(&args.store)
        .map_err(|e| bad(format!("--store {}: {e}", args.store.display())))?;
    let source = Source::load(&run, args.kind)?;
    programs::allow(&source, args)?;
    let request = Request {
        run: &run,
        kind: args.kind,
        replays: args.replays,
        min_failures: args.min_failures,
        budget,
        store: &store,
    };
    shrink_source(&request, source, Arc::clone(&interrupt))?;
    Ok(if interrupt.load(Ordering::SeqCst) {
        2
    } else {
        1
    })
}

/// Shrinks one violating run (both paths absolute), telling its progress on standard error
/// and its result on standard output. The caller vouches for the programs the run's command
/// names: `compare --shrink` shrinks only runs it made itself, of cells its matrix named
/// (`lockpick shrink` checks them with [`programs::allow`] first).
pub fn shrink_run(request: &Request, interrupt: Arc<AtomicBool>) -> Result<Shrunk> {
    let source = Source::load(request.run, request.kind)?;
    shrink_source(request, source, interrupt)
}

/// [`shrink_run`] of a run already read.
fn shrink_source(request: &Request, source: Source, interrupt: Arc<AtomicBool>) -> Result<Shrunk> {
    let run = request.run;
    let kind = request.kind.unwrap_or(source.kinds[0]);
    let store = request.store;
    // The run's own command must replay (and the store take runs) before anything is made.
    let (words, run_args) = source.replay_command(
        &run.join(store::SCHEDULE),
        source.clients,
        source.time_limit_ms,
        Some(&store.join("shrink")),
    )?;
    let config = RunConfig::from_args(&run_args, words)?;
    crate::run::preflight(&config)?;
    let dir = create_shrink_dir(store)?;
    let budget = request.budget;
    eprintln!(
        "lockpick shrink: {} ({}), {} violation; a candidate fails when {} of {} replays show \
         it; budget {} runs, {} s; in {}",
        source.name,
        run.display(),
        kind.name(),
        request.min_failures,
        request.replays,
        budget.runs,
        budget.time.as_secs(),
        dir.display()
    );
    let start = Candidate {
        windows: source.schedule.windows.clone(),
        clients: source.clients,
        time_limit_ms: source.time_limit_ms,
    };
    let limits = Limits {
        quiet_ms: source.quiet_ms,
        violation_ms: source::first_ms(&source.results, kind),
    };
    let mut replayer = Replayer {
        source: &source,
        dir: &dir,
        kind,
        replays: request.replays,
        min_failures: request.min_failures,
        budget,
        started: Instant::now(),
        interrupt: Arc::clone(&interrupt),
        runs: 0,
        steps: Vec::new(),
        best: None,
        stopped: None,
        error: None,
    };
    let best = search::shrink(start.clone(), &limits, &mut replayer);
    let written = write_outputs(&dir, &source, request, &start, &best, &replayer);
    if let Some(e) = replayer.error.take() {
        return Err(e.context(format!(
            "the shrink stopped; its best so far is in {}",
            dir.display()
        )));
    }
    written
}

/// `<store>/shrink/<time>/`, created exclusively (a `-N` suffix when the time is taken).
fn create_shrink_dir(store: &Path) -> Result<PathBuf> {
    let parent = store.join("shrink");
    fs::create_dir_all(&parent).map_err(|e| {
        bad(format!(
            "--store {}: cannot create {}: {e}",
            store.display(),
            parent.display()
        ))
    })?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    for attempt in 0.. {
        let leaf = match attempt {
            0 => stamp.clone(),
            n => format!("{stamp}-{n}"),
        };
        let dir = parent.join(leaf);
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(bad(format!("cannot create {}: {e}", dir.display()))),
        }
    }
    unreachable!("the attempts never run out")
}
