//! `--persistence`: what a Redis server keeps on its own disk, so that a server the run kills
//! and restarts comes back with the locks it had granted, or empty. A service whose servers are
//! redis-server says so in its catalogue entry (`persistence: Support::Yes`) and gives each
//! server the words of `service::redis::persistence_args`; any other service's entry says why
//! the knob means nothing to it, and the configuration refuses it there with that reason.
//!
//! The nemeses kill a process, not the machine: what redis-server has written survives a
//! SIGKILL whether or not it was fsynced. So `aof-always` keeps every acknowledged write, while
//! `aof-everysec` can lose only a write the server had not yet handed to the kernel (it delays
//! the write, not just the fsync, while an earlier fsync is slow).

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Persistence {
    /// Nothing on disk: a restarted server comes back empty (the servers' default here).
    #[default]
    None,
    /// An append-only file, fsynced once a second.
    AofEverysec,
    /// An append-only file, fsynced before every reply.
    AofAlways,
}

impl Persistence {
    /// The word `--persistence` takes for it.
    pub fn name(self) -> &'static str {
        match self {
            Persistence::None => "none",
            Persistence::AofEverysec => "aof-everysec",
            Persistence::AofAlways => "aof-always",
        }
    }

    /// Whether the servers write anything, and so need a data folder each.
    pub fn keeps_data(self) -> bool {
        self != Persistence::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_choice_is_its_own_word() {
        for p in Persistence::value_variants() {
            let word = p.to_possible_value().unwrap();
            assert_eq!(word.get_name(), p.name());
            assert_eq!(serde_json::to_value(p).unwrap(), p.name());
        }
    }
}
