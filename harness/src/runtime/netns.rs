//! Nodes as Linux network namespaces, the default runtime.
//!
//! Even the bridge lives in a namespace of its own (`<prefix>-switch`): the host namespace gains
//! no interface, address, route or firewall rule, and the run's /24 exists only on that bridge
//! (no NAT, no route out). Each node is a namespace with one veth into the bridge.

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sched::{setns, CloneFlags};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

pub use super::ip_command::ip;
use super::ip_command::ip_batch;
use super::leftovers::{Leftover, Removal};
use super::process_spec::{spawn_here, ProcessSpec, Programs};
use super::{Node, Runtime, RuntimeKind, RuntimeSettings};
use crate::processes::cgroup::{self, RunCgroup};
use crate::processes::node_process::NodeProcess;
use crate::processes::pid_namespace::{self, RunPidNamespace};

/// The catalogue entry: `--runtime netns`.
pub struct Netns;

impl RuntimeKind for Netns {
    fn name(&self) -> &'static str {
        "netns"
    }

    fn about(&self) -> &'static str {
        "Every node a network namespace, servers from the host's packages (the default: fast, \
         nothing to install)."
    }

    fn unavailable(
        &self,
        _service: &str,
        images: &std::collections::BTreeMap<String, String>,
        _faketime: bool,
    ) -> Option<String> {
        (!images.is_empty()).then(|| "--image needs --runtime docker".to_string())
    }

    fn create(&self, settings: &RuntimeSettings) -> Result<Box<dyn Runtime>> {
        Ok(Box::new(NetnsRuntime::create(
            settings.prefix,
            settings.subnet,
        )?))
    }

    /// The run's namespaces. Its bridge, veths and nft tables live inside them (the host's
    /// namespace gains none), so they go with them.
    fn leftovers(&self, _complain: &mut dyn FnMut(String)) -> Vec<Leftover> {
        list_namespaces()
            .into_iter()
            .filter_map(|ns| {
                Some(Leftover {
                    prefix: crate::run_prefix::prefix_of(&ns)?.to_string(),
                    record: format!("namespace {ns}"),
                    pids: pids_in(&ns),
                    name: ns,
                })
            })
            .collect()
    }

    fn remove(&self, leftovers: &[Leftover], dry_run: bool) -> Removal {
        let mut removal = Removal::default();
        for Leftover { name, pids, .. } in leftovers {
            let count = pids.len();
            if dry_run {
                removal.said.push(format!(
                    "would remove namespace {name} and {count} process(es) in it"
                ));
                continue;
            }
            kill_everything_in(name);
            match ip(&["netns", "del", name]) {
                Ok(()) => {
                    removal.said.push(format!(
                        "removed namespace {name} ({count} process(es) killed)"
                    ));
                    removal.namespaces += 1;
                }
                Err(e) => removal.failed.push(format!("{e:#}")),
            }
        }
        removal
    }
}

pub struct NetnsRuntime {
    prefix: String,
    subnet: [u8; 3],
    switch: String,
    /// Namespaces created so far, the switch first.
    namespaces: Vec<String>,
    nodes: Vec<Node>,
    /// Where every process it starts goes, so that none outlives the run.
    cgroup: Option<RunCgroup>,
    /// Where the harness's own programs and whatever they start live: none can leave it, not
    /// even for another cgroup (see `pid_namespace`).
    pid_namespace: Option<RunPidNamespace>,
    /// How long teardown waits, in all, for the run's killed processes to be gone.
    teardown_wait: Duration,
}

