//! Nodes as Docker containers, `--runtime docker`: each server runs from the image chosen for
//! its service (`--image redis=redis:7.4`), so one run tests one server version.
//!
//! Docker makes no network here. Each container starts with `--network none` and an idle init
//! (`sleep infinity`); its network namespace is attached by name (`ip netns attach`) and wired to
//! the run's own switch exactly like a namespace node, so the host gains no bridge, route or
//! rule, and every fault acts from the host side whatever the image holds: nft rules in the
//! container's namespace, SIGSTOP/SIGKILL of the server's pid, libfaketime mounted in.
//!
//! The server process is started by the harness inside the container's network and mount
//! namespaces (it runs the image's binary with the image's libraries), as a child of the
//! controller: the cluster pauses, kills and restarts it by pid as in the namespace runtime.
//! Clients and the resource are the harness's own binary, run with their network inside their
//! container. The run's folder and scratch are mounted at the same paths, so the arguments a
//! service builds name the same files in both runtimes.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use nix::sched::{setns, CloneFlags};
use nix::sys::signal::Signal;
use serde_json::json;

use super::leftovers::{Leftover, Removal};
use super::netns::{ip, open_namespace, NetnsRuntime};
use super::process_spec::{spawn_here, ProcessSpec, Programs};
use super::{Node, Runtime, RuntimeKind, RuntimeSettings};
use crate::processes::node_process::NodeProcess;

#[path = "docker_leftovers.rs"]
mod leftover_containers;

/// The label every container of a run carries, with the run's prefix as its value.
pub const PREFIX_LABEL: &str = "lockpick.prefix";
/// The client and resource nodes' image (built by `docker/build-images`).
pub const NODE_IMAGE: &str = "lockpick/node:bookworm";
/// Where an image's programs are looked for.
const PATH: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// The server image a service runs from unless `--image` says otherwise: the one
/// `docker/build-images` builds from `docker/<service>/`.
pub fn default_image(service: &str) -> String {
    format!("lockpick/{service}:bookworm")
}

/// The catalogue entry: `--runtime docker`.
pub struct Docker;

impl RuntimeKind for Docker {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn about(&self) -> &'static str {
        "Every node a Docker container, servers from the image of --image service=<image> \
         (default lockpick/<service>:bookworm, built by docker/build-images)."
    }

    fn unavailable(
        &self,
        service: &str,
        images: &BTreeMap<String, String>,
        faketime: bool,
    ) -> Option<String> {
        if let Err(why) = docker(&["info", "--format", "{{.ServerVersion}}"]) {
            return Some(format!(
                "--runtime docker needs a running Docker engine: {why:#} (install Debian's \
                 docker.io and start one, e.g. `docker/engine start /var/lib/lockpick-docker`, \
                 then set DOCKER_HOST to what it prints)"
            ));
        }
        let server = images
            .get(service)
            .cloned()
            .unwrap_or_else(|| default_image(service));
        for image in [server.as_str(), NODE_IMAGE] {
            if docker(&["image", "inspect", "--format", "{{.Id}}", image]).is_err() {
                return Some(format!(
                    "the image {image} is not on this Docker engine: build lockpick's images with \
                     docker/build-images, or `docker pull` it"
                ));
            }
        }
        if faketime {
            // The host's libfaketime is mounted in: it needs a glibc as new as the host's, which
            // brings the malloc that works under it.
            let malloc = crate::runtime::faketime::GLIBC_MALLOC;
            let probe = [
                "run",
                "--rm",
                "--network",
                "none",
                "--entrypoint",
                "ls",
                &server,
                malloc,
            ];
            if docker(&probe).is_err() {
                return Some(format!(
                    "clock nemeses cannot run on the image {server}: it has no {malloc}, so its \
                     server cannot run under the host's libfaketime (a glibc image from Debian 12 \
                     or later is needed)"
                ));
            }
        }
        None
    }

    fn servers_from_host(&self) -> bool {
        false
    }

    /// A client runs behind `docker exec`: its program is no child of the process started.
    fn client_programs_reachable(&self) -> bool {
        false
    }

    fn server_pids_reachable(&self) -> bool {
        // A server runs behind docker, in the container's pid namespace.
        false
    }

    fn create(&self, settings: &RuntimeSettings) -> Result<Box<dyn Runtime>> {
        let server_image = settings
            .images
            .get(settings.service)
            .cloned()
            .unwrap_or_else(|| default_image(settings.service));
        Ok(Box::new(DockerRuntime {
            net: NetnsRuntime::create(settings.prefix, settings.subnet)?,
            prefix: settings.prefix.to_string(),
            server_image,
            servers: settings.servers.iter().cloned().collect(),
            shared: settings.shared.clone(),
            containers: Vec::new(),
            pids: BTreeMap::new(),
        }))
    }

    fn leftovers(&self, complain: &mut dyn FnMut(String)) -> Vec<Leftover> {
        leftover_containers::containers(complain)
    }

    fn remove(&self, leftovers: &[Leftover], dry_run: bool) -> Removal {
        leftover_containers::remove(leftovers, dry_run)
    }
}

