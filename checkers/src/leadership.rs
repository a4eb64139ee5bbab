//! Who led a replicated service around a fault, as a leader nemesis records it (the fields are
//! in `checkers/HISTORY.md`): the leader when the fault opened (`leader`, on its start), the
//! leader the other servers named before the fault healed (`leader_after`, on its stop), and
//! whether leadership moved (`leadership_moved`), and the moves that carry leadership from one
//! server to another between two grants.
//!
//! Read tolerantly: a history is hostile input, and these fields only ever add a proof (a lock
//! lost in a failover), never take one away, so a field of the wrong shape reads as absent
//! rather than making the whole history malformed.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::FaultWindow;
use crate::words::seconds;

/// One server as the leader: its node's name, the address clients reach it at (the string a
/// grant's `nodes` names) and the service's count of leaderships, when it gave one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leader {
    pub node: String,
    pub address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub term: Option<u64>,
}

impl Leader {
    /// The leader a record names: an object with a non-empty string `node` and `address`, and a
    /// `term` that is a whole number, `null` or absent. Anything else names no leader.
    pub fn of_value(value: &Value) -> Option<Leader> {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let term = match value.get("term") {
            None | Some(Value::Null) => None,
            Some(term) => Some(term.as_u64()?),
        };
        Some(Leader {
            node: text("node")?,
            address: text("address")?,
            term,
        })
    }

    /// `n2 (10.77.3.2:6379, term 7)`.
    pub fn describe(&self) -> String {
        match self.term {
            Some(term) => format!("{} ({}, term {term})", self.node, self.address),
            None => format!("{} ({})", self.node, self.address),
        }
    }
}

/// The leadership fields of a nemesis `start` or `stop` value, undecoded: each is read on its
/// own by [`Leader::of_value`] or as a boolean, so a wrong shape loses only that field.
#[derive(Default, Deserialize)]
#[serde(default)]
pub(crate) struct LeadershipFields {
    pub(crate) leader: Value,
    pub(crate) leader_after: Value,
    pub(crate) leadership_moved: Value,
}

impl LeadershipFields {
    /// `leadership_moved`, when it is a boolean.
    pub(crate) fn moved(&self) -> Option<bool> {
        self.leadership_moved.as_bool()
    }
}

/// A fault whose records prove leadership moved from one server to another: its start names
/// the leader, its stop the leader after, with `leadership_moved: true`, and the two are
/// different servers.
#[derive(Clone, Copy, Debug)]
pub struct Move<'m> {
    pub fault: &'m FaultWindow,
    pub from: &'m Leader,
    pub to: &'m Leader,
    /// When the new leader was named (the fault's stop).
    pub by: u64,
}

impl<'m> Move<'m> {
    /// The move a fault window records, if it proves one.
    pub fn of(fault: &'m FaultWindow) -> Option<Move<'m>> {
        let (from, to) = (fault.leader.as_ref()?, fault.leader_after.as_ref()?);
        let moved = fault.leadership_moved == Some(true) && from.address != to.address;
        Some(Move {
            fault,
            from,
            to,
            by: fault.stop?,
        })
        .filter(|_| moved)
    }

    /// `leadership moved from n1 (…) to n2 (…) in the kill of n1 (named by 2.345 s)`.
    pub fn describe(&self) -> String {
        format!(
            "leadership moved from {} to {} in the {} (the new leader named at {}, before it healed)",
            self.from.describe(),
            self.to.describe(),
            self.fault.describe(),
            seconds(self.by)
        )
    }
}

/// The moves that carry leadership from the server at `from` to the one at `to`, each fault
/// opening once the one before had stopped (and naming as leader the server the one before
/// moved it to), the last opening no later than `before`; `None` when the faults prove no such
/// chain. The shortest-lived chain is taken: each server is reached by the move that named it
/// earliest.
pub fn moves_between<'m>(
    faults: &'m [FaultWindow],
    from: &str,
    to: &str,
    before: u64,
) -> Option<Vec<Move<'m>>> {
    let mut moves: Vec<Move<'m>> = faults
        .iter()
        .filter(|w| w.start <= before)
        .filter_map(Move::of)
        .collect();
    moves.sort_by_key(|m| (m.fault.start, m.by));
    // Each server leadership is proven to have reached, with when it was named and how.
    let mut reached: HashMap<&str, (u64, Vec<Move<'m>>)> = HashMap::new();
    reached.insert(from, (0, Vec::new()));
    for m in moves {
        let Some((at, chain)) = reached.get(m.from.address.as_str()) else {
            continue;
        };
        if *at > m.fault.start {
            continue;
        }
        let mut chain = chain.clone();
        chain.push(m);
        match reached.get(m.to.address.as_str()) {
            Some((known, _)) if *known <= m.by => {}
            _ => {
                reached.insert(m.to.address.as_str(), (m.by, chain));
            }
        }
    }
    reached
        .remove(to)
        .map(|(_, chain)| chain)
        .filter(|chain| !chain.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_whole_leader_record_names_a_leader() {
        let good = json!({"node": "n2", "address": "10.0.0.2:6379", "term": 7});
        let leader = Leader::of_value(&good).unwrap();
        assert_eq!(leader.describe(), "n2 (10.0.0.2:6379, term 7)");
        let no_term = json!({"node": "n2", "address": "10.0.0.2:6379", "term": null});
        assert_eq!(Leader::of_value(&no_term).unwrap().term, None);
        for bad in [
            json!(null),
            json!("n2"),
            json!([1, 2]),
            json!({"node": "n2"}),
            json!({"node": "n2", "address": 6379}),
            json!({"node": "", "address": "10.0.0.2:6379"}),
            json!({"node": "n2", "address": "10.0.0.2:6379", "term": -1}),
            json!({"node": "n2", "address": "10.0.0.2:6379", "term": "7"}),
        ] {
            assert_eq!(Leader::of_value(&bad), None, "{bad}");
        }
    }
}
