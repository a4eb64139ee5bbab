//! Everything a run has set up, and the verbs a nemesis acts through. Faults come in pairs, as
//! in turmoil: freeze/thaw, kill/restart, partition/repair, lose/stop_loss, shift/unshift a
//! clock, skew/unskew a client, delay/undelay a link. A nemesis never touches the runtime, the
//! processes or the files behind them; the cluster keeps the state that makes faults on one
//! target compose (how many pauses hold a server, which clock shifts are open on it, which
//! partitions need a blocked address); what a fault does to a node's process or network is the
//! runtime's verb (`Runtime::freeze`, `block`, ...), so nodes may live elsewhere.

mod client_clock;
mod clock;
mod clock_vdso;
pub mod delay_proxy;
mod network;
mod process_faults;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::time::Duration;

use anyhow::{Context, Result};
use lockpick_workloads::resource_client::{FinalRead, FinalState, WorkerHello};

pub use client_clock::SkewEvidence;
pub use clock::{ClockEvidence, ClockShift};
pub use network::Links;
pub use process_faults::{KilledServer, Restarted, Thawed};

use crate::cluster::delay_proxy::DelayLink;
use crate::processes::children::{read_ops, Children, Event, Role};
use crate::processes::node_process::NodeProcess;
use crate::runtime::process_spec::{ProcessSpec, Programs, Stream};
use crate::runtime::{Node, Runtime};
use crate::scratch::Scratch;
use crate::service::entry::ClockMover;
use crate::service::{Launch, LockService};

/// How to start a client process; the parts that differ per client are added by `spawn_client`.
pub struct ClientCommand {
    pub program: PathBuf,
    /// What every client gets (lock, TTL, timeouts); process, servers, resource, deadline and
    /// skew file are filled in per client, since a delay proxy may stand in front of them.
    pub spec: lockpick_workloads::client_spec::ClientSpec,
    pub resource: SocketAddr,
    pub logs: PathBuf,
    /// The run's secret, which the resource and each worker get on standard input.
    pub secret: String,
    /// How `skew-clients` moves these clients' clocks.
    pub clock_mover: crate::locks::ClientClockMover,
}

pub struct Cluster {
    // Field order is drop order: processes first, then the links and files they use, then the
    // namespaces they live in.
    children: Children,
    /// Each client node's proxied link to the resource (only with delay nemeses).
    resource_links: BTreeMap<String, DelayLink>,
    /// Each client node's proxied links to the servers, by server (only with `delay-client`).
    server_links: BTreeMap<String, BTreeMap<String, DelayLink>>,
    service: Box<dyn LockService>,
    scratch: Scratch,
    runtime: Box<dyn Runtime>,
    nodes: BTreeMap<String, Node>,
    /// Lock-service servers by node name, and the address clients reach each at.
    endpoints: BTreeMap<String, SocketAddr>,
    launches: BTreeMap<String, Launch>,
    /// The process running in each client node now.
    slots: BTreeMap<String, u64>,
    /// The client node of every client process started, running or not.
    client_nodes: BTreeMap<u64, String>,
    /// How many open pauses hold each server.
    frozen_servers: BTreeMap<String, usize>,
    /// When the harness killed each client it killed (ns since the run began, read before the
    /// kill): its death is no earlier.
    killed_clients: BTreeMap<u64, u64>,
    network: network::NetworkState,
    clocks: clock::ClockState,
    next_process: u64,
    client_command: ClientCommand,
    events: Option<Sender<Event>>,
}

/// What a cluster is made of, once the setup phase has started everything but the clients.
pub struct Parts {
    pub children: Children,
    pub service: Box<dyn LockService>,
    pub scratch: Scratch,
    pub runtime: Box<dyn Runtime>,
    pub nodes: BTreeMap<String, Node>,
    pub endpoints: BTreeMap<String, SocketAddr>,
    pub launches: BTreeMap<String, Launch>,
    pub client_command: ClientCommand,
    pub events: Sender<Event>,
}

impl Cluster {
    pub fn new(parts: Parts) -> Cluster {
        let clock_mover = crate::service::catalogue::find(parts.service.name())
            .map_or(ClockMover::Faketime, |entry| entry.clock_mover);
        Cluster {
            children: parts.children,
            resource_links: BTreeMap::new(),
            server_links: BTreeMap::new(),
            service: parts.service,
            scratch: parts.scratch,
            runtime: parts.runtime,
            nodes: parts.nodes,
            endpoints: parts.endpoints,
            launches: parts.launches,
            slots: BTreeMap::new(),
            client_nodes: BTreeMap::new(),
            frozen_servers: BTreeMap::new(),
            killed_clients: BTreeMap::new(),
            network: Default::default(),
            clocks: clock::ClockState::new(clock_mover),
            next_process: 0,
            client_command: parts.client_command,
            events: Some(parts.events),
        }
    }

    pub fn node(&self, name: &str) -> Result<&Node> {
        self.nodes
            .get(name)
            .with_context(|| format!("no node {name}"))
    }

    /// The lock-service servers, by node name.
    pub fn servers(&self) -> impl Iterator<Item = &String> {
        self.endpoints.keys()
    }

    /// Which server leads the others now, as the service says (see [`LockService::leader`]).
    pub fn leader(&self) -> Option<crate::service::Leadership> {
        self.leader_apart_from(None)
    }

