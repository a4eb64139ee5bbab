//! What a run says about itself: the `config.json` that `lockpick run` writes, and the `setup`
//! line at the head of its history. A folder that only holds a history (`lockpick report` on a
//! history made elsewhere) still has the setup line, so every fact falls back to it.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, FixedOffset, NaiveDateTime, Utc};
use lockpick_checkers::setup::SetupRecord;
use serde_json::{Map, Value};

use super::HistoryFacts;
use crate::store;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunFacts {
    pub lock: String,
    /// The nemeses by name; empty when the run injected no faults.
    pub nemeses: Vec<String>,
    pub fencing: Option<String>,
    pub seed: Option<u64>,
    pub clients: Option<u64>,
    /// Server name and version, when the setup line carries them.
    pub server_versions: Vec<(String, String)>,
    /// The libraries the client programs named in their hellos (an exec lock's).
    pub libraries: Vec<String>,
    /// What ran the servers, beside their versions, as (what, which) rows: the runtime, each
    /// service's server program, the runtime's facts (the images in use).
    pub servers: Vec<(String, String)>,
    /// When the run began, if known.
    pub started: Option<DateTime<FixedOffset>>,
    /// From the first operation to the last.
    pub duration: Duration,
    /// The run's parameters as recorded (config.json, else the setup line), for the reader.
    pub parameters: Map<String, Value>,
}

impl RunFacts {
    /// The facts of the run in `dir` whose config (as [`super::load`] read it) and history
    /// told `config` and `history`.
    pub fn gather(dir: &Path, config: &Value, history: &HistoryFacts) -> RunFacts {
        let mut facts = RunFacts::of(config, history);
        facts.started = dir
            .file_name()
            .and_then(|n| started_from_folder_name(&n.to_string_lossy()))
            .or_else(|| {
                // The history was last written when the run ended.
                let modified = fs::metadata(dir.join(store::HISTORY))
                    .ok()?
                    .modified()
                    .ok()?;
                let start = modified
                    .checked_sub(facts.duration)
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                Some(DateTime::<Utc>::from(start).fixed_offset())
            });
        facts
    }

    /// The facts from a run's config (`Value::Null` if it has none) and its history.
    pub fn of(config: &Value, history: &HistoryFacts) -> RunFacts {
        let setup = &history.setup_record;
        let (first, last) = (history.first, history.last);
        let recorded = |words: &str| (!words.is_empty()).then(|| words.to_string());
        let text = |key: &str, recorded: Option<String>| {
            config[key].as_str().map(str::to_string).or(recorded)
        };
        let nemeses = match config["nemeses"].as_array() {
            Some(list) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            None => setup
                .checked
                .nemeses()
                .into_iter()
                .map(str::to_string)
                .collect(),
        };
        // The parameters table shows the line as written, every field of it.
        let parameters = config
            .as_object()
            .or(history.setup.as_object())
            .cloned()
            .unwrap_or_default();
        RunFacts {
            lock: setup
                .checked
                .lock_name
                .clone()
                .or_else(|| text("lock", recorded(&setup.checked.lock)))
                .unwrap_or_else(|| "lock".to_string()),
            nemeses,
            fencing: text("fencing", recorded(&setup.checked.fencing)),
            seed: config["seed"].as_u64().or(setup.seed),
            clients: config["clients"].as_u64().or(setup.clients),
            server_versions: server_versions(&history.setup),
            libraries: history.libraries.clone(),
            servers: servers(&config["runtime"], setup),
            started: None,
            duration: Duration::from_nanos(last.saturating_sub(first)),
            parameters,
        }
    }

    /// The nemeses joined as the store names runs: `pause-holder+pause-node`, or `none`.
    pub fn nemesis_name(&self) -> String {
        if self.nemeses.is_empty() {
            "none".to_string()
        } else {
            self.nemeses.join("+")
        }
    }

    /// The run's name in the store: `redis-pause-holder`.
    pub fn name(&self) -> String {
        format!("{}-{}", self.lock, self.nemesis_name())
    }
}

/// The servers' versions, if the setup line names them: an object of server to version, a
/// list of versions, or one version for all. Read off the line as written, not its record:
/// histories made elsewhere name and shape them their own way.
fn server_versions(setup: &Value) -> Vec<(String, String)> {
    let Some(versions) = ["servers_versions", "server_versions", "versions"]
        .iter()
        .map(|key| &setup[key])
        .find(|v| !v.is_null())
    else {
        return Vec::new();
    };
    let words = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    match versions {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), words(v))).collect(),
        Value::Array(list) => list
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("server {i}"), words(v)))
            .collect(),
        other => vec![("servers".to_string(), words(other))],
    }
}

