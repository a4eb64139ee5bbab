//! The flags that shape one run, declared once: `lockpick run` and `lockpick compare` flatten
//! them, and a matrix file's `[knobs]` names them by the same words. None has a clap default,
//! so that a comparison hands a cell only what was given (a matrix file's value applies
//! otherwise); the defaults the help tells are the accessors' below, which the configuration
//! reads.

use clap::Args;
use serde::{Deserialize, Serialize};

use super::flag_words;
use super::values::{duration_word, runtime_values};
use crate::service::persistence::Persistence;

/// Each field's name is its flag (`--time-limit`) and its matrix key (`time-limit =`), so
/// [`RunKnobs::or`] and [`RunKnobs::words`] go through serde rather than a list of fields.
#[derive(Args, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RunKnobs {
    /// How long clients contend for the lock before the heal phase (e.g. `30s`, `2m`)
    /// [default: 30s; 10s for each cell of a comparison].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub time_limit: Option<String>,
    /// Number of client processes contending for the lock [default: 5].
    #[arg(long)]
    pub clients: Option<u32>,
    /// Lease time of the lock (e.g. `1s`, `500ms`) [default: 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub ttl: Option<String>,
    /// Time a client spends between its read and its write of the resource [default: 100ms,
    /// or longer where a nemesis needs a long critical section to show its classic failure,
    /// e.g. 1.5 x the TTL for partition-holder].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub work: Option<String>,
    /// Time at the end of the run with every fault healed, while clients go on [default: 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub quiet: Option<String>,
    /// Client-side timeout of each request to a lock service or the resource; must be shorter
    /// than the TTL [default: half the TTL, at most 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub op_timeout: Option<String>,
    /// How long the lock may be refused to everyone while certainly free (every earlier lease
    /// ended, nobody holding it), outside server faults and their recovery, before it counts as
    /// jammed [default: three TTLs, at least 3s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub jam_bound: Option<String>,
    /// Where the nodes live [default: netns].
    #[arg(long, value_parser = runtime_values())]
    pub runtime: Option<String>,
    /// The server image of a service under `--runtime docker`, as `service=image`
    /// (e.g. `redis=redis:7.4`); repeat for several services (in a matrix file:
    /// `image = [...]`).
    #[arg(long = "image", value_name = "SERVICE=IMAGE")]
    #[serde(default, rename = "image", skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// Under `--runtime netns`, the server a service runs instead of the host's package, as
    /// `service=path` (e.g. `redis=/opt/redis-7.4/redis-server`; ZooKeeper by the folder of its
    /// jars); repeat for several services (in a matrix file: `server-bin = [...]`).
    #[arg(long = "server-bin", value_name = "SERVICE=PATH")]
    #[serde(default, rename = "server-bin", skip_serializing_if = "Vec::is_empty")]
    pub server_bins: Vec<String>,
    /// What each redis-server keeps on disk, so that a server killed and restarted (kill-node)
    /// comes back with the locks it granted: `none`, or an append-only file fsynced every
    /// second or before every reply; only for locks whose servers are redis-server
    /// [default: none].
    #[arg(long, value_enum)]
    pub persistence: Option<Persistence>,
    /// After each grant, `WAIT` until this many replicas have the lock's key, or refuse the
    /// grant (a lock whose servers replicate: redis-sentinel) [default: no WAIT].
    #[arg(long)]
    pub wait_replicas: Option<u32>,
}

impl RunKnobs {
    /// These knobs, each unset one taken from `fallback` (a list given at all replaces the
    /// fallback's whole list).
    pub fn or(&self, fallback: &RunKnobs) -> RunKnobs {
        flag_words::or(self, fallback)
    }

    /// The set knobs as `lockpick run` words, each value one whole word.
    pub fn words(&self) -> Vec<String> {
        flag_words::words(self)
    }

    /// The duration knobs as typed, by name without the dashes, for a caller that checks them
    /// under its own names (a matrix file's keys).
    pub fn durations(&self) -> [(&'static str, &Option<String>); 6] {
        [
            ("time-limit", &self.time_limit),
            ("ttl", &self.ttl),
            ("work", &self.work),
            ("quiet", &self.quiet),
            ("op-timeout", &self.op_timeout),
            ("jam-bound", &self.jam_bound),
        ]
    }

    /// `--time-limit`, or a run's default.
    pub fn time_limit(&self) -> &str {
        self.time_limit.as_deref().unwrap_or("30s")
    }

    /// `--clients`, or the default.
    pub fn clients(&self) -> u32 {
        self.clients.unwrap_or(5)
    }

    /// `--ttl`, or the default.
    pub fn ttl(&self) -> &str {
        self.ttl.as_deref().unwrap_or("1s")
    }

    /// `--quiet`, or the default.
    pub fn quiet(&self) -> &str {
        self.quiet.as_deref().unwrap_or("1s")
    }

    /// `--runtime`, or the default.
    pub fn runtime(&self) -> &str {
        self.runtime.as_deref().unwrap_or("netns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_reads_back_the_words_it_gives() {
        use clap::Parser;
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            knobs: RunKnobs,
        }
        let set = RunKnobs {
            time_limit: Some("12s".to_string()),
            clients: Some(3),
            ttl: Some("2s".to_string()),
            work: Some("50ms".to_string()),
            quiet: Some("2s".to_string()),
            op_timeout: Some("400ms".to_string()),
            jam_bound: Some("9s".to_string()),
            runtime: Some("docker".to_string()),
            images: vec!["redis=redis:7.4".to_string(), "etcd=etcd:3".to_string()],
            server_bins: vec!["redis=/opt/redis-server".to_string()],
            persistence: Some(Persistence::AofEverysec),
            wait_replicas: Some(1),
        };
        let words = std::iter::once("lockpick".to_string()).chain(set.words());
        assert_eq!(Flags::parse_from(words).knobs, set);
        // Every duration knob is one of `durations`: a matrix file's key is checked as its own.
        let durations: Vec<&str> = set
            .durations()
            .iter()
            .filter(|(_, value)| value.is_some())
            .map(|(key, _)| *key)
            .collect();
        let strings = set
            .words()
            .into_iter()
            .filter_map(|w| w.strip_prefix("--").map(str::to_string))
            .filter(|key| {
                ![
                    "clients",
                    "runtime",
                    "image",
                    "server-bin",
                    "persistence",
                    "wait-replicas",
                ]
                .contains(&key.as_str())
            })
            .count();
        assert_eq!(durations.len(), strings);
    }

    #[test]
    fn unset_knobs_and_empty_lists_come_from_the_fallback() {
        let given = RunKnobs {
            ttl: Some("2s".to_string()),
            images: vec!["redis=redis:7.4".to_string()],
            ..RunKnobs::default()
        };
        let file = RunKnobs {
            ttl: Some("5s".to_string()),
            clients: Some(2),
            images: vec!["redis=redis:6.2".to_string(), "etcd=etcd:3".to_string()],
            server_bins: vec!["redis=/opt/redis-server".to_string()],
            ..RunKnobs::default()
        };
        let merged = given.or(&file);
        assert_eq!(merged.ttl.as_deref(), Some("2s"));
        assert_eq!(merged.clients, Some(2));
        assert_eq!(merged.images, ["redis=redis:7.4"]);
        assert_eq!(merged.server_bins, ["redis=/opt/redis-server"]);
        assert!(RunKnobs::default().words().is_empty());
        assert_eq!(RunKnobs::default().or(&given), given);
    }
}
