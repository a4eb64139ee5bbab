//! Planning a comparison before any cell runs: the lists (from the flags, else the matrix file,
//! else the defaults) are checked against the catalogues, and each cell's configuration is built
//! exactly as `lockpick run` would build it. A cell whose lock refuses its nemesis is planned as
//! n/a with the configuration's own refusal, and the rest of the matrix still runs.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, ValueEnum};

use super::cell::CellName;
use super::lock_entries;
use super::matrix::{CellExpectation, Expectation, LockEntry, Matrix};
use crate::cli::{CellKnobs, CompareArgs, Fencing, RunArgs, RunKnobs, Until};
use crate::config::{bad, RunConfig};
use crate::run;

/// Parses the flags of one cell exactly as `lockpick run` would.
#[derive(Parser)]
struct CellCommand {
    #[command(flatten)]
    run: RunArgs,
}

/// Most cells at once: each runs its own servers, clients and namespaces.
const MAX_PARALLEL: usize = 16;

const DEFAULT_NEMESES: &str = "none,pause-holder,kill-leader,pause-leader,partition-leader";
const DEFAULT_FENCING: &str = "on";
/// A comparison's cells are shorter than a run's default.
const DEFAULT_TIME_LIMIT: &str = "10s";

/// Most repeats of each cell.
const MAX_REPEAT: usize = 100;

/// One planned cell: what it is held to, and one configuration per repeat (each with its own
/// seed), or why it cannot run.
pub struct PlannedCell {
    pub name: CellName,
    pub expected: CellExpectation,
    pub configs: Result<Vec<RunConfig>, String>,
}

pub struct Plan {
    pub cells: Vec<PlannedCell>,
    pub seed: u64,
    /// The seed of each repeat: the first is `seed` itself.
    pub seeds: Vec<u64>,
    pub parallel: usize,
    pub store: PathBuf,
    /// Whether a matrix file said what to expect (else every cell is expected valid).
    pub from_matrix: Option<PathBuf>,
}

/// Whether planning checks the machine too (root, programs, the store), or only the matrix.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    MatrixAndMachine,
    MatrixOnly,
}

