//! What a finished (or interrupted) shrink leaves: the shrunk schedule, its replay command,
//! `shrink.json` and the `run` link in its folder, and the account on the terminal.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::search::Candidate;
use super::source::{duration_words, Source};
use super::trial::{Budget, Replayer, Step};
use super::{Request, Shrunk, SHRINK_JSON, SHRUNK_RUN};
use crate::cli::ViolationKind;
use crate::schedule::Schedule;
use crate::store;

/// `shrink.json`.
#[derive(Serialize)]
struct Record<'a> {
    run: &'a Path,
    kind: ViolationKind,
    replays: u32,
    min_failures: u32,
    budget: Budget,
    from: Shape,
    to: Shape,
    /// How many replays of the shrunk schedule failed, of how many (`None`: not shrunk; the
    /// original run failed once).
    confirmed: Option<(u32, u32)>,
    runs: u32,
    seconds: f64,
    stopped: Option<&'a str>,
    replay_command: &'a str,
    steps: &'a [Step],
}

#[derive(Serialize)]
struct Shape {
    windows: usize,
    /// When the first fault starts (ms since the run began): the later start moves it.
    first_fault_ms: Option<u64>,
    clients: u32,
    time_limit_ms: u64,
}

impl Shape {
    fn of(c: &Candidate) -> Shape {
        Shape {
            windows: c.windows.len(),
            first_fault_ms: c.windows.iter().map(|w| w.start_ms).min(),
            clients: c.clients,
            time_limit_ms: c.time_limit_ms,
        }
    }

    fn words(&self) -> String {
        format!(
            "{} window{} from {:.2} s, {} clients, {}",
            self.windows,
            if self.windows == 1 { "" } else { "s" },
            self.first_fault_ms.unwrap_or(0) as f64 / 1000.0,
            self.clients,
            duration_words(self.time_limit_ms)
        )
    }
}

/// A new file in a folder the shrink made; never through a link, never over a file.
fn write_new(path: &Path, text: &str) -> Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Writes the shrunk schedule, its replay command, `shrink.json` and the `run` link, and tells
/// the terminal (the shrunk run's story included).
pub(super) fn write_outputs(
    dir: &Path,
    source: &Source,
    args: &Request,
    start: &Candidate,
    best: &Candidate,
    replayer: &Replayer,
) -> Result<Shrunk> {
    let (schedule_path, words) = write_schedule(dir, source, best)?;
    let command = shell_words::join(&words);
    write_new(&dir.join(store::COMMAND), &(command.clone() + "\n"))?;
    let (shown_run, confirmed) = link_shown_run(dir, source, replayer)?;
    let seconds = replayer.started.elapsed().as_secs_f64();
    let record = Record {
        run: &source.dir,
        kind: replayer.kind,
        replays: args.replays,
        min_failures: args.min_failures,
        budget: replayer.budget,
        from: Shape::of(start),
        to: Shape::of(best),
        confirmed,
        runs: replayer.runs,
        seconds,
        stopped: replayer.stopped.as_deref(),
        replay_command: &command,
        steps: &replayer.steps,
    };
    write_new(
        &dir.join(SHRINK_JSON),
        &(serde_json::to_string_pretty(&record)? + "\n"),
    )?;
    tell(dir, source, args, replayer, &record, &shown_run)?;
    Ok(Shrunk {
        dir: dir.to_path_buf(),
        schedule: schedule_path,
        command: words,
        from: record.from.words(),
        to: record.to.words(),
        confirmed,
        runs: replayer.runs,
        seconds,
        stopped: replayer.stopped.clone(),
    })
}

/// The shrunk schedule, then the replay command that names it: the command needs the
/// schedule's path. Returns the path and the command, word by word.
fn write_schedule(dir: &Path, source: &Source, best: &Candidate) -> Result<(PathBuf, Vec<String>)> {
    let schedule = Schedule {
        windows: best.windows.clone(),
        ..source.schedule.clone()
    };
    let schedule_path = dir.join(store::SCHEDULE);
    write_new(
        &schedule_path,
        &(serde_json::to_string_pretty(&schedule)? + "\n"),
    )?;
    let (words, _) =
        source.replay_command(&schedule_path, best.clients, best.time_limit_ms, None)?;
    Ok((schedule_path, words))
}

/// The `run` link: to the failing replay of the shrunk schedule, or to the run itself when
/// nothing smaller failed. Returns the run it shows and how many replays confirmed it.
fn link_shown_run(
    dir: &Path,
    source: &Source,
    replayer: &Replayer,
) -> Result<(PathBuf, Option<(u32, u32)>)> {
    Ok(match &replayer.best {
        Some((folder, runs)) => {
            let step = replayer.steps.iter().rev().find(|s| s.kept);
            let run = runs
                .first()
                .context("a kept candidate has a failing replay")?;
            let relative = run.strip_prefix(dir).unwrap_or(run).to_path_buf();
            std::os::unix::fs::symlink(&relative, dir.join(SHRUNK_RUN))?;
            debug_assert!(run.starts_with(folder));
            (run.clone(), step.map(|s| (s.failed, s.replays)))
        }
        None => {
            std::os::unix::fs::symlink(&source.dir, dir.join(SHRUNK_RUN))?;
            (source.dir.clone(), None)
        }
    })
}

/// The account on standard output, once everything is written: what shrank to what, how sure,
/// at what cost, and the shown run's summary.
fn tell(
    dir: &Path,
    source: &Source,
    args: &Request,
    replayer: &Replayer,
    record: &Record,
    shown_run: &Path,
) -> Result<()> {
    let results = crate::report::load(shown_run)?.results;
    println!(
        "shrunk {}: {} -> {}",
        source.name,
        record.from.words(),
        record.to.words()
    );
    match record.confirmed {
        Some((failed, ran)) => println!(
            "  {} violation in {failed} of {ran} replays of the shrunk schedule (at least {} of \
             {} needed)",
            replayer.kind.name(),
            args.min_failures,
            args.replays
        ),
        None => println!(
            "  no smaller schedule failed in {} of {} replays: the run's own schedule is kept",
            args.min_failures, args.replays
        ),
    }
    println!("  took {} runs in {:.0} s", replayer.runs, record.seconds);
    if let Some(why) = &replayer.stopped {
        println!("  stopped early: {why}");
    }
    println!(
        "  shrunk run: {} ({})",
        dir.join(SHRUNK_RUN).display(),
        shown_run.display()
    );
    print!("{}", crate::report::summary::render(&results));
    println!("  replay: {}", record.replay_command);
    println!("  written to {}", dir.display());
    Ok(())
}
