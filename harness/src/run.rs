//! One run, in phases (as Jepsen's `run!`): check the input and the machine, set up the nodes,
//! the lock service and the resource, run the clients under the nemeses until the time limit,
//! heal every fault, let the clients finish, tear everything down, then check the history.
//!
//! Teardown does not depend on reaching the end: the processes and the runtime undo themselves
//! when dropped, which also happens on an error or a panic; Ctrl-C and SIGTERM end the workload
//! phase early and take the same path.

use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use lockpick_checkers::{Op, OpType, Process, Results, F};
use lockpick_workloads::RunClock;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::json;

use crate::children::{read_ops, Children, Event, Role};
use crate::cli::{Fencing, LockKind, NemesisKind};
use crate::config::{bad, RunConfig};
use crate::history_log::HistoryLog;
use crate::nemesis::pause_holder::PauseHolder;
use crate::nemesis::pause_node::PauseNode;
use crate::nemesis::{Composed, Nemesis, Targets};
use crate::run_prefix::RunPrefix;
use crate::runtime::netns::NetnsRuntime;
use crate::runtime::{Node, Runtime};
use crate::service::etcd::EtcdService;
use crate::service::redis::RedisService;
use crate::service::zookeeper::ZookeeperService;
use crate::service::{find_program, LockService, ServiceSetup};
use crate::store;

const RESOURCE_PORT: u16 = 7000;
/// Where runs keep their in-memory files, each under its prefix.
pub const SCRATCH_ROOT: &str = "/dev/shm";

/// What a finished run hands back to the command line.
pub struct Finished {
    pub dir: PathBuf,
    pub results: Results,
    pub interrupted: bool,
    /// Clients that exited on their own with an error, as "client 3 exited with …".
    pub crashed_clients: Vec<String>,
}

/// `results.json`: the checkers' results and how the run went.
#[derive(Serialize)]
struct RunResults<'a> {
    run: RunInfo<'a>,
    #[serde(flatten)]
    results: &'a Results,
}

#[derive(Serialize)]
struct RunInfo<'a> {
    name: String,
    prefix: &'a str,
    seed: u64,
    interrupted: bool,
    crashed_clients: &'a [String],
    config: &'a RunConfig,
}

pub fn lock_service(lock: LockKind) -> Box<dyn LockService> {
    match lock {
        LockKind::Redis => Box::new(RedisService::new(1)),
        LockKind::Redlock | LockKind::Rslock => Box::new(RedisService::new(5)),
        LockKind::Etcd => Box::new(EtcdService::new()),
        LockKind::Zookeeper => Box::new(ZookeeperService::new()),
    }
}

/// Checks what a run needs from the machine before anything is created.
pub fn preflight(config: &RunConfig) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        return Err(bad(
            "lockpick run needs root: it creates network namespaces and signals the processes \
             it starts (run it with sudo)",
        ));
    }
    let mut missing = Vec::new();
    if find_program("ip").is_none() {
        missing.push(("ip", "iproute2"));
    }
    for r in lock_service(config.lock).requirements() {
        if !r.is_met() {
            missing.push((r.program, r.package));
        }
    }
    if let Some((program, package)) = missing.first() {
        return Err(bad(format!(
            "{program} is not installed (not found on PATH): install it with \
             `apt-get install {package}`"
        )));
    }
    Ok(())
}

