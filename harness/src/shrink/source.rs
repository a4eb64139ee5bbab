//! The run being shrunk: its command, schedule and verdict, read from its folder as hostile
//! input, and the `lockpick run` command line that replays a candidate with the run's own
//! knobs (TTL, work, fencing, clock jump, …): only the schedule, the clients, the time limit
//! and the store change.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Parser;
use lockpick_checkers::verdict::Validity;
use lockpick_checkers::Results;

use crate::bad_input::{bad, open_history, read_run_file, Links, MAX_RUN_FILE_BYTES};
use crate::cli::{Cli, Command, RunArgs, ViolationKind};
use crate::config::parse_duration;
use crate::schedule::Schedule;
use crate::store;

/// Flags every replay sets itself; the run's own values of them are dropped. `--nemesis` goes
/// because a replayed schedule brings its nemeses (and a shrunk one may have lost some).
const REPLACED: [&str; 5] = [
    "--schedule",
    "--nemesis",
    "--clients",
    "--time-limit",
    "--store",
];

pub struct Source {
    pub dir: PathBuf,
    /// The run's flags, without those in `REPLACED`.
    flags: Vec<String>,
    /// The run's flags as clap read them, to check a replay's command says the same.
    args: RunArgs,
    pub schedule: Schedule,
    pub clients: u32,
    pub time_limit_ms: u64,
    pub quiet_ms: u64,
    /// The run's name (`redis-pause-holder`).
    pub name: String,
    /// Every kind of violation the run's history proves, in `ViolationKind::ALL`'s order.
    pub kinds: Vec<ViolationKind>,
    pub results: Results,
}

impl Source {
    pub fn load(dir: &Path, kind: Option<ViolationKind>) -> Result<Source> {
        if !dir.is_dir() {
            return Err(bad(format!("{} is not a run folder", dir.display())));
        }
        open_history(&dir.join(store::HISTORY), Links::Refuse)?;
        let command = read_run_file(dir, store::COMMAND, MAX_RUN_FILE_BYTES)?;
        let words = shell_words::split(command.trim()).map_err(|e| {
            bad(format!(
                "{}: not a command line: {e}",
                dir.join(store::COMMAND).display()
            ))
        })?;
        let not_a_run = || {
            bad(format!(
                "{} does not hold a `lockpick run` command",
                dir.join(store::COMMAND).display()
            ))
        };
        if words.get(1).map(String::as_str) != Some("run") {
            return Err(not_a_run());
        }
        let Ok(Cli {
            command: Command::Run(args),
        }) = Cli::try_parse_from(&words)
        else {
            return Err(not_a_run());
        };
        let schedule: Schedule =
            serde_json::from_str(&read_run_file(dir, store::SCHEDULE, MAX_RUN_FILE_BYTES)?)
                .map_err(|e| {
                    bad(format!(
                        "{} is not a schedule: {e}",
                        dir.join(store::SCHEDULE).display()
                    ))
                })?;
        if schedule.windows.is_empty() {
            return Err(bad(format!(
                "{}: the run had no fault to shrink",
                dir.join(store::SCHEDULE).display()
            )));
        }
        let ms = |flag: &str, text: &str| -> Result<u64> {
            Ok(parse_duration(flag, text)?.as_millis() as u64)
        };
        let time_limit_ms = ms("--time-limit", args.knobs.time_limit())?;
        let quiet_ms = ms("--quiet", args.knobs.quiet())?;
        let results = crate::report::load(dir)?.results;
        let found = kinds_of(&results);
        if results.valid != Validity::Invalid || found.is_empty() {
            return Err(bad(format!(
                "{} is not a violating run (its history is {:?}): only an invalid run can be \
                 shrunk",
                dir.display(),
                results.valid
            )));
        }
        if let Some(kind) = kind {
            if !found.contains(&kind) {
                return Err(bad(format!(
                    "--kind {}: the run at {} shows no such violation (it shows {})",
                    kind.name(),
                    dir.display(),
                    names(&found)
                )));
            }
        }
        let nemeses: Vec<&str> = schedule.nemeses()?.iter().map(|n| n.name()).collect();
        Ok(Source {
            dir: dir.to_path_buf(),
            flags: strip_replaced(&words[2..]),
            name: format!("{}-{}", args.lock, nemeses.join("+")),
            clients: args.knobs.clients(),
            args: *args,
            schedule,
            time_limit_ms,
            quiet_ms,
            kinds: found,
            results,
        })
    }

    /// The run's flags as clap read them from its `command.txt`.
    pub fn run_args(&self) -> &RunArgs {
        &self.args
    }

