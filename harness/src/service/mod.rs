//! Lock services: the real servers a lock runs on, started by the harness on its own nodes.

pub mod catalogue;
pub mod entry;
pub mod etcd;
pub mod http_date;
pub mod mariadb;
pub mod nats;
pub mod persistence;
pub mod postgres;
pub mod redis;
pub mod redis_sentinel;
pub mod redis_sentinel_queries;
pub mod support;
pub mod zookeeper;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

pub use crate::runtime::program::find_program;
pub use catalogue::SERVICES;
pub use entry::{ServerBinForm, ServiceEntry};

use crate::processes::children::Children;
use crate::processes::node_process::{NodeProcess, REAP_WITHIN};
use crate::runtime::process_spec::{ProcessSpec, Programs, Stream};
use crate::runtime::{Node, Runtime};

/// A program (looked up on the PATH) or file (an absolute path) a service needs, and the Debian
/// package that provides it.
pub struct Requirement {
    pub program: &'static str,
    pub package: &'static str,
}

impl Requirement {
    pub fn is_met(&self) -> bool {
        if self.program.starts_with('/') {
            Path::new(self.program).exists()
        } else {
            find_program(self.program).is_some()
        }
    }
}

/// A lock service: how many nodes it needs, how to start its servers there and when they are
/// ready. Contract: `start` returns only once every server answers (or fails with the server's
/// log in the error); every process it starts is registered in `children`, so the run can pause
/// and stop it.
pub trait LockService {
    /// The service's name, as `--image` and the setup line's `server_versions` know it.
    fn name(&self) -> &'static str;

    /// The version of the server running on `node` (after `start`), as the server reports it;
    /// `None` if it cannot say.
    fn server_version(&self, runtime: &dyn Runtime, node: &Node) -> Option<String>;

    /// The server program the nodes run (after `start`), as `--server-bin` would name it: an
    /// executable, or ZooKeeper's folder of jars. Recorded with the version, since two builds
    /// may report the same one.
    fn server_bin(&self) -> Option<PathBuf>;

    /// Programs that must be installed before a run starts.
    fn requirements(&self) -> Vec<Requirement>;

    /// The requirement (its `program`) that `--server-bin` stands in for.
    fn server_requirement(&self) -> &'static str;

    /// How many server nodes the service runs on.
    fn node_count(&self) -> usize;

    /// Starts one server per node and waits until all are ready. Logs go to `logs`; data and
    /// configuration to `scratch` (in memory, removed with the run).
    fn start(&mut self, setup: &mut ServiceSetup) -> Result<()>;

    /// The addresses clients connect to, one per node.
    fn endpoints(&self) -> Vec<String>;

    /// How far the clock of the server on `node` is from true time (ms), read through the
    /// service itself; `None` when the service cannot say. Evidence for clock faults.
    fn clock_offset_ms(&self, _runtime: &dyn Runtime, _node: &Node) -> Option<i64> {
        None
    }

    /// How coarse one reading of `clock_offset_ms` is (ms): a reading may be off by half of
    /// it.
    fn clock_resolution_ms(&self) -> i64 {
        1
    }

    /// Which of the servers on `servers` leads the others now, as the servers themselves say
    /// (etcd's endpoint status, ZooKeeper's `srvr` mode, the primary the Sentinels name);
    /// `None` when none can say, or the service has no leader (its entry's `leader` says
    /// why). Asked by the leader nemeses when a fault opens and again when it heals.
    fn leader(&self, _runtime: &dyn Runtime, _servers: &[Node]) -> Option<Leadership> {
        None
    }

    /// What the service's setup chose that a reader of the run needs (a failover's timeouts),
    /// as the setup line's `service_facts`; `null` when nothing.
    fn facts(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// The server that leads a service's others, and the service's count of leaderships then.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Leadership {
    /// The node whose server leads.
    pub node: String,
    /// The service's own count of leaderships (etcd's raft term, ZooKeeper's epoch, the
    /// Sentinels' config epoch): a larger one later means leadership moved. `None` for a
    /// service that names its leader but gives no such count (JetStream's monitoring): then
    /// only another node leading tells a move.
    pub term: Option<u64>,
}

/// How to start one server, kept so a nemesis can restart it after killing it.
#[derive(Clone, Debug)]
pub struct Launch {
    pub node: Node,
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(String, String)>,
    /// Its standard output and error go here (appended: a restart keeps the earlier log).
    pub log: PathBuf,
    /// The user it runs as, when not root (for a server that refuses to run as root).
    pub user: Option<&'static str>,
}

impl Launch {
    pub fn new(node: &Node, program: PathBuf, log: PathBuf) -> Launch {
        Launch {
            node: node.clone(),
            program,
            args: Vec::new(),
            env: Vec::new(),
            log,
            user: None,
        }
    }