/// Runs one test and checks its history. `interrupt` is set by Ctrl-C or SIGTERM.
pub fn run(config: &RunConfig, interrupt: Arc<AtomicBool>) -> Result<Finished> {
    preflight(config)?;
    let prefix = RunPrefix::claim()?;
    let dir = store::create_run_dir(&config.store, &config.name())?;
    fs::write(
        dir.join(store::COMMAND),
        shell_words(&config.command) + "\n",
    )?;
    fs::write(
        dir.join(store::CONFIG),
        serde_json::to_string_pretty(config)? + "\n",
    )?;
    eprintln!(
        "lockpick: {} with {} clients, TTL {:?}, fencing {:?}, seed {}, for {:?} (run {}, in {})",
        config.name(),
        config.clients,
        config.ttl,
        config.fencing,
        config.seed,
        config.time_limit,
        prefix.name,
        dir.display()
    );

    let workload = Workload::setup(config, &prefix, &dir);
    let (interrupted, crashed_clients) = match workload {
        Ok(mut workload) => {
            let outcome = workload.execute(config, &interrupt);
            workload.teardown();
            (outcome?, workload.crashed_clients)
        }
        Err(e) => return Err(e),
    };

    let history = fs::File::open(dir.join(store::HISTORY))?;
    let results = lockpick_checkers::check_reader(std::io::BufReader::new(history));
    let run_results = RunResults {
        run: RunInfo {
            name: config.name(),
            prefix: &prefix.name,
            seed: config.seed,
            interrupted,
            crashed_clients: &crashed_clients,
            config,
        },
        results: &results,
    };
    fs::write(
        dir.join(store::RESULTS),
        serde_json::to_string_pretty(&run_results)? + "\n",
    )?;
    Ok(Finished {
        dir,
        results,
        interrupted,
        crashed_clients,
    })
}

/// Everything a running test holds. Dropping it stops every process and removes every node,
/// in that order, whatever happened before.
struct Workload {
    // Field order is drop order: processes first, then their files, then their namespaces.
    children: Children,
    scratch: Scratch,
    runtime: NetnsRuntime,
    clock: RunClock,
    log: HistoryLog,
    events: mpsc::Receiver<Event>,
    targets: Targets,
    nemesis: Composed,
    open_clients: usize,
    resource_open: bool,
    crashed_clients: Vec<String>,
}