    /// Which server leads now as the servers other than `hit` say: the one a fault hit may
    /// be dead, frozen or cut off, and still believe it leads.
    pub fn leader_apart_from(&self, hit: Option<&str>) -> Option<crate::service::Leadership> {
        let servers: Vec<Node> = (self.endpoints.keys())
            .filter(|name| Some(name.as_str()) != hit)
            .filter_map(|name| self.nodes.get(name).cloned())
            .collect();
        self.service.leader(self.runtime.as_ref(), &servers)
    }

    /// The address clients reach the server on node `name` at.
    pub fn endpoint(&self, name: &str) -> Option<SocketAddr> {
        self.endpoints.get(name).copied()
    }

    pub fn children(&mut self) -> &mut Children {
        &mut self.children
    }

    /// The client processes started so far, by the node they run in.
    pub fn client_processes(&self) -> Vec<u64> {
        self.slots.values().copied().collect()
    }

    /// The process running in client node `slot` now.
    pub fn process_in(&self, slot: &str) -> Option<u64> {
        self.slots.get(slot).copied()
    }

    /// The client node a process runs in.
    pub fn slot_of(&self, process: u64) -> Option<String> {
        self.slots
            .iter()
            .find(|(_, p)| **p == process)
            .map(|(slot, _)| slot.clone())
    }

    /// Starts a new client process in the client node `slot`, with the next process number.
    pub fn spawn_client(&mut self, slot: &str, deadline_ns: u64) -> Result<u64> {
        let process = self.next_process;
        self.next_process += 1;
        let node = self.node(slot)?.clone();
        let events = self.events.clone().context("the run is over")?;
        let command = &self.client_command;
        let resource = match self.resource_links.get(slot) {
            Some(link) => link.listen,
            None => command.resource,
        };
        let log = command.logs.join(format!("client-{process}.log"));
        let mut spec = command.spec.clone();
        for (name, endpoint) in &self.endpoints {
            let link = self
                .server_links
                .get(slot)
                .and_then(|links| links.get(name));
            spec.nodes
                .push(link.map_or(*endpoint, |l| l.listen).to_string());
        }
        spec.process = process;
        spec.resource = resource;
        spec.deadline_ns = deadline_ns;
        spec.skew_file = Some(self.skew_file(slot));
        let launch = ProcessSpec::new("a client", Programs::Harness, &command.program)
            .arg("client")
            .args(["--spec", &spec.to_json()])
            .streams(Stream::Piped, Stream::Piped, Stream::new_log(&log));
        let mut child = self.runtime.spawn(&node, &launch)?;
        give_secret(child.as_mut(), &command.secret);
        read_ops(
            Role::Client(process),
            child.take_stdout().expect("piped"),
            events,
        );
        self.children.add(Role::Client(process), child);
        self.slots.insert(slot.to_string(), process);
        self.client_nodes.insert(process, slot.to_string());
        Ok(process)
    }

    /// Reads the resource's final state (its value and how many accesses it applied).
    pub fn final_read(&self) -> Result<FinalState> {
        let node = self.node(crate::runtime::RESOURCE_NODE)?;
        let address = self.client_command.resource;
        let hello = WorkerHello::line(&self.client_command.secret);
        let (sender, answer) = std::sync::mpsc::channel();
        self.runtime.probe(
            node,
            Box::new(move || {
                let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
                stream.set_read_timeout(Some(Duration::from_secs(2)))?;
                let request = serde_json::to_string(&FinalRead { final_read: true })?;
                stream.write_all(format!("{hello}{request}\n").as_bytes())?;
                let mut line = String::new();
                std::io::BufReader::new(stream).read_line(&mut line)?;
                let _ = sender.send(serde_json::from_str::<FinalState>(&line)?);
                Ok(())
            }),
        )?;
        Ok(answer.try_recv()?)
    }

    /// No more client processes can start; lets the history's streams close.
    pub fn close_streams(&mut self) {
        self.events = None;
    }

    /// Stops every process, closes every link and removes every node. Returns what the run
    /// left behind: processes still alive, nodes that could not be removed. (A clock that could
    /// not be restored in a process about to die is only told.)
    pub fn teardown(&mut self) -> Vec<String> {
        // Servers go back to true time while they still run: nothing of ours stays in them.
        for problem in self.restore_clocks() {
            crate::tell!("lockpick: teardown: {problem}");
        }
        // The clients and the resource first, each with time to end on their own terms; then
        // the servers, with the time their service's entry gives them.
        let grace = Duration::from_secs(3);
        self.children.stop(|r| matches!(r, Role::Client(_)), grace);
        self.children.stop(|r| *r == Role::Resource, grace);
        let servers =
            crate::service::catalogue::find(self.service.name()).map_or(grace, |e| e.stop_grace);
        self.children.stop(|_| true, servers);
        self.resource_links.clear();
        self.server_links.clear();
        self.scratch.remove();
        self.runtime.teardown()
    }
}

/// Writes the run's secret to a child's standard input and closes it: nothing else of the
/// child's can read it there (unlike its arguments or environment, which /proc shows). A child
/// that died at once cannot take it: that is for its watcher to report, not an error here.
pub fn give_secret(child: &mut dyn NodeProcess, secret: &str) {
    if let Some(mut input) = child.take_stdin() {
        let _ = input.write_all(format!("{secret}\n").as_bytes());
    }
}