impl NetnsRuntime {
    /// Creates the run's switch: a namespace holding only the bridge.
    pub fn create(prefix: &str, subnet: [u8; 3]) -> Result<NetnsRuntime> {
        let switch = format!("{prefix}-switch");
        let cgroup = RunCgroup::create(prefix)?;
        let pid_namespace = RunPidNamespace::create(cgroup.as_ref().map(RunCgroup::procs))?;
        let mut runtime = NetnsRuntime {
            prefix: prefix.to_string(),
            subnet,
            switch: switch.clone(),
            namespaces: Vec::new(),
            nodes: Vec::new(),
            cgroup,
            pid_namespace: Some(pid_namespace),
            teardown_wait: cgroup::TEARDOWN_WAIT,
        };
        crate::run_prefix::record_made(prefix, &format!("namespace {switch}"))?;
        ip(&["netns", "add", &switch])?;
        runtime.namespaces.push(switch.clone());
        ip(&[
            "-n", &switch, "link", "add", "name", "bridge0", "type", "bridge",
        ])?;
        ip(&["-n", &switch, "link", "set", "bridge0", "up"])?;
        Ok(runtime)
    }
}

impl Runtime for NetnsRuntime {
    fn network_namespace(&self, node: &Node) -> Result<File> {
        let path = format!("/run/netns/{}", node.host_name);
        File::open(&path).with_context(|| format!("cannot open {path}"))
    }

    fn add_node(&mut self, name: &str) -> Result<Node> {
        self.add_node_in(name, |ns| ip(&["netns", "add", ns]))
    }

    /// The harness's and the node's programs are both the host's here; the harness's go into
    /// the run's PID namespace.
    fn spawn(&self, node: &Node, spec: &ProcessSpec) -> Result<Box<dyn NodeProcess>> {
        let command = self.command(node, &spec.program)?;
        match (&self.pid_namespace, spec.programs) {
            (Some(pids), Programs::Harness) => pids.spawn_inside(|| spawn_here(command, spec)),
            _ => spawn_here(command, spec),
        }
    }

    fn command(&self, node: &Node, program: &Path) -> Result<Command> {
        let namespace = open_namespace(&node.host_name)?;
        let mut command = Command::new(program);
        command.process_group(0);
        let cgroup = self.cgroup_procs();
        // SAFETY: between fork and exec only async-signal-safe system calls run here (write,
        // setns, prctl); nothing allocates.
        unsafe {
            command.pre_exec(move || {
                if let Some(procs) = cgroup {
                    cgroup::enter(procs)?;
                }
                setns(&namespace, CloneFlags::CLONE_NEWNET)?;
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
                Ok(())
            });
        }
        Ok(command)
    }