/// Checks every list item against the known names and builds each cell's configuration, before
/// any cell runs. Values go to the cell's parser as whole words, so nothing in a list or a value
/// can smuggle a flag into a cell. An error in the matrix file names the file and its key.
pub fn plan(args: &CompareArgs, checks: Checks) -> Result<Plan> {
    let matrix = match &args.matrix {
        Some(path) => Matrix::read(path)?,
        None => Matrix::default(),
    };
    let file = args
        .matrix
        .as_ref()
        .map_or(String::new(), |p| p.display().to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let parallel = args
        .parallel
        .or(matrix.parallel)
        .unwrap_or(cores.min(MAX_PARALLEL));
    if parallel == 0 || parallel > MAX_PARALLEL {
        return Err(bad(format!(
            "--parallel {parallel} must be between 1 and {MAX_PARALLEL}"
        )));
    }
    let repeat = args.repeat.or(matrix.repeat).unwrap_or(1);
    if repeat == 0 || repeat > MAX_REPEAT {
        return Err(bad(format!(
            "--repeat {repeat} must be between 1 and {MAX_REPEAT}"
        )));
    }
    for group in &matrix.expect {
        at_least_fits(group, repeat)?;
    }
    let fencing_names: Vec<&str> = Fencing::value_variants().iter().map(|f| f.name()).collect();
    let mut nemesis_names = crate::nemesis::names();
    nemesis_names.push(crate::nemesis::NONE);
    let in_file = |key: &str| format!("{file}: {key}");
    let file_entries = lock_entries::from_file(
        &in_file("locks"),
        &matrix.locks,
        &lock_entries::default_locks(),
    )?;
    let file_locks: Vec<String> = file_entries.iter().map(|e| e.label().to_string()).collect();
    let file_fencings = from_file(&in_file("fencing"), &matrix.fencing, DEFAULT_FENCING)?;
    known(&in_file("fencing"), &file_fencings, &fencing_names)?;
    let file_nemeses = from_file(&in_file("nemeses"), &matrix.nemeses, DEFAULT_NEMESES)?;
    known_nemeses(&in_file("nemeses"), &file_nemeses, &nemesis_names)?;
    for (index, group) in matrix.expect.iter().enumerate() {
        let key = |key: &str| format!("{file}: [[expect]] group {}: {key}", index + 1);
        lock_entries::check_expected(&key("locks"), &group.locks, &file_entries)?;
        known_nemeses(&key("nemeses"), &group.nemeses, &nemesis_names)?;
        known(&key("fencing"), &group.fencing, &fencing_names)?;
        // Against the file's own matrix: flags may narrow a comparison (a CI job running one
        // cell), and then a group is rightly idle.
        if let Some(why) = group.matches_none(&file_locks, &file_nemeses, &file_fencings) {
            return Err(bad(format!("{file}: {}: {why}", group.label(index))));
        }
    }
    check_file_knobs(&file, &matrix.knobs)?;
    let or_flag = |given: &Option<String>, flag: &str, from_file: &[String]| match given {
        Some(text) => list(flag, text, ','),
        None => Ok(from_file.to_vec()),
    };
    let locks = match &args.locks {
        Some(text) => lock_entries::from_flag(text, &file_entries)?,
        None => file_entries,
    };
    let fencings = or_flag(&args.fencing, "--fencing", &file_fencings)?;
    known("--fencing", &fencings, &fencing_names)?;
    let nemeses = or_flag(&args.nemeses, "--nemeses", &file_nemeses)?;
    known_nemeses("--nemeses", &nemeses, &nemesis_names)?;
    let defaults = CellKnobs {
        run: RunKnobs {
            time_limit: Some(DEFAULT_TIME_LIMIT.to_string()),
            ..RunKnobs::default()
        },
        ..CellKnobs::default()
    };
    let knobs = args.knobs.or(&matrix.knobs).or(&defaults);
    let until = args.until.unwrap_or(if args.matrix.is_some() {
        Until::Decided
    } else {
        Until::TimeLimit
    });
    if let (Some(shard), None) = (args.shard, args.seed.or(matrix.seed)) {
        return Err(bad(format!(
            "--shard {shard} needs a seed (--seed, or seed = in the matrix file): every shard \
             must run the same one"
        )));
    }
    let seed = args.seed.or(matrix.seed).unwrap_or_else(rand::random);
    let seeds: Vec<u64> = (0..repeat).map(|r| repeat_seed(seed, r)).collect();
    let store = std::path::absolute(&args.store)
        .map_err(|e| bad(format!("--store {}: {e}", args.store.display())))?;
    if checks == Checks::MatrixAndMachine {
        crate::store::check_writable(&store, "compare")?;
    }

    let planned = locks
        .len()
        .saturating_mul(nemeses.len())
        .saturating_mul(fencings.len());
    if planned > args.max_cells {
        return Err(bad(format!(
            "the comparison has {planned} cells ({} locks × {} nemeses × {} fencing modes), more \
             than --max-cells {}: raise it to run them all",
            locks.len(),
            nemeses.len(),
            fencings.len(),
            args.max_cells
        )));
    }
    let mut cells = Vec::new();
    for lock in &locks {
        for nemesis in &nemeses {
            for fencing in &fencings {
                let name = CellName {
                    lock: lock.label().to_string(),
                    nemesis: nemesis.clone(),
                    fencing: fencing.clone(),
                };
                let expected = matrix.expectation(lock.label(), nemesis, fencing);
                // Only a cell that must show a violation is decided by its first one; a cell
                // held to anything else needs its full time to prove it.
                let decided =
                    until == Until::Decided && expected.expectations == [Expectation::Invalid];
                let cell_until = if decided {
                    Until::Decided
                } else {
                    Until::TimeLimit
                };
                let mut configs = Ok(Vec::new());
                for &seed in &seeds {
                    let cell = Cell {
                        name: &name,
                        lock,
                        until: cell_until,
                    };
                    let configured = configure(&cell, &knobs, seed, &store, checks)?;
                    match (configured, &mut configs) {
                        (Ok(config), Ok(configs)) => configs.push(config),
                        (Err(refused), _) => configs = Err(refused),
                        (Ok(_), Err(_)) => {}
                    }
                }
                cells.push(PlannedCell {
                    expected,
                    name,
                    configs,
                });
            }
        }
    }
    if let Some(refused) = cells.iter().find_map(|c| c.configs.as_ref().err()) {
        if cells.iter().all(|c| c.configs.is_err()) {
            return Err(bad(format!("no cell of the comparison can run: {refused}")));
        }
    }
    Ok(Plan {
        cells,
        seed,
        seeds,
        parallel,
        store,
        from_matrix: args.matrix.clone(),
    })
}

/// The seed of repeat `r` (from 0) of a comparison seeded `seed`: the seed itself first, then
/// a stable mix of both (SplitMix64), so a repeat is replayed by its printed seed alone.
pub fn repeat_seed(seed: u64, r: usize) -> u64 {
    if r == 0 {
        return seed;
    }
    let mut z = seed.wrapping_add((r as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A group's `at-least` must say how many of the repeats, and only of "invalid".
fn at_least_fits(group: &super::matrix::ExpectGroup, repeat: usize) -> Result<()> {
    let Some(k) = group.at_least else {
        return Ok(());
    };
    if !group
        .expectations()
        .contains(&super::matrix::Expectation::Invalid)
    {
        return Err(bad(format!(
            "an [[expect]] group's at-least = {k} needs expect = \"invalid\""
        )));
    }
    if k == 0 || k > repeat {
        return Err(bad(format!(
            "an [[expect]] group's at-least = {k} must be between 1 and the repeats ({repeat})"
        )));
    }
    Ok(())
}

/// What one cell runs: its name, its lock as the matrix gave it, and when it ends.
struct Cell<'a> {
    name: &'a CellName,
    lock: &'a LockEntry,
    until: Until,
}

/// A cell's configuration, or why its lock refuses its nemesis. Any other error is the user's
/// and stops the comparison.
fn configure(
    cell: &Cell<'_>,
    knobs: &CellKnobs,
    seed: u64,
    store: &std::path::Path,
    checks: Checks,
) -> Result<Result<RunConfig, String>> {
    let Cell { name, lock, until } = *cell;
    let mut words: Vec<String> = [
        "lockpick",
        "--lock",
        &lock.lock,
        "--nemesis",
        &name.nemesis.replace('+', ","),
        "--fencing",
        &name.fencing,
        "--seed",
        &seed.to_string(),
        "--store",
        &store.display().to_string(),
    ]
    .iter()
    .map(|w| w.to_string())
    .collect();
    if let Some(short) = &lock.name {
        words.extend(["--name".to_string(), short.clone()]);
    }
    words.extend(knobs.words());
    if until == Until::Decided {
        words.extend(["--until".to_string(), "decided".to_string()]);
    }
    let parsed = CellCommand::try_parse_from(&words)
        .map_err(|e| bad(format!("bad cell {name}: {}", e.kind())))?;
    let mut command = vec!["lockpick".to_string(), "run".to_string()];
    command.extend(words[1..].iter().cloned());
    match RunConfig::from_args(&parsed.run, command) {
        Ok(config) => {
            if checks == Checks::MatrixAndMachine {
                run::preflight(&config)?;
            }
            Ok(Ok(config))
        }
        Err(e) if refuses(&lock.lock, &name.nemesis) => Ok(Err(e.to_string())),
        Err(e) => Err(e),
    }
}

/// Whether the cell's lock refuses one of its nemeses, by the nemesis's needs against the lock's
/// capabilities (the same test the configuration makes).
fn refuses(lock: &str, nemesis: &str) -> bool {
    let Some(lock) = crate::locks::find(lock) else {
        return false;
    };
    nemesis
        .split('+')
        .filter_map(crate::nemesis::find)
        .any(|n| n.needs().refusal(&lock.capabilities()).is_some())
}

/// The file's list (`key` names it in an error), else the default.
fn from_file(key: &str, file: &[String], default: &str) -> Result<Vec<String>> {
    if file.is_empty() {
        return list(key, default, ',');
    }
    if file.iter().any(|item| item.is_empty()) {
        return Err(bad(format!("{key} has an empty item")));
    }
    Ok(file.to_vec())
}

/// The file's durations and runtime, each checked here so that an error names the file and the
/// key (the cell's own parser would name the flag it becomes).
fn check_file_knobs(file: &str, knobs: &CellKnobs) -> Result<()> {
    if let Some(runtime) = &knobs.run.runtime {
        if crate::runtime::find(runtime).is_none() {
            return Err(bad(format!(
                "{file}: [knobs] runtime = {runtime:?} is not a runtime lockpick knows: use one \
                 of {}",
                crate::runtime::names().join(", ")
            )));
        }
    }
    let durations = knobs.run.durations().into_iter();
    for (key, value) in durations.chain(knobs.faults.durations()) {
        if let Some(text) = value {
            crate::config::parse_duration(&format!("{file}: [knobs] {key} ="), text)?;
        }
    }
    Ok(())
}

/// The items of a `separator`-separated list; none may be empty.
fn list(flag: &str, text: &str, separator: char) -> Result<Vec<String>> {
    let items: Vec<String> = text.split(separator).map(str::to_string).collect();
    if items.iter().any(|item| item.is_empty()) {
        return Err(bad(format!(
            "{flag} {text:?} has an empty item: separate names with {separator:?}"
        )));
    }
    Ok(items)
}

/// Each item must be one of `names` exactly.
fn known(flag: &str, items: &[String], names: &[&str]) -> Result<()> {
    for item in items {
        if !names.contains(&item.as_str()) {
            return Err(bad(format!(
                "{flag}: {item:?} is not one of {}",
                names.join(", ")
            )));
        }
    }
    Ok(())
}

/// Each item is nemeses joined by `+`, each one of `names`.
fn known_nemeses(flag: &str, items: &[String], names: &[&str]) -> Result<()> {
    for item in items {
        known(flag, &list(flag, item, '+')?, names)?;
    }
    Ok(())
}
