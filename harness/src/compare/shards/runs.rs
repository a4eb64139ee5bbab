//! The runs a shard keeps beside its `compare.json`, so that `lockpick merge` judges each cell
//! again from its history instead of trusting the verdict and counts a shard's record says
//! (a record is only a file: anyone who can write the artifact can write it). Each repeat of
//! the shard's cells is kept as `runs/<cell>-<repeat>/`: its history, results, configuration,
//! command, schedule and report, without the service logs. The merged comparison keeps them
//! too, so its `lockpick shrink runs/…` lines work in the published artifact.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cli::{Cli, Command};
use crate::compare::judge::cell::{CellName, Figures};
use crate::compare::judge::judgement::Measured;
use crate::compare::shards::record::PlannedRecord;
use crate::config::parse_duration;
use crate::files::safe_write;
use crate::store;

/// The folder, in a comparison's folder, that holds the kept runs.
pub const RUNS: &str = "runs";

/// What a kept run holds of its run folder (no logs: they are the largest part and judge
/// nothing).
const KEPT: [&str; 6] = [
    store::HISTORY,
    store::RESULTS,
    store::CONFIG,
    store::COMMAND,
    store::SCHEDULE,
    crate::report::REPORT,
];

/// A kept run's folder name: the cell's place in the plan and the repeat's, from 0. Made of
/// numbers only: a cell's name is the user's text and never becomes a path.
pub fn name(index: usize, repeat: usize) -> String {
    format!("{index}-{repeat}")
}

/// Copies the files of the run in `from` into `into`/runs/`name`, each created anew (never
/// through a link); a file the run did not write is left out.
pub fn keep(from: &Path, into: &Path, name: &str) -> Result<PathBuf> {
    let to = into.join(RUNS).join(name);
    fs::create_dir_all(into.join(RUNS)).with_context(|| format!("cannot create {RUNS}"))?;
    fs::create_dir(&to).with_context(|| format!("cannot create {}", to.display()))?;
    for file in KEPT {
        let source = from.join(file);
        match fs::symlink_metadata(&source) {
            Ok(m) if m.is_file() => {}
            _ => continue,
        }
        let mut reader =
            fs::File::open(&source).with_context(|| format!("cannot read {}", source.display()))?;
        let mut writer = safe_write::create_new(&to.join(file))
            .with_context(|| format!("cannot write {}", to.join(file).display()))?;
        io::copy(&mut reader, &mut writer)
            .with_context(|| format!("cannot copy {}", source.display()))?;
    }
    Ok(to)
}

/// The words of the `lockpick run` of repeat `seed` of a planned cell, without its store.
pub fn planned_command(planned: &PlannedRecord, seed: u64) -> Option<Vec<String>> {
    let flags = planned.flags.as_ref()?;
    let mut words = vec!["lockpick".to_string(), "run".to_string()];
    let mut after_seed = false;
    for flag in flags {
        words.push(if after_seed {
            seed.to_string()
        } else {
            flag.clone()
        });
        after_seed = flag == "--seed";
    }
    Some(words)
}

/// A kept run measured again from its own history: the figures the merge shows for it, or why
/// the run is not the repeat the shard's record says it is.
pub fn measure(
    kept: &Path,
    cell: &CellName,
    planned: &PlannedRecord,
    seed: u64,
    recorded: &Figures,
) -> Result<Figures, String> {
    match fs::symlink_metadata(kept) {
        Ok(m) if m.is_dir() => {}
        _ => return Err(format!("its run {} is missing", shown(kept))),
    }
    let command =
        planned_command(planned, seed).ok_or("its plan gives the cell no run".to_string())?;
    let stored = crate::bad_input::read_input_file("merge", &kept.join(store::COMMAND))
        .map_err(|e| e.to_string())?;
    let stored = shell_words::split(stored.trim()).map_err(|e| format!("{e}"))?;
    if without_store(&stored) != command {
        return Err(format!(
            "its run {} was not run with the cell's command",
            shown(kept)
        ));
    }
    let loaded = crate::report::load(kept).map_err(|e| format!("{e:#}"))?;
    let setup = &loaded.history.setup_record;
    let ran = (setup.checked.label(), setup.checked.nemesis.as_deref());
    if ran != (cell.lock.as_str(), Some(cell.nemesis.as_str()))
        || setup.checked.fencing != cell.fencing
        || setup.seed != Some(seed)
    {
        return Err(format!(
            "the history in {} is not of this cell and seed",
            shown(kept)
        ));
    }
    let (time_limit, show_programs) =
        settings(&command).ok_or("its command is not a run's".to_string())?;
    let figures = Figures::measure(
        Measured {
            results: &loaded.results,
            model: &loaded.model,
            history: &loaded.history,
            time_limit,
            show_programs,
        },
        kept.to_path_buf(),
        command,
        seed,
        recorded.took,
    );
    let said = (recorded.verdict, recorded.counts, recorded.undecidable);
    let found = (figures.verdict, figures.counts, figures.undecidable);
    if said != found {
        return Err(format!(
            "its record says {} ({}), its history shows {} ({})",
            said.0,
            said.1.line(),
            found.0,
            found.1.line()
        ));
    }
    Ok(figures)
}

fn without_store(words: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        if word == "--store" {
            words.next();
        } else if !word.starts_with("--store=") {
            kept.push(word.clone());
        }
    }
    kept
}

/// The two settings of a run's command its figures need: its time limit, and whether
/// `--server-bin` chose a server's program (then the servers line names it).
fn settings(command: &[String]) -> Option<(std::time::Duration, bool)> {
    let Ok(Cli {
        command: Command::Run(args),
    }) = <Cli as clap::Parser>::try_parse_from(command)
    else {
        return None;
    };
    let time_limit = parse_duration("--time-limit", args.knobs.time_limit()).ok()?;
    Some((time_limit, !args.knobs.server_bins.is_empty()))
}

/// The last two parts of a kept run's path: the shard's own folder is the reader's.
fn shown(kept: &Path) -> String {
    let parts: Vec<_> = kept.components().rev().take(2).collect();
    let parts: Vec<String> = parts
        .iter()
        .rev()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    parts.join("/")
}
