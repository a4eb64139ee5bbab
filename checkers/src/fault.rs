//! The nemesis's records of a fault, typed once here: the harness writes a fault's start and
//! stop from these types, and the model reads them back into the same types, so no reader
//! matches a fault by its name or parses a target by hand. The wire shape (a fault's name, a
//! target's words) is the history's, documented in `checkers/HISTORY.md`; every name or
//! target a history may hold reads back, an unfamiliar one as [`FaultKind::Other`] or
//! [`Target::Node`], so old histories and histories of newer nemeses still read.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// What a fault does, by the name its records give it (`fault`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// `pause`: a process frozen (SIGSTOP) and later resumed: a client or a server.
    Pause,
    /// `kill`: a process killed (SIGKILL), restarted or replaced at the stop.
    Kill,
    /// `delay`: a client's traffic held back in the delay proxies.
    Delay,
    /// `skew`: a client's own clock skewed.
    Skew,
    /// `loss`: a share of a server's packets dropped.
    Loss,
    /// A cut of the network, named by the nemesis that made it: `partition-node`,
    /// `partition-holder`, … (the name starts with `partition`).
    Partition(String),
    /// Servers' clocks shifted, named by the nemesis that shifted them: `clock-forward`,
    /// `clock-holder`, … (the name starts with `clock`).
    Clock(String),
    /// Any other name: a fault of a nemesis this version does not know.
    Other(String),
}

impl FaultKind {
    /// The kind a record's name gives.
    pub fn of_name(name: &str) -> FaultKind {
        match name {
            "pause" => FaultKind::Pause,
            "kill" => FaultKind::Kill,
            "delay" => FaultKind::Delay,
            "skew" => FaultKind::Skew,
            "loss" => FaultKind::Loss,
            n if n.starts_with("partition") => FaultKind::Partition(n.to_string()),
            n if n.starts_with("clock") => FaultKind::Clock(n.to_string()),
            n => FaultKind::Other(n.to_string()),
        }
    }

    /// The name its records give it.
    pub fn name(&self) -> &str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::Kill => "kill",
            FaultKind::Delay => "delay",
            FaultKind::Skew => "skew",
            FaultKind::Loss => "loss",
            FaultKind::Partition(name) | FaultKind::Clock(name) | FaultKind::Other(name) => name,
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for FaultKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for FaultKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KindVisitor;
        impl Visitor<'_> for KindVisitor {
            type Value = FaultKind;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a fault's name")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<FaultKind, E> {
                Ok(FaultKind::of_name(s))
            }
        }
        deserializer.deserialize_str(KindVisitor)
    }
}

/// Whom a fault hits (`targets`): a client process, written `client 3`, or a node by its name
/// (a server `n1`, a client's node `c0`, the resource's node).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    Client(u64),
    Node(String),
}

impl Target {
    const CLIENT: &'static str = "client ";

    /// The target a record's words give: `client N` (N in its plain decimal form, so every
    /// target reads back as it was written) is a client; any other words name a node.
    pub fn of_words(words: &str) -> Target {
        match words.strip_prefix(Target::CLIENT).map(|n| (n, n.parse())) {
            Some((digits, Ok(n))) if u64::to_string(&n) == digits => Target::Client(n),
            _ => Target::Node(words.to_string()),
        }
    }

    /// The client process it is, if it is one.
    pub fn client(&self) -> Option<u64> {
        match self {
            Target::Client(n) => Some(*n),
            Target::Node(_) => None,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Client(n) => write!(f, "{}{n}", Target::CLIENT),
            Target::Node(name) => f.write_str(name),
        }
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TargetVisitor;
        impl Visitor<'_> for TargetVisitor {
            type Value = Target;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a fault's target: \"client N\" or a node's name")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Target, E> {
                Ok(Target::of_words(s))
            }
        }
        deserializer.deserialize_str(TargetVisitor)
    }
}

/// The targets joined for a sentence: `client 3`, `n1, n2`.
pub fn targets_text(targets: &[Target]) -> String {
    let words: Vec<String> = targets.iter().map(Target::to_string).collect();
    words.join(", ")
}

/// The fields every `nemesis` `start` and `stop` value carries; a fault's own details (its
/// duration, its trigger, its evidence) sit beside them in the same object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// A stop carries its start's id.
    pub id: u64,
    pub fault: FaultKind,
    #[serde(default)]
    pub targets: Vec<Target>,
    /// Which of the setup's nemeses started it (absent in older histories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nemesis: Option<String>,
    /// Whether the fault was seen to take hold (absent: not said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_it_was_written() {
        for name in [
            "pause",
            "kill",
            "delay",
            "skew",
            "loss",
            "partition-holder",
            "clock-strobe",
            "marker",
            "",
        ] {
            let kind: FaultKind = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(serde_json::to_value(&kind).unwrap(), name);
        }
        assert_eq!(FaultKind::of_name("pause"), FaultKind::Pause);
        assert!(matches!(
            FaultKind::of_name("clock-holder"),
            FaultKind::Clock(_)
        ));
    }

    #[test]
    fn only_a_plain_client_number_is_a_client() {
        assert_eq!(Target::of_words("client 3"), Target::Client(3));
        for words in [
            "client 03",
            "client -1",
            "client ",
            "client 3 ",
            "n1",
            "c0",
            "clients 2",
        ] {
            let target = Target::of_words(words);
            assert_eq!(target, Target::Node(words.to_string()), "{words}");
            assert_eq!(target.to_string(), words);
        }
        let big = format!("client {}", u64::MAX);
        assert_eq!(Target::of_words(&big), Target::Client(u64::MAX));
        assert_eq!(
            Target::of_words("client 99999999999999999999999"),
            Target::Node("client 99999999999999999999999".to_string())
        );
    }

    #[test]
    fn a_record_keeps_the_history_shape() {
        let record = FaultRecord {
            id: 4,
            fault: FaultKind::Pause,
            targets: vec![Target::Client(2), Target::Node("n1".to_string())],
            nemesis: Some("pause-holder".to_string()),
            effective: None,
        };
        let value = serde_json::to_value(&record).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"id": 4, "fault": "pause", "targets": ["client 2", "n1"],
                               "nemesis": "pause-holder"})
        );
        let back: FaultRecord = serde_json::from_value(value).unwrap();
        assert_eq!(back, record);
        let wrong = serde_json::json!({"id": 1, "fault": 3, "targets": []});
        assert!(serde_json::from_value::<FaultRecord>(wrong).is_err());
        let wrong = serde_json::json!({"id": 1, "fault": "kill", "targets": [7]});
        assert!(serde_json::from_value::<FaultRecord>(wrong).is_err());
    }
}