    /// The `lockpick run` command that replays `schedule` with `clients` clients for
    /// `time_limit_ms`, storing under `store` (or the default store when `None`).
    pub fn replay_command(
        &self,
        schedule: &Path,
        clients: u32,
        time_limit_ms: u64,
        store: Option<&Path>,
    ) -> Result<(Vec<String>, RunArgs)> {
        let mut words = vec!["lockpick".to_string(), "run".to_string()];
        words.extend(self.flags.iter().cloned());
        words.extend([
            "--clients".to_string(),
            clients.to_string(),
            "--time-limit".to_string(),
            duration_words(time_limit_ms),
            "--schedule".to_string(),
            schedule.display().to_string(),
        ]);
        if let Some(store) = store {
            words.extend(["--store".to_string(), store.display().to_string()]);
        }
        let Ok(Cli {
            command: Command::Run(args),
        }) = Cli::try_parse_from(&words)
        else {
            return Err(bad(format!(
                "{}: its command does not replay with a schedule",
                self.dir.join(store::COMMAND).display()
            )));
        };
        // Dropping flags from a command line must change only those flags: compare what clap
        // reads with the run's own, the replaced flags set alike.
        let mut expected = self.args.clone();
        expected.schedule = args.schedule.clone();
        expected.nemesis = args.nemesis.clone();
        expected.knobs.clients = args.knobs.clients;
        expected.knobs.time_limit = args.knobs.time_limit.clone();
        expected.store = args.store.clone();
        if format!("{expected:?}") != format!("{args:?}") {
            return Err(bad(format!(
                "{}: its flags do not survive a replay's changes unaltered",
                self.dir.join(store::COMMAND).display()
            )));
        }
        Ok((words, *args))
    }
}

/// A run's command (`lockpick run …`, word by word) that replays `schedule` with the run's own
/// flags: its `--schedule` and `--store` give way (the replay keeps its runs in the default
/// store, or where the person adds `--store`).
pub fn reproduce_command(command: &[String], schedule: &str) -> Vec<String> {
    let mut words: Vec<String> = command.iter().take(2).cloned().collect();
    words.extend(strip(
        command.get(2..).unwrap_or(&[]),
        &["--schedule", "--store"],
    ));
    words.extend(["--schedule".to_string(), schedule.to_string()]);
    words
}

/// `words` without the flags in `REPLACED`, in either form (`--clients 5`, `--clients=5`).
fn strip_replaced(words: &[String]) -> Vec<String> {
    strip(words, &REPLACED)
}

/// `words` without `flags` and their values, in either form.
fn strip(words: &[String], flags: &[&str]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        if flags.contains(&word.as_str()) {
            words.next();
        } else if !flags
            .iter()
            .any(|flag| word.starts_with(&format!("{flag}=")))
        {
            kept.push(word.clone());
        }
    }
    kept
}

/// `4500` → `4500ms`, `5000` → `5s`.
pub fn duration_words(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// The kinds of violation `results` proves.
pub fn kinds_of(results: &Results) -> Vec<ViolationKind> {
    ViolationKind::ALL
        .into_iter()
        .filter(|kind| first_ms(results, *kind).is_some())
        .collect()
}

/// When the first violation of `kind` had happened, in ms since the run began.
pub fn first_ms(results: &Results, kind: ViolationKind) -> Option<u64> {
    let ns = match kind {
        ViolationKind::StaleWrite => (results.stale_accesses.as_ref()?.violations.iter())
            .filter(|v| v.access.kind == lockpick_checkers::model::AccessKind::Write)
            .map(|v| v.access.time)
            .min(),
        ViolationKind::Token => (results.token_violations.as_ref()?.violations.iter())
            .map(|v| v.later.start)
            .min(),
        ViolationKind::Overlap => (results.overlapping_holders.as_ref()?.overlaps.iter())
            .map(|o| o.to)
            .min(),
        ViolationKind::Jam => (results.liveness.as_ref()?.jams.iter())
            .map(|j| j.until)
            .min(),
    }?;
    Some(ns.div_ceil(1_000_000))
}

pub fn names(kinds: &[ViolationKind]) -> String {
    let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn only_the_replaced_flags_are_dropped_in_either_form() {
        let kept = strip_replaced(&words(
            "--lock redis --nemesis pause-holder --clients=4 --ttl 1s --store /s --time-limit 8s \
             --schedule x.json --seed 3",
        ));
        assert_eq!(kept, words("--lock redis --ttl 1s --seed 3"));
    }

    #[test]
    fn a_reproduction_keeps_the_runs_flags_but_its_schedule_and_store() {
        let command = words("lockpick run --lock redis --store=/s --seed 3 --schedule old.json");
        assert_eq!(
            reproduce_command(&command, "r/t/schedule.json"),
            words("lockpick run --lock redis --seed 3 --schedule r/t/schedule.json")
        );
    }

    #[test]
    fn durations_read_as_a_person_writes_them() {
        assert_eq!(duration_words(5000), "5s");
        assert_eq!(duration_words(4500), "4500ms");
    }
}