/// The runtime (config.json's, else the setup line's), each service's server program and the
/// runtime's facts, from the setup line.
fn servers(config_runtime: &Value, setup: &SetupRecord) -> Vec<(String, String)> {
    let words = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let mut rows = Vec::new();
    if let Some(runtime) = config_runtime.as_str().or(setup.runtime.as_deref()) {
        rows.push(("runtime".to_string(), runtime.to_string()));
    }
    let bins = setup.server_bins.iter();
    rows.extend(bins.map(|(s, p)| (format!("{s} server"), p.clone())));
    if let Some(facts) = &setup.runtime_facts {
        rows.extend(
            facts
                .iter()
                .filter(|(_, v)| !v.is_null() && v.as_str() != Some(""))
                .map(|(k, v)| (k.replace('_', " "), words(v))),
        );
    }
    rows
}

/// A run folder is named by its start time in UTC, `20250101T120000.000Z`, maybe with `-1`.
fn started_from_folder_name(name: &str) -> Option<DateTime<FixedOffset>> {
    let stamp = name.split('-').next()?;
    let naive = NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%S%.3fZ").ok()?;
    Some(naive.and_utc().fixed_offset())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockpick_checkers::{Op, OpType, Process, F};
    use serde_json::json;

    fn setup(value: Value) -> Op {
        Op::new(
            0,
            Process::named(Process::HARNESS),
            OpType::Info,
            F::Setup,
            value,
        )
    }

    #[test]
    fn the_setup_line_stands_in_for_a_missing_config() {
        let ops = [setup(
            json!({"lock": "etcd", "nemesis": "pause-node+kill-node",
            "fencing": "on", "seed": 7, "clients": 3,
            "servers_versions": {"n1": "3.5.9", "n2": "3.5.9"}}),
        )];
        let facts = RunFacts::of(&Value::Null, &HistoryFacts::of_ops(&ops));
        assert_eq!(facts.name(), "etcd-pause-node+kill-node");
        assert_eq!((facts.seed, facts.clients), (Some(7), Some(3)));
        assert_eq!(facts.fencing.as_deref(), Some("on"));
        assert_eq!(facts.server_versions.len(), 2);
        assert_eq!(facts.parameters["clients"], json!(3));
    }

    #[test]
    fn the_config_wins_over_the_setup_line_and_no_nemesis_reads_none() {
        let ops = [setup(json!({"lock": "etcd", "nemesis": "pause-node"}))];
        let config = json!({"lock": "redis", "nemeses": [], "seed": 9});
        let facts = RunFacts::of(&config, &HistoryFacts::of_ops(&ops));
        assert_eq!(facts.name(), "redis-none");
        assert_eq!(facts.seed, Some(9));
        assert!(facts.server_versions.is_empty());
    }

    #[test]
    fn the_servers_name_the_runtime_the_program_and_the_image() {
        let ops = [setup(json!({"lock": "redis", "runtime": "docker",
            "server_versions": {"redis": "7.4.1"},
            "server_bins": {"redis": "/usr/local/bin/redis-server"},
            "runtime_facts": {"server_image": "redis:7.4", "server_image_id": ""}}))];
        let facts = RunFacts::of(&Value::Null, &HistoryFacts::of_ops(&ops));
        let row = |what: &str, which: &str| (what.to_string(), which.to_string());
        assert_eq!(facts.server_versions, vec![row("redis", "7.4.1")]);
        assert_eq!(
            facts.servers,
            vec![
                row("runtime", "docker"),
                row("redis server", "/usr/local/bin/redis-server"),
                row("server image", "redis:7.4"),
            ]
        );
        let netns = RunFacts::of(
            &json!({"runtime": "netns"}),
            &HistoryFacts::of_ops(&ops[..0]),
        );
        assert_eq!(netns.servers, vec![row("runtime", "netns")]);
    }

    #[test]
    fn what_ran_where_in_another_shape_costs_only_those_facts() {
        let ops = [setup(json!({"lock": "etcd", "fencing": "on", "seed": 7,
            "runtime": ["docker"], "server_bins": "/bin/etcd", "runtime_facts": 3}))];
        let facts = RunFacts::of(&Value::Null, &HistoryFacts::of_ops(&ops));
        assert_eq!((facts.lock.as_str(), facts.seed), ("etcd", Some(7)));
        assert_eq!(facts.fencing.as_deref(), Some("on"));
        assert!(facts.servers.is_empty(), "{:?}", facts.servers);
        assert_eq!(facts.parameters["server_bins"], json!("/bin/etcd"));
    }

    #[test]
    fn a_run_folder_name_gives_the_start_time() {
        let started = started_from_folder_name("20250102T030405.678Z-1").unwrap();
        assert_eq!(started.to_rfc3339(), "2025-01-02T03:04:05.678+00:00");
        assert_eq!(started_from_folder_name("tmp.abc"), None);
    }
}
