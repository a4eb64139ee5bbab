//! The harness's `setup` line, typed once here: the harness writes it from [`SetupRecord`],
//! the checkers read the part they judge by ([`Setup`]) and the outputs read the rest (what ran
//! where), so no reader indexes the line by key. The fields are documented in
//! `checkers/HISTORY.md`; every one may be missing from an older history.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The run's own description of itself, from the `setup` operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    #[serde(default)]
    pub lock: String,
    /// An exec lock's short name, when it was given one (`--name`): what outputs call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_name: Option<String>,
    /// Which fencing token the lock gives, e.g. "none" or "the lock key's create revision".
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub ttl_ms: u64,
    /// "on" or "off": whether the resource rejects lower tokens.
    #[serde(default)]
    pub fencing: String,
    /// The nemeses asked for, joined by `+`; `"none"` for none. Absent in old histories.
    #[serde(default)]
    pub nemesis: Option<String>,
    /// The longest a lease can outlive the last moment its holder's process ran; `None` when
    /// the lock renews nothing (the acquire's own `expires_by` bounds it) or it is not known.
    #[serde(default)]
    pub lease_silence_ms: Option<u64>,
    /// How long the lock may stay refused to everyone while certainly free before it counts as
    /// jammed (`--jam-bound`); `None`: the liveness checker's default from the TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jam_bound_ms: Option<u64>,
}

impl Setup {
    /// What outputs call the lock: its short name, else its name.
    pub fn label(&self) -> &str {
        self.lock_name.as_deref().unwrap_or(&self.lock)
    }

    /// [`crate::model::Model::mutual_exclusion_breaker`], from the setup line alone.
    pub fn mutual_exclusion_breaker(setup: Option<&Setup>) -> &'static str {
        match setup {
            Some(s) if s.lock.starts_with("exec:") => "the lock (service or client)",
            _ => "the lock service",
        }
    }

    /// Whether the lock promises fencing tokens.
    pub fn gives_tokens(&self) -> bool {
        !self.token.is_empty() && self.token != "none"
    }

    /// Whether the resource checked the tokens the lock promises.
    pub fn fenced_with_tokens(&self) -> bool {
        self.fencing == "on" && self.gives_tokens()
    }

    /// The nemeses asked for, by name; empty for `none` or an old history without the field.
    pub fn nemeses(&self) -> Vec<&str> {
        match self.nemesis.as_deref() {
            None | Some("none") | Some("") => Vec::new(),
            Some(names) => names.split('+').filter(|n| !n.is_empty()).collect(),
        }
    }
}

/// The whole `setup` line: what the checkers judge by, and what ran where. What ran where only
/// describes the run, so a field of it in another shape (a foreign or damaged history) reads as
/// missing: it costs the outputs a fact, never the history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SetupRecord {
    #[serde(flatten)]
    pub checked: Setup,
    #[serde(default, deserialize_with = "lenient")]
    pub clients: Option<u64>,
    /// The seed every random choice of the run came from.
    #[serde(default, deserialize_with = "lenient")]
    pub seed: Option<u64>,
    /// The run's name on the machine.
    #[serde(default, deserialize_with = "lenient")]
    pub prefix: Option<String>,
    /// The lock servers' addresses.
    #[serde(default, deserialize_with = "lenient")]
    pub servers: Vec<String>,
    /// The runtime the nodes ran in (`netns`, `docker`); absent in older histories: `netns`.
    #[serde(default, deserialize_with = "lenient")]
    pub runtime: Option<String>,
    /// What the runtime says of itself (the Docker runtime's images, say); `null` when it says
    /// nothing. Each runtime has its own facts, so they stay open.
    #[serde(default, deserialize_with = "lenient")]
    pub runtime_facts: Option<BTreeMap<String, Value>>,
    /// What the lock service's setup chose that a reader needs (a Sentinel failover's
    /// timeouts); absent when it says nothing. Each service has its own, so they stay open.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub service_facts: Option<BTreeMap<String, Value>>,
    /// Each service's server version, when it told.
    #[serde(default, deserialize_with = "lenient")]
    pub server_versions: BTreeMap<String, String>,
    /// Each service's server program, when `--server-bin` chose it.
    #[serde(default, deserialize_with = "lenient")]
    pub server_bins: BTreeMap<String, String>,
    /// What each server kept on disk across a restart (`--persistence`: `none`,
    /// `aof-everysec`, `aof-always`); absent for a lock whose servers take no such knob, and in
    /// older histories.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub persistence: Option<String>,
}

impl SetupRecord {
    /// The runtime's fact `key` when it is words (`server_image`).
    pub fn runtime_fact(&self, key: &str) -> Option<&str> {
        self.runtime_facts.as_ref()?.get(key)?.as_str()
    }
}

fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let value = Value::deserialize(deserializer)?;
    Ok(T::deserialize(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_back_as_written() {
        let line = serde_json::json!({
            "lock": "redis", "token": "none", "ttl_ms": 1000, "lease_silence_ms": 1000,
            "fencing": "off", "nemesis": "pause-holder", "clients": 3, "seed": 7,
            "prefix": "lp1", "servers": ["10.0.0.2:6379"], "runtime": "netns",
            "runtime_facts": null, "server_versions": {"redis": "7.0.15"}, "server_bins": {},
            "persistence": "aof-always",
        });
        let record: SetupRecord = serde_json::from_value(line.clone()).unwrap();
        assert_eq!(record.checked.nemeses(), ["pause-holder"]);
        assert_eq!(record.server_versions["redis"], "7.0.15");
        assert_eq!(record.persistence.as_deref(), Some("aof-always"));
        assert_eq!(serde_json::to_value(&record).unwrap(), line);
    }

    #[test]
    fn an_old_line_reads_with_what_it_has() {
        let old = serde_json::json!({"lock": "redis", "ttl_ms": 1000});
        let record: SetupRecord = serde_json::from_value(old).unwrap();
        assert_eq!(record.checked.lock, "redis");
        assert_eq!((record.seed, record.runtime.as_deref()), (None, None));
        let foreign = serde_json::json!({"lock": "redis", "server_versions": ["7"], "seed": -1});
        let record: SetupRecord = serde_json::from_value(foreign).unwrap();
        assert!(record.server_versions.is_empty());
        assert_eq!((record.checked.lock.as_str(), record.seed), ("redis", None));
        let wrong = serde_json::json!({"lock": "redis", "ttl_ms": "long"});
        assert!(serde_json::from_value::<SetupRecord>(wrong).is_err());
    }
}
