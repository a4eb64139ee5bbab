//! Where nodes live. A node is one isolated host with its own address on the run's private
//! network: a lock-service server, the protected resource, or a client.

pub mod netns;

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;

use anyhow::Result;

/// The node the protected resource runs on.
pub const RESOURCE_NODE: &str = "resource";

#[derive(Clone, Debug)]
pub struct Node {
    /// The node's name inside the run (`n1`, `resource`, `c0`).
    pub name: String,
    /// The name the runtime gave it on the machine (carries the run's prefix).
    pub host_name: String,
    pub ip: Ipv4Addr,
}

/// A way to make nodes. Contract: everything it creates carries the run's prefix, and
/// `teardown` removes all of it, even after a partial `add_node`.
pub trait Runtime {
    /// Adds a node with its own address on the run's private network.
    fn add_node(&mut self, name: &str) -> Result<Node>;

    /// A command that will run `program` inside `node`. The process is put in its own process
    /// group (Ctrl-C reaches only the controller, which tears down in order) and is killed if the
    /// controller dies. Spawn it from the main thread: the kernel's parent-death signal follows
    /// the spawning thread.
    fn command(&self, node: &Node, program: &Path) -> Result<Command>;

    /// The node's network namespace, for threads that must create sockets inside it (the delay
    /// proxies).
    fn network_namespace(&self, node: &Node) -> Result<std::fs::File>;

    /// Runs `probe` with its network inside `node`, e.g. to see whether a service answers.
    fn probe(&self, node: &Node, probe: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()>;

    /// Kills whatever still runs in the nodes and removes them and the network. Returns what
    /// could not be removed.
    fn teardown(&mut self) -> Vec<String>;
}