    pub fn arg(&mut self, arg: impl Into<OsString>) -> &mut Launch {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: Into<OsString>>(&mut self, args: impl IntoIterator<Item = I>) -> &mut Launch {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn spawn(&self, runtime: &dyn Runtime) -> Result<Box<dyn NodeProcess>> {
        let what = format!("the server on {}", self.node.name);
        runtime.spawn(&self.node, &self.spec(&what)?)
    }

    /// Runs the program to its end on its node, through the runtime as a server would run,
    /// within `bound`: a step of a server's start (making its data folder). Fails unless it
    /// exits 0; one still running at the bound is killed.
    pub fn run_to_end(&self, runtime: &dyn Runtime, bound: Duration) -> Result<()> {
        let name = self
            .program
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        let what = format!("{name} on {}", self.node.name);
        let mut process = runtime.spawn(&self.node, &self.spec(&what)?)?;
        match process.wait_within(bound)? {
            Some(status) if status.success() => Ok(()),
            Some(status) => bail!("{what} failed ({status}): see {}", self.log.display()),
            None => {
                let _ = process.kill();
                let _ = process.wait_within(REAP_WITHIN);
                bail!(
                    "{what} did not finish within {} s: see {}",
                    bound.as_secs(),
                    self.log.display()
                )
            }
        }
    }

    /// What the runtime starts: the node's own program, as its user, its output and errors
    /// appended to its log.
    fn spec(&self, what: &str) -> Result<ProcessSpec> {
        let launch = self.as_user()?;
        let log = Stream::appended_log(&self.log);
        let mut spec = ProcessSpec::new(what, Programs::Node, &launch.program)
            .args(launch.args)
            .streams(Stream::Null, log.clone(), log);
        spec.env = launch.env;
        Ok(spec)
    }
}

impl Launch {
    /// The program, arguments and environment that run the server as its user: `setpriv`
    /// changes the user and execs in place (the pid the run signals stays the server's), and
    /// `env` sets the environment only after the change, so that a preloaded library
    /// (libfaketime) starts as the server's user rather than as root's.
    fn as_user(&self) -> Result<Launch> {
        let Some(user) = self.user else {
            return Ok(self.clone());
        };
        let setpriv = find_program("setpriv").context("setpriv is missing (util-linux)")?;
        let mut args: Vec<OsString> = ["--reuid", user, "--regid", user, "--init-groups"]
            .into_iter()
            .map(OsString::from)
            .collect();
        args.extend(["--pdeathsig=KILL", "--", "/usr/bin/env"].map(OsString::from));
        args.extend(
            self.env
                .iter()
                .map(|(k, v)| OsString::from(format!("{k}={v}"))),
        );
        args.push(self.program.clone().into_os_string());
        args.extend(self.args.iter().cloned());
        Ok(Launch {
            program: setpriv,
            args,
            env: Vec::new(),
            user: None,
            ..self.clone()
        })
    }
}

/// What a service starts its servers with.
pub struct ServiceSetup<'a> {
    pub runtime: &'a dyn Runtime,
    pub nodes: &'a [Node],
    pub logs: &'a Path,
    pub scratch: &'a Path,
    pub children: &'a mut Children,
    /// Set when a clock nemesis will run: a service whose clock is read back some other way
    /// than its lock protocol opens that way (ZooKeeper's AdminServer).
    pub server_clock: bool,
    /// Set when a clock nemesis will run on a service moved by libfaketime: servers start
    /// under it.
    pub faketime: bool,
    /// Every server's launch, by node name, filled in by `launch`.
    pub launches: &'a mut BTreeMap<String, Launch>,
    /// `--server-bin`: the server to run instead of the one the runtime finds.
    pub server_bin: Option<&'a Path>,
    /// `--persistence`: what a redis-server keeps on disk (services whose entry supports it).
    pub persistence: persistence::Persistence,
    /// The run's lease (`--ttl`), for a service whose lease lives in its own configuration (a
    /// KV bucket's `max_age`), made at its start.
    pub ttl: Duration,
}

impl ServiceSetup<'_> {
    /// The server program: `--server-bin`'s, else `program` where the runtime finds it.
    pub fn server_program(&self, program: &str) -> Result<PathBuf> {
        if let Some(path) = self.server_bin {
            return Ok(path.to_path_buf());
        }
        let first = self.nodes.first().context("no node for the servers")?;
        self.runtime
            .find_program(first, program)
            .with_context(|| format!("{program} is not installed"))
    }

