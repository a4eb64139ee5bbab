//! Everything a run has set up and a nemesis acts on: the nodes, the processes on them and how
//! to start them again, the servers' clocks, the clients' delay links, the firewall.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc::Sender;
use std::time::Duration;

use std::io::{BufRead, Write};

use anyhow::{Context, Result};
use lockpick_workloads::resource_client::{FinalRead, FinalState};
use nix::unistd::Pid;

use crate::children::{read_ops, Children, Event, Role};
use crate::delay_proxy::DelayLink;
use crate::firewall::{self, Direction};
use crate::run::Scratch;
use crate::runtime::netns::NetnsRuntime;
use crate::runtime::{Node, Runtime};
use crate::service::Launch;

/// One address in one of a node's firewall sets.
type Blocked = (String, Direction, Ipv4Addr);

/// How to start a client process; the parts that differ per client are added by `spawn_client`.
pub struct ClientCommand {
    pub program: PathBuf,
    /// What every client gets (lock, TTL, timeouts); process, servers, resource, deadline and
    /// skew file are filled in per client, since a delay proxy may stand in front of them.
    pub spec: lockpick_workloads::client_spec::ClientSpec,
    pub resource: SocketAddr,
    pub logs: PathBuf,
}

pub struct Cluster {
    // Field order is drop order: processes first, then the links and files they use, then the
    // namespaces they live in.
    pub children: Children,
    /// Each client node's proxied link to the resource (only with delay nemeses).
    pub resource_links: BTreeMap<String, DelayLink>,
    /// Each client node's proxied links to the servers, by server (only with `delay-client`).
    pub server_links: BTreeMap<String, BTreeMap<String, DelayLink>>,
    pub scratch: Scratch,
    pub runtime: NetnsRuntime,
    pub nodes: BTreeMap<String, Node>,
    /// Lock-service servers by node name, and the address clients reach each at.
    pub endpoints: BTreeMap<String, SocketAddr>,
    pub launches: BTreeMap<String, Launch>,
    /// The process running in each client node now.
    pub slots: BTreeMap<String, u64>,
    /// How many active partitions need each blocked address, per node and direction.
    blocked: BTreeMap<Blocked, usize>,
    next_process: u64,
    client_command: ClientCommand,
    events: Option<Sender<Event>>,
}

