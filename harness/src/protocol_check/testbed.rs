//! The check's own small cluster: one service's real servers and two client nodes, in network
//! namespaces under a run prefix of its own (so `lockpick clean` knows them after a crash), made
//! with the same runtime, service and freezer a run uses. Everything undoes itself when the
//! testbed is dropped, which an error, a panic or an interrupted check also reach.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Result};
use nix::unistd::Pid;

use crate::locks::Lock;
use crate::nemesis::window::Shape;
use crate::processes::children::{Children, Role};
use crate::processes::freezer;
use crate::run_prefix::RunPrefix;
use crate::runtime::netns::Netns;
use crate::runtime::{Node, Runtime, RuntimeKind, RuntimeSettings};
use crate::scratch::Scratch;
use crate::service::ServiceSetup;

pub struct Testbed {
    // Field order is drop order: the servers first (resumed, then stopped), then their files,
    // then the namespaces they live in (whatever still runs there is killed), the prefix last.
    children: Children,
    /// The servers' data and logs, in memory; removed when dropped.
    _scratch: Scratch,
    runtime: Box<dyn Runtime>,
    servers: Vec<Node>,
    clients: Vec<Node>,
    /// The servers' addresses, as the program's LOCKPICK_SERVERS gives them.
    pub endpoints: Vec<String>,
    /// The server program, as the check's lines name it (`redis-server`, `zookeeper`).
    pub server_program: &'static str,
    pub prefix: RunPrefix,
}

impl Testbed {
    /// Starts `lock`'s servers on nodes of their own, with `clients` client nodes beside them
    /// and leases of `ttl` where the servers hold it, and returns once every server answers.
    pub fn start(lock: &dyn Lock, clients: usize, ttl: std::time::Duration) -> Result<Testbed> {
        let prefix = RunPrefix::claim()?;
        crate::run_prefix::record_made(&prefix.name, "scratch")?;
        let scratch = Scratch::create(&prefix.name)?;
        let logs = scratch.path.join("logs");
        std::fs::create_dir(&logs)?;
        let mut service = lock.service();
        let shape = Shape::of(service.node_count(), clients);
        let mut runtime = Netns.create(&RuntimeSettings {
            prefix: &prefix.name,
            subnet: prefix.subnet(),
            service: service.name(),
            servers: &shape.servers,
            images: &BTreeMap::new(),
            shared: vec![scratch.path.clone()],
        })?;
        let mut make = |names: &[String]| -> Result<Vec<Node>> {
            names.iter().map(|name| runtime.add_node(name)).collect()
        };
        let servers = make(&shape.servers)?;
        let clients = make(&shape.clients)?;
        let mut children = Children::default();
        service.start(&mut ServiceSetup {
            runtime: runtime.as_ref(),
            nodes: &servers,
            logs: &logs,
            scratch: &scratch.path,
            children: &mut children,
            faketime: false,
            server_clock: false,
            launches: &mut BTreeMap::new(),
            server_bin: None,
            persistence: Default::default(),
            ttl,
        })?;
        Ok(Testbed {
            children,
            _scratch: scratch,
            runtime,
            servers,
            clients,
            endpoints: service.endpoints(),
            server_program: server_word(service.server_requirement()),
            prefix,
        })
    }

    /// A command that runs the client program `program` with `env` inside client node
    /// `client`, as a run's client would (in the node's network, killed with the check).
    pub fn program_command(
        &self,
        client: usize,
        program: &[String],
        env: &[(String, String)],
    ) -> Result<Command> {
        let (name, args) = program.split_first().expect("a command has a program");
        let mut command = self
            .runtime
            .command(&self.clients[client], Path::new(name))?;
        command.args(args).envs(env.iter().map(|(k, v)| (k, v)));
        Ok(command)
    }

    fn server_pids(&self) -> Vec<Pid> {
        self.servers
            .iter()
            .filter_map(|node| self.children.pid(&Role::Server(node.name.clone())))
            .collect()
    }

    /// Stops every server with SIGSTOP, as `pause-node` does: connections stay open and
    /// requests are accepted by the kernel, but nothing is answered until `resume_servers`.
    pub fn stop_servers(&self) -> Result<()> {
        for pid in self.server_pids() {
            if !freezer::freeze(pid)? {
                bail!(
                    "{} (pid {pid}) was not seen stopped after SIGSTOP",
                    self.server_program
                );
            }
        }
        Ok(())
    }

    pub fn resume_servers(&self) -> Result<()> {
        for pid in self.server_pids() {
            freezer::thaw(pid)?;
        }
        Ok(())
    }
}

/// The server program's name without its folder or extension (ZooKeeper's is a jar).
fn server_word(requirement: &'static str) -> &'static str {
    let name = requirement.rsplit('/').next().unwrap_or(requirement);
    name.strip_suffix(".jar").unwrap_or(name)
}