    /// Starts a server (under libfaketime if asked and `fakeable`, with its clock file at true
    /// time), and keeps its launch for restarts.
    pub fn launch(&mut self, mut launch: Launch, fakeable: bool) -> Result<()> {
        if self.faketime && !fakeable {
            bail!("{} cannot run under libfaketime", launch.program.display());
        }
        let refusal = self
            .faketime
            .then(|| self.runtime.refuses_faketime(&launch.node));
        if let Some(Some(why)) = refusal {
            bail!("cannot shift the clock of {}: {why}", launch.node.name);
        }
        if self.faketime {
            let file = crate::runtime::faketime::file(self.scratch, &launch.node.name);
            crate::runtime::faketime::set_offset(&file, 0)?;
            launch
                .env
                .extend(crate::runtime::faketime::environment(&file));
        }
        let process = launch.spawn(self.runtime)?;
        let name = launch.node.name.clone();
        let pid = self.children.add(
            crate::processes::children::Role::Server(name.clone()),
            process,
        );
        if self.faketime {
            crate::runtime::faketime::register(self.scratch, pid)?;
        }
        self.launches.insert(name, launch);
        Ok(())
    }

    /// Waits until `ready`, run inside `node`'s network, succeeds; fails early if the server
    /// on that node exits, and with the end of its log if it does not come up in time.
    pub fn wait_for(
        &mut self,
        what: &str,
        node: &Node,
        log: &Path,
        ready: impl Fn() -> Result<()> + Send + Sync + Clone + 'static,
    ) -> Result<()> {
        let role = crate::processes::children::Role::Server(node.name.clone());
        let runtime = self.runtime;
        let children = &mut *self.children;
        wait_until_ready(
            &format!("{what} on {}", node.name),
            log,
            Duration::from_secs(30),
            || children.has_exited(&role),
            || runtime.probe(node, Box::new(ready.clone())),
        )
    }
}

/// What `program args` prints on standard output, run as the node's server would be.
pub fn program_output(
    runtime: &dyn Runtime,
    node: &Node,
    program: &Path,
    args: &[&str],
) -> Option<String> {
    let spec = ProcessSpec::new("a version probe", Programs::Node, program)
        .args(args)
        .streams(Stream::Null, Stream::Piped, Stream::Null);
    let mut process = runtime.spawn(node, &spec).ok()?;
    let mut text = String::new();
    let read = process.take_stdout()?.read_to_string(&mut text);
    let status = process.wait().ok()?;
    (read.is_ok() && status.success()).then_some(text)
}

/// Polls `ready` until it succeeds; fails at once if the process `exited`, or once `timeout`
/// passes, with the last error and the end of the server's log either way.
pub fn wait_until_ready(
    what: &str,
    log: &Path,
    timeout: Duration,
    mut exited: impl FnMut() -> bool,
    mut ready: impl FnMut() -> Result<()>,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if exited() {
            bail!(
                "{what} exited as it started\nlast lines of {}:\n{}",
                log.display(),
                log_tail(log, 15)
            );
        }
        match ready() {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() >= deadline => {
                bail!(
                    "{what} was not ready after {:?}: {e:#}\nlast lines of {}:\n{}",
                    timeout,
                    log.display(),
                    log_tail(log, 15)
                )
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn log_tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_else(|e| format!("(unreadable: {e})"));
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
