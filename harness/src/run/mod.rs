//! One run, in phases (as Jepsen's `run!`), each in its own file: [`preflight`] checks the
//! input and the machine; [`setup`] makes the nodes, the lock service, the resource and the
//! clients; [`events`] runs the clients under the nemeses until the time limit, heals every
//! fault and takes the final read; teardown stops everything and removes every node; then the
//! history is checked, the verdict decided once, and every output written from it.
//!
//! Teardown does not depend on reaching the end: the processes and the runtime undo themselves
//! when dropped, which also happens on an error or a panic; Ctrl-C and SIGTERM end the workload
//! phase early and take the same path.

mod decided;
mod events;
mod preflight;
mod progress;
mod quiet;
pub mod scheduler;
mod setup;
pub mod startup_gate;
pub mod startup_times;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use lockpick_checkers::model::Model;
use lockpick_checkers::Results;
use serde::Serialize;

pub use crate::scratch::SCRATCH_ROOT;
pub use preflight::{preflight, require_programs};

use crate::config::RunConfig;
use crate::report::HistoryFacts;
use crate::run_prefix::RunPrefix;
use crate::store;

/// What a finished run hands back to the command line.
pub struct Finished {
    pub dir: PathBuf,
    /// The checkers' results, with the run's own verdict: `valid` is what every output says.
    pub results: Results,
    pub interrupted: bool,
    /// Clients that exited on their own with an error, as "client 3 exited with …".
    pub crashed_clients: Vec<String>,
    /// What teardown could not end or remove (a process still alive, a node): the run's
    /// results stand, but the command fails, since something of the run may still act.
    pub left_behind: Vec<String>,
    /// The model the checkers judged (empty if the history was malformed).
    pub model: Model,
    /// What the report read off the history beside the model (setup, times, acquire latencies).
    pub history: HistoryFacts,
    /// How long the run took to reach contention.
    pub startup: startup_times::StartupTimes,
}

impl Finished {
    /// Fails if teardown left part of the run behind (each part already told on stderr): a
    /// command that goes on to further runs (a comparison's next cell, a shrink's next replay)
    /// stops there, as `run` fails, since something of this run may still act.
    pub fn left_nothing_behind(&self) -> Result<()> {
        if self.left_behind.is_empty() {
            return Ok(());
        }
        Err(LeftBehind {
            dir: self.dir.clone(),
        }
        .into())
    }
}

/// Teardown left part of the run in `dir` behind: an error that stops every command going on
/// to further runs, whatever it was doing (a shrink of one cell stops the whole comparison),
/// and keeps the run's folder, which it names.
#[derive(Debug)]
pub struct LeftBehind {
    pub dir: PathBuf,
}

impl std::fmt::Display for LeftBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "teardown left part of the run at {} behind (see above); `lockpick clean` removes \
             it once it can",
            self.dir.display()
        )
    }
}

impl std::error::Error for LeftBehind {}

/// `results.json`: the checkers' results and how the run went.
#[derive(Serialize)]
struct RunResults<'a> {
    run: RunInfo<'a>,
    #[serde(flatten)]
    results: &'a Results,
}

#[derive(Serialize)]
struct RunInfo<'a> {
    name: String,
    prefix: &'a str,
    seed: u64,
    interrupted: bool,
    crashed_clients: &'a [String],
    config: &'a RunConfig,
    /// What outputs call the lock: its name, or an exec lock's short name (`--name`).
    lock_name: &'static str,
    /// Each service's server version, as the setup line records it.
    server_versions: &'a BTreeMap<String, String>,
    /// The libraries the client programs named in their hellos (an exec lock's).
    client_libraries: &'a [String],
    /// Each service's server program (an executable, or ZooKeeper's folder of jars).
    server_bins: &'a BTreeMap<String, String>,
    /// What the service's setup chose (a Sentinel failover's timeouts), as the setup line
    /// records it.
    #[serde(skip_serializing_if = "Option::is_none")]
    service_facts: Option<&'a BTreeMap<String, serde_json::Value>>,
    /// How long the run took to reach contention, phase by phase.
    startup: &'a startup_times::StartupTimes,
}

/// Runs one test and checks its history. `interrupt` is set by Ctrl-C or SIGTERM.
pub fn run(
    config: &RunConfig,
    interrupt: Arc<AtomicBool>,
    summary: crate::report::summary_md::RunSummary,
) -> Result<Finished> {
    let begun = std::time::Instant::now();
    preflight(config)?;
    let mut prefix = RunPrefix::claim()?;
    let files = [
        (store::COMMAND, shell_words::join(&config.command) + "\n"),
        (store::CONFIG, serde_json::to_string_pretty(config)? + "\n"),
    ];
    let dir = store::create_run_dir(&config.store, &config.name(), &files)?;
    crate::tell!(
        "lockpick: {} with {} clients, TTL {:?}, fencing {}, seed {}, for {:?} (run {}, in {})",
        config.name(),
        config.clients,
        config.ttl,
        config.fencing.name(),
        config.seed,
        config.time_limit,
        prefix.name,
        crate::text::terminal::field(&dir.display().to_string())
    );

    let (mut workload, startup) = setup::setup(config, &prefix, &dir, begun)?;
    let decider = (config.until == crate::cli::Until::Decided)
        .then(|| decided::Decider::new(dir.join(store::HISTORY)));
    let outcome = workload.execute(config, &interrupt, decider, dir.join(store::HISTORY));
    let left_behind = workload.teardown();
    if !left_behind.is_empty() {
        prefix.keep_record();
    }
    let interrupted = outcome?;
    let crashed_clients = std::mem::take(&mut workload.crashed_clients);
    drop(workload);

    // The verdict is the checkers' alone: the history holds how the run ended (`run-end`),
    // so a crashed client or an interruption makes it unknown there, for every later reader too.
    let loaded = crate::report::load(&dir)?;
    let startup = startup.with_first_contended(&dir.join(store::HISTORY));
    let setup = &loaded.history.setup_record;
    let run_results = RunResults {
        run: RunInfo {
            name: config.name(),
            prefix: &prefix.name,
            seed: config.seed,
            interrupted,
            crashed_clients: &crashed_clients,
            config,
            lock_name: config.lock.label(),
            server_versions: &setup.server_versions,
            client_libraries: &loaded.history.libraries,
            server_bins: &setup.server_bins,
            service_facts: setup.service_facts.as_ref(),
            startup: &startup,
        },
        results: &loaded.results,
    };
    crate::files::safe_write::write_new(
        &dir.join(store::RESULTS),
        serde_json::to_string_pretty(&run_results)? + "\n",
    )?;
    crate::report::write_run_reports(&dir, &loaded)?;
    crate::report::summary_md::write_run(&dir, config, &loaded.results, summary)?;
    crate::report::write_index(&config.store)?;
    Ok(Finished {
        dir,
        results: loaded.results,
        interrupted,
        crashed_clients,
        left_behind,
        model: loaded.model,
        history: loaded.history,
        startup,
    })
}