    fn probe(&self, node: &Node, probe: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()> {
        let namespace = open_namespace(&node.host_name)?;
        // A network namespace is per thread: enter it on a thread of its own.
        std::thread::spawn(move || {
            setns(&namespace, CloneFlags::CLONE_NEWNET).context("cannot enter the node")?;
            probe()
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the probe panicked"))?
    }

    fn teardown(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        // One deadline for all of it: a process that outlives it is reported, not waited for
        // again at every later step.
        let deadline = Instant::now() + self.teardown_wait;
        // Every descendant at once, wherever it went: what is still in the PID namespace has
        // outlived its client (which is stopped by now); what has also left the run's cgroup
        // is told, since only the namespace ends it. Then the cgroup, then the network
        // namespaces, which should be empty by now (and are all there is on a machine without a
        // cgroup of ours).
        if let Some(mut pids) = self.pid_namespace.take() {
            let escaped = self.outside_cgroup(pids.members());
            if !escaped.is_empty() {
                crate::tell!(
                    "lockpick: teardown: ending {} process(es) the run's clients started that \
                     had left the run's cgroup (the run's PID namespace holds them): {}",
                    escaped.len(),
                    pid_namespace::describe(&escaped).join(", ")
                );
            }
            if let Err(e) = pids.end(deadline) {
                problems.push(format!("{e:#}"));
            }
        }
        if let Some(mut cgroup) = self.cgroup.take() {
            if let Err(e) = cgroup.remove(deadline) {
                problems.push(format!("{e:#}"));
            }
        }
        for ns in self.namespaces.drain(..).rev() {
            if let Err(e) = end_everything_in(&ns, deadline) {
                problems.push(format!("{e:#}"));
            }
            if let Err(e) = ip(&["netns", "del", &ns]) {
                problems.push(format!("{e:#}"));
            }
        }
        self.nodes.clear();
        problems
    }
}

impl NetnsRuntime {
    /// Makes teardown wait at most `wait` for the run's killed processes (a test's bound).
    pub fn with_teardown_wait(mut self, wait: Duration) -> NetnsRuntime {
        self.teardown_wait = wait;
        self
    }

    /// Those of `pids` that are not in the run's cgroup (all of them on a machine without it).
    fn outside_cgroup(&self, pids: Vec<Pid>) -> Vec<Pid> {
        match &self.cgroup {
            Some(cgroup) => pids.into_iter().filter(|&p| !cgroup.holds(p)).collect(),
            None => pids,
        }
    }

    /// The run's cgroup, for a command to enter between fork and exec.
    pub fn cgroup_procs(&self) -> Option<std::os::fd::RawFd> {
        self.cgroup.as_ref().map(RunCgroup::procs)
    }

    /// Adds a node whose namespace `make_namespace` creates under the node's host name (a
    /// fresh one, or another runtime's attached by name), and wires it to the switch.
    pub fn add_node_in(
        &mut self,
        name: &str,
        make_namespace: impl FnOnce(&str) -> Result<()>,
    ) -> Result<Node> {
        let host = self.nodes.len() + 10;
        if host > 254 {
            bail!("too many nodes for one /24");
        }
        let [a, b, c] = self.subnet;
        let node = Node {
            name: name.to_string(),
            host_name: format!("{}-{name}", self.prefix),
            ip: Ipv4Addr::new(a, b, c, host as u8),
        };
        let ns = node.host_name.as_str();
        crate::run_prefix::record_made(&self.prefix, &format!("namespace {ns}"))?;
        make_namespace(ns)?;
        self.namespaces.push(ns.to_string());
        let port = format!("v{host}");
        // One `ip` per namespace, each reading its commands in a batch: a start-up on a busy
        // machine paid 25 to 50 ms for each `ip` started, and a run makes 9 to 11 nodes.
        ip_batch(
            &self.switch,
            &[
                format!("link add {port} type veth peer name eth0 netns {ns}"),
                format!("link set {port} master bridge0 up"),
            ],
        )?;
        ip_batch(
            ns,
            &[
                format!("addr add {}/24 dev eth0", node.ip),
                "link set eth0 up".to_string(),
                "link set lo up".to_string(),
            ],
        )?;
        self.nodes.push(node.clone());
        Ok(node)
    }
}

impl Drop for NetnsRuntime {
    fn drop(&mut self) {
        for problem in self.teardown() {
            crate::tell!("lockpick: teardown: {problem}");
        }
    }
}

pub fn open_namespace(name: &str) -> Result<File> {
    File::open(format!("/run/netns/{name}")).with_context(|| format!("no namespace {name}"))
}

/// Resumes and kills every process still in a namespace: a namespace (and its veth) only goes
/// away when nothing runs in it, and a frozen process must not stay frozen.
fn kill_everything_in(namespace: &str) {
    for pid in pids_in(namespace) {
        let _ = kill(pid, Signal::SIGCONT);
        let _ = kill(pid, Signal::SIGKILL);
    }
}

/// Kills every process in a namespace and waits until none is left (up to `deadline`); an
/// error names those still there then.
pub fn end_everything_in(namespace: &str, deadline: Instant) -> Result<()> {
    loop {
        let left = pids_in(namespace);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let pids: Vec<String> = left.iter().map(Pid::to_string).collect();
            bail!(
                "processes still alive in namespace {namespace} after SIGKILL: {}",
                pids.join(", ")
            );
        }
        kill_everything_in(namespace);
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Processes whose network namespace is `namespace`.
fn pids_in(namespace: &str) -> Vec<Pid> {
    let Ok(output) = Command::new("ip")
        .args(["netns", "pids", namespace])
        .stderr(Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .map(Pid::from_raw)
        .collect()
}

/// Namespaces on this machine, by name.
fn list_namespaces() -> Vec<String> {
    let Ok(output) = Command::new("ip").args(["netns", "list"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
#[path = "netns_teardown_tests.rs"]
mod tests;
