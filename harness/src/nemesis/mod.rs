//! The catalogue of nemeses: the faults of a run. Each nemesis is one self-describing entry: its
//! name, what it needs from a lock and a run (`needs`: refusals come from capabilities, never
//! from a table of names), and what it aims at (`aim`: a random server or client, the holder,
//! or windows it draws itself), which says what sets it off and how it begins on what it hits.
//! A fault it begins knows how to end itself; both ends are recorded in the history with
//! evidence that they took effect.
//!
//! Nemeses act only through the cluster's paired verbs (freeze/thaw, partition/repair,
//! kill/restart, shift/unshift a clock, delay/undelay), never on a runtime's internals.
//!
//! Adding a nemesis: a file here with its entry, and one line in [`NEMESES`] (plus its `mod`).

pub mod aim;
mod clock_holder;
mod clock_jump;
pub mod context;
mod delay_client;
mod delay_holder_write;
mod kill_client;
mod kill_node;
mod leader;
mod leader_aim;
mod loss;
mod needs;
mod partition;
mod partition_holder;
mod pause_holder;
mod pause_node;
mod skew_clients;
pub mod window;

use std::fmt;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

pub use aim::{Aim, Begun};
pub use context::{Context, Holder};
pub use needs::Needs;

use crate::runtime::firewall::PartitionMode;

/// Every nemesis lockpick knows, in the order `--help` lists them.
pub static NEMESES: &[&dyn Nemesis] = &[
    &pause_holder::PauseHolder,
    &pause_node::PauseNode,
    &partition::PARTITION_NODE,
    &partition::PARTITION_HALVES,
    &partition::PARTITION_RING,
    &partition::PARTITION_BRIDGE,
    &partition::PARTITION_CLIENT,
    &partition_holder::PartitionHolder,
    &partition::PARTITION_ONE_WAY,
    &clock_jump::CLOCK_FORWARD,
    &clock_jump::CLOCK_BACKWARD,
    &clock_jump::CLOCK_STROBE,
    &clock_holder::ClockHolder,
    &skew_clients::SkewClients,
    &kill_node::KillNode,
    &leader::KILL_LEADER,
    &leader::PAUSE_LEADER,
    &leader::PARTITION_LEADER,
    &kill_client::KillClient,
    &delay_holder_write::DelayHolderWrite,
    &delay_client::DelayClient,
    &loss::Loss,
];

/// The word for "no faults" on the command line.
pub const NONE: &str = "none";

/// Finds a nemesis by its name.
pub fn find(name: &str) -> Option<&'static dyn Nemesis> {
    NEMESES.iter().copied().find(|n| n.name() == name)
}

/// The names of every nemesis.
pub fn names() -> Vec<&'static str> {
    NEMESES.iter().map(|n| n.name()).collect()
}

/// What opens a fault once its window has begun.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The window's start.
    Time,
    /// The next successful acquire: the fault hits the new holder.
    Acquired,
    /// The next successful read of the resource by a holder.
    Read,
}

/// The run's knobs that shape faults, as the configuration checked them from the
/// [fault flags](crate::cli::FaultFlags). The run's config.json records them beside its other
/// parameters (durations in milliseconds).
#[derive(Clone, Debug, Serialize)]
pub struct FaultKnobs {
    /// How long each fault lasts when --fault-duration is given (else twice the TTL, the
    /// default of most nemeses): see `RunConfig::duration_of`.
    #[serde(serialize_with = "as_millis")]
    pub fault_duration: Duration,
    /// Whether --fault-duration was given; otherwise each nemesis uses its own default.
    pub fault_duration_given: bool,
    #[serde(serialize_with = "as_millis")]
    pub fault_interval: Duration,
    pub partition_mode: PartitionMode,
    #[serde(serialize_with = "as_millis")]
    pub clock_jump: Duration,
    #[serde(serialize_with = "as_millis")]
    pub delay: Duration,
    pub loss: u8,
    /// No client process starts after this (ns since the run began): a replacement gets it.
    #[serde(skip)]
    pub client_deadline_ns: u64,
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

/// One kind of fault. Contract: the `begin` its [`Aim`] calls records the fault's start
/// (through [`Context::started`]) only if it took hold, and returns what undoes it; `None` means
/// there was nothing to hit. Entries are stateless: one value serves every run.
pub trait Nemesis: Sync {
    /// The name users type (`--nemesis pause-holder`).
    fn name(&self) -> &'static str;

    /// One line for `--help` and the README.
    fn about(&self) -> &'static str;

    /// What the nemesis needs from the lock and the run.
    fn needs(&self) -> Needs {
        Needs::default()
    }

    /// How long one fault lasts when --fault-duration is not given: long enough to show the
    /// fault's classic failure on a lock with lease `ttl`.
    fn default_duration(&self, ttl: Duration) -> Duration {
        ttl * 2
    }

    /// The critical section the fault needs to show its classic failure, when --work is not
    /// given (`None`: the default one will do).
    fn default_work(&self, _ttl: Duration) -> Option<Duration> {
        None
    }

    /// What its faults hit, and so when they go off and how each begins there.
    fn aim(&self) -> Aim<'_>;
}

impl fmt::Debug for dyn Nemesis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A fault in progress. Contract: `end` undoes it and records its stop with the start's id.
pub trait Fault {
    /// Called every few milliseconds while the fault lasts (a strobing clock flips here).
    fn tick(&mut self, _ctx: &mut Context) -> Result<()> {
        Ok(())
    }

    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nemesis_has_a_unique_name_that_is_not_none() {
        let mut names = names();
        names.sort();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count);
        assert!(!names.contains(&NONE));
        for name in names {
            assert_eq!(find(name).map(|n| n.name()), Some(name));
        }
    }
}