pub struct DockerRuntime {
    /// The switch and the containers' network namespaces, attached by name.
    net: NetnsRuntime,
    prefix: String,
    server_image: String,
    servers: BTreeSet<String>,
    shared: Vec<PathBuf>,
    /// Containers created so far, by name.
    containers: Vec<String>,
    /// Each container's init, by node name: the way into its mount namespace.
    pids: BTreeMap<String, i32>,
}

impl DockerRuntime {
    fn init_pid(&self, node: &Node) -> Result<i32> {
        self.pids
            .get(&node.name)
            .copied()
            .with_context(|| format!("no container for node {}", node.name))
    }

    /// A command that runs `program` from the container's own system, inside its network and
    /// mount namespaces: a lock-service server.
    fn server_command(&self, node: &Node, program: &Path) -> Result<Command> {
        let network = open_namespace(&node.host_name)?;
        let mounts = File::open(format!("/proc/{}/ns/mnt", self.init_pid(node)?))
            .with_context(|| format!("cannot open the mount namespace of {}", node.host_name))?;
        let mut command = Command::new(program);
        command.process_group(0);
        let cgroup = self.net.cgroup_procs();
        // SAFETY: between fork and exec only async-signal-safe system calls run here (write,
        // setns, prctl); nothing allocates. Entering the mount namespace also moves the root and
        // the working directory to the container's.
        unsafe {
            command.pre_exec(move || {
                if let Some(procs) = cgroup {
                    crate::processes::cgroup::enter(procs)?;
                }
                setns(&network, CloneFlags::CLONE_NEWNET)?;
                setns(&mounts, CloneFlags::CLONE_NEWNS)?;
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
                Ok(())
            });
        }
        Ok(command)
    }

    /// A path inside the node's container, as the host reaches it.
    fn inside(&self, node: &Node, path: &str) -> Option<PathBuf> {
        let pid = self.init_pid(node).ok()?;
        Some(PathBuf::from(format!("/proc/{pid}/root{path}")))
    }
}

