//! The flags that tune faults, declared once: `lockpick run` and `lockpick compare` flatten
//! them, and a matrix file's `[knobs]` names them by the same words. The configuration checks
//! them into the nemeses' [`FaultKnobs`](crate::nemesis::FaultKnobs).

use clap::Args;
use serde::{Deserialize, Serialize};

use super::values::duration_word;
use crate::runtime::firewall::PartitionMode;

/// The mean quiet time between two faults when `--fault-interval` is not given.
pub const DEFAULT_FAULT_INTERVAL: &str = "1s";
/// The percent of packets the loss nemesis drops when `--loss` is not given.
pub const DEFAULT_LOSS: u8 = 30;

/// The fault flags, as typed. None has a clap default: an unset flag must stay unset, so that a
/// comparison hands a cell only what was given (a matrix file's value applies otherwise). The
/// defaults the help tells are applied where the configuration checks the flags.
///
/// Each field's name is its flag (`--clock-jump`) and its matrix key (`clock-jump =`), so
/// [`FaultFlags::or`] and [`FaultFlags::words`] go through serde rather than a list of fields.
#[derive(Args, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct FaultFlags {
    /// How long each fault lasts: a pause, a partition, a kill's downtime (unless
    /// --restart-after is given), a clock jump [default: each nemesis's own, twice the TTL for
    /// most; kill-node restarts within the lease, after a quarter of the TTL].
    #[arg(long, alias = "pause", allow_hyphen_values = true, value_parser = duration_word)]
    pub fault_duration: Option<String>,
    /// Mean quiet time between two faults of a nemesis (each is drawn from 0.5x to 1.5x this)
    /// [default: 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub fault_interval: Option<String>,
    /// Partitions drop packets, or reject them with a TCP reset [default: drop].
    #[arg(long, value_enum)]
    pub partition_mode: Option<PartitionMode>,
    /// How far clock nemeses move a clock [default: twice the TTL].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub clock_jump: Option<String>,
    /// How long delay-holder-write and delay-client hold a client's traffic [default: twice the
    /// TTL].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub delay: Option<String>,
    /// Percent of packets the loss nemesis drops [default: 30].
    #[arg(long)]
    pub loss: Option<u8>,
    /// How long a server that a nemesis kills (kill-node, kill-leader) stays down before it restarts with
    /// the same command: the kill's fault window lasts this long, in place of --fault-duration,
    /// which goes on shaping the other nemeses' faults [default: --fault-duration if given,
    /// else a quarter of the TTL].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub restart_after: Option<String>,
}

impl FaultFlags {
    /// These flags, each unset one taken from `fallback`.
    pub fn or(&self, fallback: &FaultFlags) -> FaultFlags {
        super::flag_words::or(self, fallback)
    }

    /// The set flags as `lockpick run` words, each value one whole word.
    pub fn words(&self) -> Vec<String> {
        super::flag_words::words(self)
    }

    /// The duration flags as typed, by name without the dashes, for a caller that checks them
    /// under its own names (a matrix file's keys).
    pub fn durations(&self) -> [(&'static str, &Option<String>); 5] {
        [
            ("fault-duration", &self.fault_duration),
            ("fault-interval", &self.fault_interval),
            ("clock-jump", &self.clock_jump),
            ("delay", &self.delay),
            ("restart-after", &self.restart_after),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_flags_come_from_the_fallback_and_become_whole_words() {
        let given = FaultFlags {
            clock_jump: Some("3s".to_string()),
            loss: Some(50),
            ..FaultFlags::default()
        };
        let file = FaultFlags {
            clock_jump: Some("1s".to_string()),
            partition_mode: Some(PartitionMode::Reject),
            fault_duration: Some("2 s".to_string()),
            ..FaultFlags::default()
        };
        let merged = given.or(&file);
        assert_eq!(merged.clock_jump.as_deref(), Some("3s"));
        assert_eq!(merged.partition_mode, Some(PartitionMode::Reject));
        assert_eq!(
            merged.words(),
            [
                "--clock-jump",
                "3s",
                "--fault-duration",
                "2 s",
                "--loss",
                "50",
                "--partition-mode",
                "reject"
            ]
        );
        assert!(FaultFlags::default().words().is_empty());
        assert_eq!(FaultFlags::default().or(&given), given);
    }

    #[test]
    fn every_flag_reads_back_the_words_it_gives() {
        use clap::Parser;
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            faults: FaultFlags,
        }
        let set = FaultFlags {
            fault_duration: Some("2s".to_string()),
            fault_interval: Some("500ms".to_string()),
            partition_mode: Some(PartitionMode::Reject),
            clock_jump: Some("4s".to_string()),
            delay: Some("1s".to_string()),
            loss: Some(7),
            restart_after: Some("3s".to_string()),
        };
        let words = std::iter::once("lockpick".to_string()).chain(set.words());
        assert_eq!(Flags::parse_from(words).faults, set);
    }
}
