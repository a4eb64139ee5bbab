//! Where nodes live. A node is one isolated host with its own address on the run's private
//! network: a lock-service server, the protected resource, or a client.
//!
//! Runtimes are a catalogue like locks and nemeses: `RUNTIMES` lists them, `--runtime` picks
//! one by name, and the run's setup creates it through `find`.

pub mod docker;
pub mod faketime;
pub mod firewall;
pub mod ip_command;
pub mod leftovers;
pub mod netns;
pub mod process_spec;
pub mod program;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Result;
use nix::unistd::Pid;

use crate::processes::freezer;
use crate::processes::node_process::NodeProcess;
use firewall::{Direction, NodeNft, PartitionMode};
use process_spec::ProcessSpec;

use leftovers::{Leftover, Removal};

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

    /// Starts a process on `node` as `spec` describes it (the servers, the resource, the
    /// clients): the program is the harness's or the node's own, by `spec.programs`. The
    /// process is put in its own process group (Ctrl-C reaches only the controller, which tears
    /// down in order) and is killed if the controller dies. Call it from the main thread: the
    /// kernel's parent-death signal follows the spawning thread.
    fn spawn(&self, node: &Node, spec: &ProcessSpec) -> Result<Box<dyn NodeProcess>>;

    /// A command that runs the host's `program` with its network inside `node`, under the
    /// process rules of `spawn`: for the harness's own short tools (nft), run to completion on
    /// this machine. A runtime whose nodes live elsewhere runs those its own way (it overrides
    /// the verbs that use them).
    fn command(&self, node: &Node, program: &Path) -> Result<Command>;

    /// Finds `program` where `spawn` would run the node's own programs.
    fn find_program(&self, _node: &Node, program: &str) -> Option<PathBuf> {
        crate::runtime::program::find_program(program)
    }

    /// Why a server on `node` cannot run under libfaketime, if it cannot.
    fn refuses_faketime(&self, _node: &Node) -> Option<String> {
        None
    }

    /// What the setup line records about the runtime beyond its name (the images in use).
    fn facts(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// The node's network namespace, for threads that must create sockets inside it (the delay
    /// proxies).
    fn network_namespace(&self, node: &Node) -> Result<std::fs::File>;

    /// Runs `probe` with its network inside `node`, e.g. to see whether a service answers.
    fn probe(&self, node: &Node, probe: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()>;

    /// Kills whatever still runs in the nodes and removes them and the network. Returns what
    /// could not be removed.
    fn teardown(&mut self) -> Vec<String>;

    // What faults do to nodes. A process is the one `spawn` started on `node`, by its pid
    // there. The defaults serve runtimes whose processes run
    // on this machine (netns, docker): signals, the kernel's word in /proc, nft inside the
    // node's network; a runtime whose nodes live elsewhere overrides them. Every answer is what
    // the node's kernel reports, not what was asked: the history's evidence.

    /// Stops the process with its descendants (SIGSTOP); whether the kernel reported them all
    /// stopped within a moment.
    fn freeze(&self, _node: &Node, pid: Pid) -> Result<bool> {
        freezer::freeze(pid)
    }

    /// Resumes the process and its descendants (SIGCONT); one already gone needs no resuming.
    fn thaw(&self, _node: &Node, pid: Pid) -> Result<()> {
        freezer::thaw(pid)
    }

    /// The process's state letter as its kernel reports it (`T` stopped, `Z` a zombie), `None`
    /// when it has none.
    fn process_state(&self, _node: &Node, pid: Pid) -> Option<char> {
        freezer::state(pid)
    }

    /// The process's state once a resume has had a moment to show: SIGCONT is asynchronous.
    fn resumed_state(&self, node: &Node, pid: Pid) -> Option<char> {
        let deadline = std::time::Instant::now() + Duration::from_millis(200);
        while self.process_state(node, pid) == Some('T') && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.process_state(node, pid)
    }

    /// Kills the process with its descendants at once (SIGKILL) and reaps it; whether it is
    /// gone afterwards.
    fn kill(&self, _node: &Node, process: &mut dyn NodeProcess) -> bool {
        let pid = freezer::kill_tree(process);
        !Path::new(&format!("/proc/{pid}")).exists()
    }

    /// Gives the node its firewall, nothing blocked yet: what a partition (`mode`) does to the
    /// packets it stops, and a chain for packet loss.
    fn install_firewall(&self, node: &Node, mode: PartitionMode) -> Result<()> {
        with_nft(self, node, |nft| firewall::install(nft, mode))
    }

    /// Stops the node hearing from (`In`) or sending to (`Out`) these addresses.
    fn block(&self, node: &Node, entries: &[(Direction, Ipv4Addr)]) -> Result<()> {
        with_nft(self, node, |nft| firewall::change(nft, "add", entries))
    }

    /// Lifts blocks of `block`.
    fn unblock(&self, node: &Node, entries: &[(Direction, Ipv4Addr)]) -> Result<()> {
        with_nft(self, node, |nft| firewall::change(nft, "delete", entries))
    }

    /// Drops `percent` of the node's packets, both ways.
    fn lose(&self, node: &Node, percent: u8) -> Result<()> {
        with_nft(self, node, |nft| firewall::lose(nft, percent))
    }

    /// Ends the node's packet loss.
    fn stop_loss(&self, node: &Node) -> Result<()> {
        with_nft(self, node, firewall::stop_loss)
    }

    /// Packets the node's firewall has dropped or rejected since it was installed.
    fn dropped_packets(&self, node: &Node) -> Result<u64> {
        with_nft(self, node, firewall::dropped)
    }

    /// Sets the wall clock of a server that runs under libfaketime with the timestamp `file`
    /// to true time plus `offset_ms`: the file is the host's, seen by the server at the same
    /// path.
    fn set_faketime_offset(&self, _node: &Node, file: &Path, offset_ms: i64) -> Result<()> {
        crate::runtime::faketime::set_offset(file, offset_ms)
    }
}

/// Runs `act` with the node's `nft` as `runtime` runs it (inside the node's network).
fn with_nft<R: Runtime + ?Sized, T>(
    runtime: &R,
    node: &Node,
    act: impl FnOnce(&NodeNft) -> Result<T>,
) -> Result<T> {
    let nft = || runtime.command(node, Path::new("nft"));
    act(&NodeNft {
        name: &node.name,
        nft: &nft,
    })
}

/// What a runtime is created with.
pub struct RuntimeSettings<'a> {
    /// The run's prefix: every name the runtime gives carries it.
    pub prefix: &'a str,
    /// The run's private /24.
    pub subnet: [u8; 3],
    /// The lock service the servers run (`redis`, `etcd`, `zookeeper`).
    pub service: &'a str,
    /// The server nodes, by name; every other node is a client or the resource.
    pub servers: &'a [String],
    /// `--image service=<image>`: the server image asked for, by service.
    pub images: &'a BTreeMap<String, String>,
    /// Host folders the servers must see at the same path (the run's folder, its scratch).
    pub shared: Vec<PathBuf>,
}

