//! One run, in phases (as Jepsen's `run!`), each in its own file: [`preflight`] checks the
//! input and the machine; [`setup`] makes the nodes, the lock service, the resource and the
//! clients; [`events`] runs the clients under the nemeses until the time limit, heals every
//! fault and takes the final read; teardown stops everything and removes every node; then the
//! history is checked, the verdict decided once, and every output written from it.
//!
//! Teardown does not depend on reaching the end: the processes and the runtime undo themselves
//! when dropped, which also happens on an error or a panic; Ctrl-C and SIGTERM end the workload
//! phase early and take the same path.

mod events;
mod preflight;
mod progress;
mod setup;

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use lockpick_checkers::model::Model;
use lockpick_checkers::{Results, Validity};
use serde::Serialize;

pub use crate::scratch::SCRATCH_ROOT;
pub use preflight::preflight;

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
    /// Why the verdict is not what the history alone would say (crashed clients, interrupted).
    pub downgraded: Vec<String>,
    /// The model the checkers judged (empty if the history was malformed).
    pub model: Model,
    /// What the report read off the history beside the model (setup, times, acquire latencies).
    pub history: HistoryFacts,
}

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
    /// Why the verdict is `unknown` although the history alone would say `valid`.
    downgraded: &'a [String],
    config: &'a RunConfig,
    /// Each service's server version, as the setup line records it.
    server_versions: &'a serde_json::Value,
    /// Each service's server program (an executable, or ZooKeeper's folder of jars).
    server_bins: &'a serde_json::Value,
}

/// Runs one test and checks its history. `interrupt` is set by Ctrl-C or SIGTERM.
pub fn run(config: &RunConfig, interrupt: Arc<AtomicBool>) -> Result<Finished> {
    preflight(config)?;
    let prefix = RunPrefix::claim()?;
    let files = [
        (store::COMMAND, shell_words::join(&config.command) + "\n"),
        (store::CONFIG, serde_json::to_string_pretty(config)? + "\n"),
    ];
    let dir = store::create_run_dir(&config.store, &config.name(), &files)?;
    eprintln!(
        "lockpick: {} with {} clients, TTL {:?}, fencing {}, seed {}, for {:?} (run {}, in {})",
        config.name(),
        config.clients,
        config.ttl,
        config.fencing.name(),
        config.seed,
        config.time_limit,
        prefix.name,
        dir.display()
    );

    let mut workload = setup::setup(config, &prefix, &dir)?;
    let outcome = workload.execute(config, &interrupt);
    workload.teardown();
    let interrupted = outcome?;
    let crashed_clients = std::mem::take(&mut workload.crashed_clients);
    drop(workload);

    let mut loaded = crate::report::load(&dir)?;
    let downgraded = decide(&mut loaded.results, interrupted, &crashed_clients);
    let setup = &loaded.history.setup;
    let run_results = RunResults {
        run: RunInfo {
            name: config.name(),
            prefix: &prefix.name,
            seed: config.seed,
            interrupted,
            crashed_clients: &crashed_clients,
            downgraded: &downgraded,
            config,
            server_versions: &setup["server_versions"],
            server_bins: &setup["server_bins"],
        },
        results: &loaded.results,
    };
    fs::write(
        dir.join(store::RESULTS),
        serde_json::to_string_pretty(&run_results)? + "\n",
    )?;
    crate::report::write_run_reports(&dir, &loaded)?;
    crate::summary_md::write_run(&dir, config, &loaded.results)?;
    crate::report::write_index(&config.store)?;
    Ok(Finished {
        dir,
        results: loaded.results,
        interrupted,
        crashed_clients,
        downgraded,
        model: loaded.model,
        history: loaded.history,
    })
}

/// Decides the run's verdict once, before any output is written: what the history proves, less
/// what the run could not vouch for. A violation found stays a violation (a partial history
/// proves what it shows); a valid history of a run whose clients crashed, or that was
/// interrupted, is `unknown`, since the lock was not exercised as configured.
fn decide(results: &mut Results, interrupted: bool, crashed_clients: &[String]) -> Vec<String> {
    let mut reasons = Vec::new();
    if !crashed_clients.is_empty() {
        reasons.push(format!(
            "{} client(s) crashed or hung: the lock was not exercised as configured",
            crashed_clients.len()
        ));
    }
    if interrupted {
        reasons.push("the run was interrupted: the history is partial".to_string());
    }
    if results.valid == Validity::Valid && !reasons.is_empty() {
        results.valid = Validity::Unknown;
    }
    results.unknown_reasons.extend(reasons.iter().cloned());
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(valid: Validity) -> Results {
        lockpick_checkers::check(&[]).tap(valid)
    }

    trait Tap {
        fn tap(self, valid: Validity) -> Results;
    }

    impl Tap for Results {
        fn tap(mut self, valid: Validity) -> Results {
            self.valid = valid;
            self
        }
    }

    #[test]
    fn a_valid_history_of_an_interrupted_run_is_unknown() {
        let mut r = results(Validity::Valid);
        let reasons = decide(&mut r, true, &[]);
        assert_eq!(r.valid, Validity::Unknown);
        assert_eq!(reasons.len(), 1);
    }

    #[test]
    fn a_violation_stays_a_violation_when_clients_crashed() {
        let mut r = results(Validity::Invalid);
        decide(&mut r, false, &["client 3 exited with 101".to_string()]);
        assert_eq!(r.valid, Validity::Invalid);
    }

    #[test]
    fn a_complete_valid_run_stays_valid() {
        let mut r = results(Validity::Valid);
        assert!(decide(&mut r, false, &[]).is_empty());
        assert_eq!(r.valid, Validity::Valid);
    }
}