impl Workload {
    fn setup(config: &RunConfig, prefix: &RunPrefix, dir: &Path) -> Result<Workload> {
        let logs = dir.join(store::LOGS);
        let scratch = Scratch::create(&prefix.name)?;
        let mut runtime = NetnsRuntime::create(&prefix.name, prefix.subnet())?;
        let mut children = Children::default();
        let mut service = lock_service(config.lock);
        let servers: Vec<Node> = (1..=service.node_count())
            .map(|i| runtime.add_node(&format!("n{i}")))
            .collect::<Result<_>>()?;
        let resource_node = runtime.add_node("resource")?;
        let client_nodes: Vec<Node> = (0..config.clients)
            .map(|i| runtime.add_node(&format!("c{i}")))
            .collect::<Result<_>>()?;

        let started = Instant::now();
        service.start(&mut ServiceSetup {
            runtime: &runtime,
            nodes: &servers,
            logs: &logs,
            scratch: &scratch.path,
            children: &mut children,
        })?;
        eprintln!(
            "lockpick: {} ready on {} node(s) in {:.2} s",
            config.lock.name(),
            servers.len(),
            started.elapsed().as_secs_f64()
        );

        let clock = RunClock::start();
        let mut log = HistoryLog::create(&dir.join(store::HISTORY))?;
        log.append(Op::new(
            clock.now(),
            Process::named(Process::HARNESS),
            OpType::Info,
            F::Setup,
            json!({
                "lock": config.lock.name(),
                "token": service.token(),
                "ttl_ms": config.ttl.as_millis() as u64,
                "fencing": match config.fencing { Fencing::On => "on", Fencing::Off => "off" },
                "nemesis": config.nemesis_name(),
                "clients": config.clients,
                "seed": config.seed,
                "prefix": prefix.name,
                "servers": service.endpoints(),
            }),
        ))?;

        let (sender, events) = mpsc::channel();
        let me = std::env::current_exe().context("cannot find the lockpick binary")?;
        let resource = std::net::SocketAddr::from((resource_node.ip, RESOURCE_PORT));
        let mut child = runtime
            .command(&resource_node, &me)?
            .arg("resource")
            .args(["--listen", &resource.to_string()])
            .args(["--fencing", fencing_name(config.fencing)])
            .args(["--origin-ns", &clock.origin_ns().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file(&logs, "resource.log")?)
            .spawn()
            .context("cannot start the resource")?;
        read_ops(
            Role::Resource,
            child.stdout.take().expect("piped"),
            sender.clone(),
        );
        children.add(Role::Resource, child);
        crate::service::wait_until_ready(
            "the resource",
            &logs.join("resource.log"),
            Duration::from_secs(10),
            || {
                runtime.probe(
                    &resource_node,
                    Box::new(move || {
                        std::net::TcpStream::connect_timeout(
                            &resource,
                            Duration::from_millis(200),
                        )?;
                        Ok(())
                    }),
                )
            },
        )?;

        let mut targets = Targets::default();
        for spawned in children.iter() {
            if let Role::Server(node) = &spawned.role {
                targets.servers.insert(node.clone(), spawned.pid());
            }
        }
        let deadline = config.time_limit.as_nanos() as u64;
        for (process, node) in client_nodes.iter().enumerate() {
            let process = process as u64;
            let mut command = runtime.command(node, &me)?;
            command
                .arg("client")
                .args(["--process", &process.to_string()])
                .args(["--lock", config.lock.name()])
                .args(["--resource", &resource.to_string()])
                .args(["--ttl-ms", &config.ttl.as_millis().to_string()])
                .args([
                    "--op-timeout-ms",
                    &config.op_timeout.as_millis().to_string(),
                ])
                .args(["--work-ms", &config.work.as_millis().to_string()])
                .args(["--origin-ns", &clock.origin_ns().to_string()])
                .args(["--deadline-ns", &deadline.to_string()])
                .arg("--skew-file")
                .arg(scratch.path.join(format!("clock-skew-{process}")));
            for endpoint in service.endpoints() {
                command.args(["--node", &endpoint]);
            }
            let mut child = command
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(log_file(&logs, &format!("client-{process}.log"))?)
                .spawn()
                .context("cannot start a client")?;
            read_ops(
                Role::Client(process),
                child.stdout.take().expect("piped"),
                sender.clone(),
            );
            targets
                .clients
                .insert(process, children.add(Role::Client(process), child));
        }
        drop(sender);

        Ok(Workload {
            children,
            scratch,
            runtime,
            clock,
            log,
            events,
            targets,
            nemesis: build_nemesis(config),
            open_clients: client_nodes.len(),
            resource_open: true,
            crashed_clients: Vec::new(),
        })
    }

    /// The workload phase, then heal, then the clients' last operations. Returns whether the
    /// run was interrupted.
    fn execute(&mut self, config: &RunConfig, interrupt: &AtomicBool) -> Result<bool> {
        let deadline = config.time_limit.as_nanos() as u64;
        // After the heal, a client may still be finishing its critical section: give it time for
        // a pause to end, its requests to time out and its work to finish.
        let grace = config.pause + config.ttl * 4 + config.work + Duration::from_secs(10);
        let hard_stop = deadline + grace.as_nanos() as u64;
        let mut progress = Progress::new(config.time_limit);
        let mut healed = false;
        let result = loop {
            if let Err(e) = self.receive(!healed) {
                break Err(e);
            }
            let now = self.clock.now();
            let interrupted = interrupt.load(Ordering::SeqCst);
            if !healed {
                if let Err(e) = self.nemesis.on_tick(now, &self.targets, &mut self.log) {
                    break Err(e);
                }
                if now >= deadline || interrupted || self.open_clients == 0 {
                    healed = true;
                    if let Err(e) = self.nemesis.heal(now, &self.targets, &mut self.log) {
                        break Err(e);
                    }
                }
            }
            if healed && (self.open_clients == 0 || interrupted || now >= hard_stop) {
                break Ok(interrupted);
            }
            progress.show(now, self.log.len());
        };
        progress.finish();
        self.note_crashed_clients(config.clients);
        // Whatever happened, heal before stopping anything (heal is idempotent).
        let healing = self
            .nemesis
            .heal(self.clock.now(), &self.targets, &mut self.log);
        self.children
            .stop(|r| matches!(r, Role::Client(_)), Duration::from_secs(2));
        self.children
            .stop(|r| *r == Role::Resource, Duration::from_secs(2));
        // Every stream is closed now: record what was still in the pipes.
        let drained = self.drain();
        let interrupted = result?;
        healing?;
        drained?;
        Ok(interrupted)
    }

    /// Finds clients that exited on their own with an error (a bug in a lock client, or a
    /// missing library), so a run in which the lock was barely exercised is not called valid.
    fn note_crashed_clients(&mut self, clients: u32) {
        for process in 0..clients as u64 {
            let wait = Duration::from_millis(if self.open_clients == 0 { 1000 } else { 0 });
            match self.children.exit_status(&Role::Client(process), wait) {
                Some(status) if !status.success() => self.crashed_clients.push(format!(
                    "client {process} exited with {status} (see logs/client-{process}.log)"
                )),
                _ => {}
            }
        }
    }

    /// Waits briefly for the next event and records it.
    fn receive(&mut self, nemesis_active: bool) -> Result<()> {
        match self.events.recv_timeout(Duration::from_millis(5)) {
            Ok(event) => self.record(event, nemesis_active),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => Ok(()),
        }
    }

    fn record(&mut self, event: Event, nemesis_active: bool) -> Result<()> {
        match event {
            Event::Op(op) => {
                let op = self.log.append(op)?;
                if nemesis_active {
                    let now = self.clock.now();
                    self.nemesis.on_op(&op, now, &self.targets, &mut self.log)?;
                }
            }
            Event::Closed(Role::Resource) => self.resource_open = false,
            Event::Closed(_) => self.open_clients = self.open_clients.saturating_sub(1),
            Event::Garbage(role, line) => {
                eprintln!("lockpick: {role:?} wrote a line that is not an operation: {line}");
            }
        }
        Ok(())
    }

    /// Records the rest of every stream, waiting at most a few seconds.
    fn drain(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match self.events.recv_timeout(Duration::from_millis(50)) {
                Ok(event) => self.record(event, false)?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
        }
        bail!("the clients' output did not close after they were stopped")
    }

    fn teardown(&mut self) {
        self.children.stop_all(Duration::from_secs(3));
        self.scratch.remove();
        for problem in self.runtime.teardown() {
            eprintln!("lockpick: teardown: {problem}");
        }
    }
}

/// The run's files in memory (`/dev/shm/<prefix>`): server data, configuration, clock skews.
pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn create(prefix: &str) -> Result<Scratch> {
        let path = PathBuf::from(SCRATCH_ROOT).join(prefix);
        fs::create_dir(&path).with_context(|| format!("cannot create {path:?}"))?;
        Ok(Scratch { path })
    }