impl Cluster {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        children: Children,
        scratch: Scratch,
        runtime: NetnsRuntime,
        nodes: BTreeMap<String, Node>,
        endpoints: BTreeMap<String, SocketAddr>,
        launches: BTreeMap<String, Launch>,
        client_command: ClientCommand,
        events: Sender<Event>,
    ) -> Cluster {
        Cluster {
            children,
            resource_links: BTreeMap::new(),
            server_links: BTreeMap::new(),
            scratch,
            runtime,
            nodes,
            endpoints,
            launches,
            slots: BTreeMap::new(),
            blocked: BTreeMap::new(),
            next_process: 0,
            client_command,
            events: Some(events),
        }
    }

    pub fn node(&self, name: &str) -> Result<&Node> {
        self.nodes
            .get(name)
            .with_context(|| format!("no node {name}"))
    }

    pub fn servers(&self) -> impl Iterator<Item = &String> {
        self.endpoints.keys()
    }

    /// The server a client reached at `address` (`ip:port`), as a grant's `nodes` name it:
    /// a server's own address, or a delay proxy in front of it.
    pub fn server_at(&self, address: &str) -> Option<String> {
        let direct = self
            .endpoints
            .iter()
            .find(|(_, a)| a.to_string() == address);
        let proxied = self
            .server_links
            .values()
            .flat_map(|links| links.iter())
            .find(|(_, link)| link.listen.to_string() == address);
        direct
            .map(|(name, _)| name.clone())
            .or_else(|| proxied.map(|(name, _)| name.clone()))
    }

    pub fn server_pid(&self, name: &str) -> Option<Pid> {
        self.children.pid(&Role::Server(name.to_string()))
    }

    pub fn client_pid(&self, process: u64) -> Option<Pid> {
        self.children.pid(&Role::Client(process))
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
        let mut child = self
            .runtime
            .command(&node, &command.program)?
            .arg("client")
            .args(["--spec", &spec.to_json()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).with_context(|| format!("cannot create {log:?}"))?)
            .spawn()
            .context("cannot start a client")?;
        read_ops(
            Role::Client(process),
            child.stdout.take().expect("piped"),
            events,
        );
        self.children.add(Role::Client(process), child);
        self.slots.insert(slot.to_string(), process);
        Ok(process)
    }

    /// The file a client node's clock skew is written to.
    pub fn skew_file(&self, slot: &str) -> PathBuf {
        self.scratch.path.join(format!("clock-skew-{slot}"))
    }

    /// Restarts a killed server with its original launch.
    pub fn restart_server(&mut self, name: &str) -> Result<Pid> {
        let launch = self
            .launches
            .get(name)
            .with_context(|| format!("no server {name}"))?;
        let child = launch.spawn(&self.runtime)?;
        let faked = launch
            .env
            .iter()
            .any(|(k, _)| k == "FAKETIME_TIMESTAMP_FILE");
        let pid = self.children.add(Role::Server(name.to_string()), child);
        if faked {
            crate::faketime::register(&self.scratch.path, pid)?;
        }
        Ok(pid)
    }

    /// Kills a server at once; returns its pid, or `None` if it was not running.
    pub fn kill_server(&mut self, name: &str) -> Option<Pid> {
        let pid = self.children.kill(&Role::Server(name.to_string()))?;
        // libfaketime leaves its shared memory behind when its process is killed.
        crate::faketime::forget(pid);
        Some(pid)
    }

    /// Stops `to` hearing from `from` (and, unless `one_way`, every other way between the two)
    /// for each pair. Partitions may overlap: each blocked address is counted, and only the
    /// last fault that needs it lifts it.
    pub fn cut(&mut self, cuts: &[(String, String)], one_way: bool) -> Result<()> {
        let mut added: BTreeMap<String, Vec<(Direction, Ipv4Addr)>> = BTreeMap::new();
        for entry in self.entries(cuts, one_way)? {
            let count = self.blocked.entry(entry.clone()).or_insert(0);
            *count += 1;
            if *count == 1 {
                added.entry(entry.0).or_default().push((entry.1, entry.2));
            }
        }
        for (name, entries) in added {
            firewall::change(&self.runtime, self.node(&name)?, "add", &entries)?;
        }
        Ok(())
    }

    /// Undoes one `cut` with the same arguments.
    pub fn uncut(&mut self, cuts: &[(String, String)], one_way: bool) -> Result<()> {
        let mut deleted: BTreeMap<String, Vec<(Direction, Ipv4Addr)>> = BTreeMap::new();
        for entry in self.entries(cuts, one_way)? {
            if let Some(count) = self.blocked.get_mut(&entry) {
                *count -= 1;
                if *count == 0 {
                    self.blocked.remove(&entry);
                    deleted.entry(entry.0).or_default().push((entry.1, entry.2));
                }
            }
        }
        for (name, entries) in deleted {
            firewall::change(&self.runtime, self.node(&name)?, "delete", &entries)?;
        }
        Ok(())
    }

    fn entries(&self, cuts: &[(String, String)], one_way: bool) -> Result<Vec<Blocked>> {
        let mut entries = Vec::new();
        for (from, to) in cuts {
            let (from_ip, to_ip) = (self.node(from)?.ip, self.node(to)?.ip);
            entries.push((to.clone(), Direction::In, from_ip));
            if !one_way {
                entries.push((to.clone(), Direction::Out, from_ip));
                entries.push((from.clone(), Direction::In, to_ip));
                entries.push((from.clone(), Direction::Out, to_ip));
            }
        }
        Ok(entries)
    }

    /// Packets the firewall of these nodes has dropped so far.
    pub fn dropped_packets(&self, names: &[String]) -> u64 {
        names
            .iter()
            .filter_map(|name| self.nodes.get(name))
            .map(|node| firewall::dropped(&self.runtime, node).unwrap_or(0))
            .sum()
    }

    /// Whether `from` really cannot reach the server `to` now (a connection attempt fails). Only
    /// a server listens, so the probe goes towards whichever side is one.
    pub fn cannot_reach(&self, from: &str, to: &str) -> Option<bool> {
        let (source, server) = if self.endpoints.contains_key(to) {
            (from, to)
        } else if self.endpoints.contains_key(from) {
            (to, from)
        } else {
            return None;
        };
        let address = self.endpoints[server];
        let node = self.nodes.get(source)?;
        let reached = self.runtime.probe(
            node,
            Box::new(move || {
                TcpStream::connect_timeout(&address, Duration::from_millis(300))?;
                Ok(())
            }),
        );
        Some(reached.is_err())
    }

    /// Reads the resource's final state (its value and how many accesses it applied).
    pub fn final_read(&self) -> Result<FinalState> {
        let node = self.node("resource")?;
        let address = self.client_command.resource;
        let (sender, answer) = std::sync::mpsc::channel();
        self.runtime.probe(
            node,
            Box::new(move || {
                let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
                stream.set_read_timeout(Some(Duration::from_secs(2)))?;
                let request = serde_json::to_string(&FinalRead { final_read: true })?;
                stream.write_all(format!("{request}\n").as_bytes())?;
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
}
