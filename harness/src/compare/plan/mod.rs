//! Planning a comparison before any cell runs: the lists (from the flags, else the matrix file,
//! else the defaults) are checked against the catalogues, and each cell's configuration is built
//! exactly as `lockpick run` would build it. A cell whose lock refuses its nemesis is planned as
//! n/a with the configuration's own refusal, and the rest of the matrix still runs.

mod axes;
pub(crate) mod listing;
pub(crate) mod lock_entries;
pub mod matrix;
pub mod parallelism;

use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;

use crate::cli::{CellKnobs, CompareArgs, RunArgs, RunKnobs, Until};
use crate::compare::judge::cell::CellName;
use crate::compare::plan::matrix::{CellExpectation, Expectation, LockEntry, Matrix};
use crate::config::{bad, RunConfig};
use crate::run;

/// Parses the flags of one cell exactly as `lockpick run` would.
#[derive(Parser)]
struct CellCommand {
    #[command(flatten)]
    run: RunArgs,
}

use parallelism::{Parallelism, MAX_PARALLEL};

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
    /// How `parallel` was decided, and why.
    pub parallelism: Parallelism,
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
    let (given, repeat) = sizes(args, &matrix)?;
    let from_file = axes::of_file(&file, &matrix)?;
    check_file_knobs(&file, &matrix.knobs)?;
    let axes = axes::narrowed(args, from_file)?;
    let defaults = CellKnobs {
        run: RunKnobs {
            time_limit: Some(DEFAULT_TIME_LIMIT.to_string()),
            ..RunKnobs::default()
        },
        ..CellKnobs::default()
    };
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
    within_max_cells(&axes, args.max_cells)?;
    let every_cell = EveryCell {
        knobs: args.knobs.or(&matrix.knobs).or(&defaults),
        until,
        seeds: &seeds,
        store: &store,
        checks,
    };
    let cells = cells(&axes, &matrix, &every_cell)?;
    if let Some(refused) = cells.iter().find_map(|c| c.configs.as_ref().err()) {
        if cells.iter().all(|c| c.configs.is_err()) {
            return Err(bad(format!("no cell of the comparison can run: {refused}")));
        }
    }
    let costs: Vec<_> = (cells.iter())
        .filter_map(|c| c.configs.as_ref().ok()?.first())
        .map(|config| parallelism::cell_cost(config.lock))
        .collect();
    let parallelism = parallelism::decide(
        given,
        &costs,
        costs.len() * seeds.len(),
        parallelism::Machine::now(),
    );
    Ok(Plan {
        cells,
        seed,
        seeds,
        parallel: parallelism.at_once,
        parallelism,
        store,
        from_matrix: args.matrix.clone(),
    })
}