impl Runtime for DockerRuntime {
    fn add_node(&mut self, name: &str) -> Result<Node> {
        let container = format!("{}-{name}", self.prefix);
        let image = if self.servers.contains(name) {
            self.server_image.clone()
        } else {
            NODE_IMAGE.to_string()
        };
        let mut args: Vec<String> = vec![
            "run".into(),
            "--detach".into(),
            "--name".into(),
            container.clone(),
            "--label".into(),
            format!("{PREFIX_LABEL}={}", self.prefix),
            "--network".into(),
            "none".into(),
            // The servers are the controller's children in the host's pid namespace: with the
            // host's /proc in the container, their /proc/self is their own (the JVM finds its
            // libraries through it).
            "--pid".into(),
            "host".into(),
            "--hostname".into(),
            name.into(),
            "--entrypoint".into(),
            "sleep".into(),
        ];
        let mut mounts = self.shared.clone();
        if Path::new(crate::runtime::faketime::LIBFAKETIME).exists() {
            mounts.push(PathBuf::from(crate::runtime::faketime::LIBFAKETIME));
        }
        for path in mounts {
            args.push("--volume".into());
            args.push(format!("{0}:{0}", path.display()));
        }
        args.push(image);
        args.push("infinity".into());
        // Recorded first: a container that was created but failed to start is removed too.
        crate::run_prefix::record_made(&self.prefix, &format!("container {container}"))?;
        self.containers.push(container.clone());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        docker(&refs)?;
        let pid: i32 = docker(&["inspect", "--format", "{{.State.Pid}}", &container])?
            .trim()
            .parse()
            .with_context(|| format!("no pid for container {container}"))?;
        if pid <= 0 {
            bail!("container {container} is not running");
        }
        self.pids.insert(name.to_string(), pid);
        let pid = pid.to_string();
        self.net
            .add_node_in(name, |ns| ip(&["netns", "attach", ns, &pid]))
    }

    /// The harness's programs as the netns runtime starts them (in the run's PID namespace),
    /// with the container's network; the servers from the container's own system.
    fn spawn(&self, node: &Node, spec: &ProcessSpec) -> Result<Box<dyn NodeProcess>> {
        match spec.programs {
            Programs::Harness => self.net.spawn(node, spec),
            Programs::Node => spawn_here(self.server_command(node, &spec.program)?, spec),
        }
    }

    fn command(&self, node: &Node, program: &Path) -> Result<Command> {
        self.net.command(node, program)
    }

    fn find_program(&self, node: &Node, program: &str) -> Option<PathBuf> {
        PATH.iter()
            .map(|dir| format!("{dir}/{program}"))
            .find(|path| {
                self.inside(node, path)
                    .is_some_and(|p| p.symlink_metadata().is_ok())
            })
            .map(PathBuf::from)
    }

    fn refuses_faketime(&self, node: &Node) -> Option<String> {
        if !Path::new(crate::runtime::faketime::LIBFAKETIME).exists() {
            return Some(format!(
                "the host has no {} to mount into the container (Debian package faketime)",
                crate::runtime::faketime::LIBFAKETIME
            ));
        }
        let malloc = crate::runtime::faketime::GLIBC_MALLOC;
        match self.inside(node, malloc) {
            Some(path) if path.exists() => None,
            _ => Some(format!(
                "the image {} has no {malloc}: its server cannot run under libfaketime (a glibc \
                 image from Debian 12 or later is needed)",
                self.server_image
            )),
        }
    }

    fn facts(&self) -> serde_json::Value {
        let id = |image: &str| {
            docker(&["image", "inspect", "--format", "{{.Id}}", image])
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        json!({
            "server_image": self.server_image,
            "server_image_id": id(&self.server_image),
            "node_image": NODE_IMAGE,
        })
    }

    fn network_namespace(&self, node: &Node) -> Result<File> {
        self.net.network_namespace(node)
    }

    fn probe(&self, node: &Node, probe: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()> {
        self.net.probe(node, probe)
    }

    fn teardown(&mut self) -> Vec<String> {
        // Killing everything in the namespaces stops each container's init too; then the
        // attached names and the switch go, then the containers.
        let mut problems = self.net.teardown();
        self.pids.clear();
        if !self.containers.is_empty() {
            let mut args = vec!["rm", "--force", "--volumes"];
            args.extend(self.containers.iter().map(String::as_str));
            if let Err(e) = docker(&args) {
                problems.push(format!("{e:#}"));
            }
            self.containers.clear();
        }
        problems
    }
}

impl Drop for DockerRuntime {
    fn drop(&mut self) {
        for problem in self.teardown() {
            crate::tell!("lockpick: teardown: {problem}");
        }
    }
}

/// Runs the docker client with `args`; its standard output, or an error that names the command
/// and what docker said.
pub fn docker(args: &[&str]) -> Result<String> {
    let output = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("cannot run `docker` (Debian package docker.io)")?;
    if !output.status.success() {
        bail!(
            "`docker {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