    fn remove(&self) {
        if let Err(e) = fs::remove_dir_all(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("lockpick: teardown: cannot remove {:?}: {e}", self.path);
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.remove();
    }
}

fn build_nemesis(config: &RunConfig) -> Composed {
    let nemeses = config
        .nemeses
        .iter()
        .enumerate()
        .map(|(i, kind)| {
            // Each nemesis draws from its own stream, so adding one does not shift another's
            // schedule.
            let rng = ChaCha8Rng::seed_from_u64(config.seed.wrapping_add(i as u64 * 0x9E37_79B9));
            let nemesis: Box<dyn Nemesis> = match kind {
                NemesisKind::PauseHolder => {
                    Box::new(PauseHolder::new(rng, config.pause, config.fault_interval))
                }
                NemesisKind::PauseNode => {
                    Box::new(PauseNode::new(rng, config.pause, config.fault_interval))
                }
                NemesisKind::None => unreachable!("config drops `none`"),
            };
            nemesis
        })
        .collect();
    Composed::new(nemeses)
}

fn fencing_name(fencing: Fencing) -> &'static str {
    match fencing {
        Fencing::On => "on",
        Fencing::Off => "off",
    }
}

pub fn log_file(logs: &Path, name: &str) -> Result<fs::File> {
    let path = logs.join(name);
    fs::File::create(&path).with_context(|| format!("cannot create {path:?}"))
}

/// The command line as a shell would need it typed.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A one-line progress report on a terminal, redrawn every second; silent otherwise.
struct Progress {
    limit: Duration,
    terminal: bool,
    last: Option<Instant>,
}

impl Progress {
    fn new(limit: Duration) -> Progress {
        Progress {
            limit,
            terminal: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    fn show(&mut self, now: u64, operations: u64) {
        if !self.terminal
            || self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        self.last = Some(Instant::now());
        eprint!(
            "\r  {:.0} s / {:.0} s, {operations} operations   ",
            now as f64 / 1e9,
            self.limit.as_secs_f64()
        );
    }

    fn finish(&self) {
        if self.terminal && self.last.is_some() {
            eprintln!();
        }
    }
}
