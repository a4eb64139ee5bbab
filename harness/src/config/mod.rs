//! A run's configuration, validated from the command line before anything is created.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

mod derived;
mod duration;
mod fault_knobs;
mod from_args;
pub mod restarts;
mod runtime_choice;
pub mod server_bin;

pub use crate::bad_input::{bad, BadInput};
pub use duration::parse_duration;

use crate::cli::{Fencing, Until};
use crate::locks::Lock;
use crate::nemesis::{FaultKnobs, Nemesis};
use crate::runtime::RuntimeKind;
use crate::service::persistence::Persistence;

/// Everything a run needs, checked. Defaults are documented on the flags in `cli`.
#[derive(Clone, Debug, Serialize)]
pub struct RunConfig {
    #[serde(serialize_with = "lock_name")]
    pub lock: &'static dyn Lock,
    /// The nemeses to compose; empty means no faults.
    #[serde(serialize_with = "nemesis_names")]
    pub nemeses: Vec<&'static dyn Nemesis>,
    pub clients: u32,
    #[serde(serialize_with = "as_millis")]
    pub ttl: Duration,
    #[serde(serialize_with = "as_millis")]
    pub time_limit: Duration,
    pub fencing: Fencing,
    pub seed: u64,
    #[serde(serialize_with = "as_millis")]
    pub work: Duration,
    /// Healed time at the end of the workload.
    #[serde(serialize_with = "as_millis")]
    pub quiet: Duration,
    /// The knobs that shape faults (config.json records them among the run's own).
    #[serde(flatten)]
    pub faults: FaultKnobs,
    /// What each server keeps on disk across a restart (`--persistence`); `None` for a lock
    /// whose servers take no such knob.
    pub persistence: Option<Persistence>,
    /// A schedule to replay instead of drawing one.
    pub schedule: Option<PathBuf>,
    #[serde(serialize_with = "as_millis")]
    pub op_timeout: Duration,
    /// How long a certainly free lock may be refused to everyone before it is jammed; `None`:
    /// the liveness checker's default from the TTL.
    #[serde(serialize_with = "as_optional_millis")]
    pub jam_bound: Option<Duration>,
    pub store: PathBuf,
    /// Where the nodes live.
    #[serde(serialize_with = "runtime_name")]
    pub runtime: &'static dyn RuntimeKind,
    /// Server images by service (`--runtime docker`).
    pub images: BTreeMap<String, String>,
    /// Server programs by service, instead of the host's packages (`--server-bin`).
    pub server_bins: BTreeMap<String, PathBuf>,
    /// When the workload ends: at the time limit, or at the first proven violation.
    pub until: Until,
    /// `--wait-replicas`: the replicas each grant waits for (a lock that replicates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_replicas: Option<u32>,
    /// The exact command line, to reproduce the run.
    pub command: Vec<String>,
}

fn lock_name<S: serde::Serializer>(lock: &&'static dyn Lock, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(lock.name())
}

fn runtime_name<S: serde::Serializer>(
    runtime: &&'static dyn RuntimeKind,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(runtime.name())
}

fn nemesis_names<S: serde::Serializer>(
    nemeses: &[&'static dyn Nemesis],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(nemeses.iter().map(|n| n.name()))
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

fn as_optional_millis<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&(d.as_millis() as u64)),
        None => s.serialize_none(),
    }
}

pub const MAX_CLIENTS: u32 = 200;

/// The critical section when neither --work nor a nemesis asks for another.
const DEFAULT_WORK: Duration = Duration::from_millis(100);
/// The shortest request timeout a client can honour: its requests' timeouts count in whole
/// milliseconds, and a zero socket timeout would mean "never".
pub const MIN_OP_TIMEOUT: Duration = Duration::from_millis(1);

/// The nemeses' names as `--nemesis` takes them.
fn names(nemeses: &[&dyn Nemesis]) -> String {
    let names: Vec<&str> = nemeses.iter().map(|n| n.name()).collect();
    names.join(",")
}