/// One entry of the runtime catalogue.
pub trait RuntimeKind: Sync {
    /// The `--runtime` value.
    fn name(&self) -> &'static str;

    /// One line for `--help`.
    fn about(&self) -> &'static str;

    /// Why this runtime cannot be used on this machine with these images, if it cannot (the run
    /// stops with exit 254 and this line before anything is created). `faketime`: a clock
    /// nemesis will run the servers under libfaketime.
    fn unavailable(
        &self,
        service: &str,
        images: &BTreeMap<String, String>,
        faketime: bool,
    ) -> Option<String>;

    /// Whether a server's own process can be reached by its host pid, so its vDSO can be
    /// patched through ptrace (clock nemeses on a service whose clock moves that way).
    fn server_pids_reachable(&self) -> bool {
        true
    }

    /// Whether the servers run the host's installed programs (else an image's).
    fn servers_from_host(&self) -> bool {
        true
    }

    /// Whether a client's program is a child of the client process the controller started,
    /// so its pid can be found and its vDSO patched (`skew-clients` on an `exec:` lock).
    fn client_programs_reachable(&self) -> bool {
        true
    }

    fn create(&self, settings: &RuntimeSettings) -> Result<Box<dyn Runtime>>;

    /// What runs of this runtime left on this machine, of every run prefix; nothing when the
    /// runtime has nothing to ask (no engine). `complain` hears of what carries a run's mark
    /// but cannot be a run's (it is left alone).
    fn leftovers(&self, complain: &mut dyn FnMut(String)) -> Vec<Leftover>;

    /// Removes leftovers of one run, all of them in its record and its controller gone (on a
    /// `dry_run`, only says what it would remove).
    fn remove(&self, leftovers: &[Leftover], dry_run: bool) -> Removal;
}

pub static RUNTIMES: &[&dyn RuntimeKind] = &[&netns::Netns, &docker::Docker];

pub fn find(name: &str) -> Option<&'static dyn RuntimeKind> {
    RUNTIMES.iter().copied().find(|r| r.name() == name)
}

pub fn names() -> Vec<&'static str> {
    RUNTIMES.iter().map(|r| r.name()).collect()
}

impl std::fmt::Debug for dyn RuntimeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
#[path = "node_verbs_tests.rs"]
mod node_verbs_tests;