/// How many cells run at once if that is given (and where it came from; else it is decided
/// once the cells are planned), and how many repeats of each: their own step because each is
/// bounded, and the file's `at-least`s are held to the repeats.
fn sizes(args: &CompareArgs, matrix: &Matrix) -> Result<(Option<(usize, &'static str)>, usize)> {
    let given = match (args.parallel, matrix.parallel) {
        (Some(n), _) => Some((n, "--parallel")),
        (None, Some(n)) => Some((n, "parallel = in the matrix file:")),
        (None, None) => None,
    };
    if let Some((parallel, _)) = given {
        if parallel == 0 || parallel > MAX_PARALLEL {
            return Err(bad(format!(
                "--parallel {parallel} must be between 1 and {MAX_PARALLEL}"
            )));
        }
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
    Ok((given, repeat))
}

/// The product of the axes may not pass `--max-cells`: its own step because it is checked
/// before any cell is configured.
fn within_max_cells(axes: &axes::Axes, max_cells: usize) -> Result<()> {
    let axes::Axes {
        locks,
        nemeses,
        fencings,
    } = axes;
    let planned = locks
        .len()
        .saturating_mul(nemeses.len())
        .saturating_mul(fencings.len());
    if planned > max_cells {
        return Err(bad(format!(
            "the comparison has {planned} cells ({} locks × {} nemeses × {} fencing modes), more \
             than --max-cells {}: raise it to run them all",
            locks.len(),
            nemeses.len(),
            fencings.len(),
            max_cells
        )));
    }
    Ok(())
}

/// What every cell is configured with besides its name and lock.
struct EveryCell<'a> {
    knobs: CellKnobs,
    /// The comparison's `--until`; a cell held to anything but "invalid" runs its full time.
    until: Until,
    seeds: &'a [u64],
    store: &'a std::path::Path,
    checks: Checks,
}

/// Every cell of the product, with what it is held to and a configuration per repeat: its own
/// step because this is where the matrix becomes runs.
fn cells(axes: &axes::Axes, matrix: &Matrix, every: &EveryCell) -> Result<Vec<PlannedCell>> {
    let mut cells = Vec::new();
    for lock in &axes.locks {
        for nemesis in &axes.nemeses {
            for fencing in &axes.fencings {
                let name = CellName {
                    lock: lock.label().to_string(),
                    nemesis: nemesis.clone(),
                    fencing: fencing.clone(),
                };
                let expected = matrix.expectation(lock.label(), nemesis, fencing);
                // Only a cell that must show a violation is decided by its first one; a cell
                // held to anything else needs its full time to prove it.
                let decided = every.until == Until::Decided
                    && expected.expectations == [Expectation::Invalid];
                let cell_until = if decided {
                    Until::Decided
                } else {
                    Until::TimeLimit
                };
                let cell = Cell {
                    name: &name,
                    lock,
                    until: cell_until,
                };
                let configs = repeats(&cell, every)?;
                cells.push(PlannedCell {
                    expected,
                    name,
                    configs,
                });
            }
        }
    }
    Ok(cells)
}

/// One cell's configuration for each repeat, or why its lock refuses its nemesis: its own step
/// because one refusal makes the whole cell n/a.
fn repeats(cell: &Cell<'_>, every: &EveryCell) -> Result<Result<Vec<RunConfig>, String>> {
    let mut configs = Ok(Vec::new());
    for &seed in every.seeds {
        let configured = configure(cell, &every.knobs, seed, every.store, every.checks)?;
        match (configured, &mut configs) {
            (Ok(config), Ok(configs)) => configs.push(config),
            (Err(refused), _) => configs = Err(refused),
            (Ok(_), Err(_)) => {}
        }
    }
    Ok(configs)
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
fn at_least_fits(group: &crate::compare::plan::matrix::ExpectGroup, repeat: usize) -> Result<()> {
    let Some(k) = group.at_least else {
        return Ok(());
    };
    if !group
        .expectations()
        .contains(&crate::compare::plan::matrix::Expectation::Invalid)
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
        Err(e) if refuses(&lock.lock, &name.nemesis, knobs) => Ok(Err(e.to_string())),
        Err(e) => Err(e),
    }
}

/// Whether the cell's lock refuses one of its nemeses, by the nemesis's needs against the lock's
/// capabilities, or a knob means nothing to the cell (`--persistence` on a lock whose servers
/// are not redis-server, `--restart-after` where no nemesis kills a server): the same tests the
/// configuration makes.
fn refuses(lock: &str, nemesis: &str, knobs: &CellKnobs) -> bool {
    let Some(lock) = crate::locks::find(lock) else {
        return false;
    };
    let nemeses: Vec<_> = nemesis
        .split('+')
        .filter_map(crate::nemesis::find)
        .collect();
    let persistence = knobs.run.persistence;
    let restart_after = knobs.faults.restart_after.as_deref();
    nemeses
        .iter()
        .any(|n| n.needs().refusal(&lock.capabilities()).is_some())
        || crate::config::restarts::refusal(lock, &nemeses, persistence, restart_after).is_some()
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
