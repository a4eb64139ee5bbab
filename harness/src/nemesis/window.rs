//! What the schedule says about one fault: when its window opens, how long it lasts and what it
//! hits. Plain data, shared by the schedule that draws windows and the nemeses that act on them.

use serde::{Deserialize, Serialize};

pub use crate::runtime::RESOURCE_NODE;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// The nemesis's name in the catalogue (`pause-node`).
    pub nemesis: String,
    /// Milliseconds after the run began.
    pub start_ms: u64,
    pub duration_ms: u64,
    /// Nodes (`n1`, `c0`) the fault acts on; empty for lock-aware faults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// For partitions: pairs of nodes that cannot talk. With `one_way`, only the second stops
    /// hearing the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_way: bool,
}

/// What kind of node a nemesis's windows name, so a replayed schedule can be checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Targets {
    /// Lock-service servers.
    Servers,
    /// Client nodes.
    Clients,
    /// Nobody in advance: a lock-aware fault hits the holder when it goes off.
    Holder,
    /// The server the service names as leader when the fault opens: the window names
    /// [`LEADER`] rather than a node.
    Leader,
}

/// What a leader nemesis's window names as its target: whichever server leads when it opens.
pub const LEADER: &str = "leader";

/// The nodes a schedule can aim at.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Lock-service servers (`n1`, …).
    pub servers: Vec<String>,
    /// Client nodes (`c0`, …).
    pub clients: Vec<String>,
    /// Every other node (the resource).
    pub others: Vec<String>,
}

impl Shape {
    /// The shape of a run with `servers` servers and `clients` clients; node names are the
    /// same in every runtime.
    pub fn of(servers: usize, clients: usize) -> Shape {
        Shape {
            servers: (1..=servers).map(|i| format!("n{i}")).collect(),
            clients: (0..clients).map(|i| format!("c{i}")).collect(),
            others: vec![RESOURCE_NODE.to_string()],
        }
    }

    pub fn everyone(&self) -> impl Iterator<Item = &String> {
        self.servers.iter().chain(&self.clients).chain(&self.others)
    }

    /// Whether `node` is one of the shape's nodes.
    pub fn has(&self, node: &str) -> bool {
        self.everyone().any(|n| n == node)
    }
}
