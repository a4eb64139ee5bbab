//! One run, in phases (as Jepsen's `run!`): check the input and the machine, set up the nodes,
//! the lock service and the resource, run the clients under the nemeses until the time limit,
//! heal every fault, let the clients finish, tear everything down, then check the history.
//!
//! Teardown does not depend on reaching the end: the processes and the runtime undo themselves
//! when dropped, which also happens on an error or a panic; Ctrl-C and SIGTERM end the workload
//! phase early and take the same path.

use std::collections::BTreeMap;
use std::fs;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use lockpick_checkers::{Op, OpType, Process, Results, F};
use lockpick_workloads::RunClock;
use serde::Serialize;
use serde_json::json;

use crate::children::{read_ops, Children, Event, Role};
use crate::cli::{Fencing, LockKind, NemesisKind};
use crate::cluster::{ClientCommand, Cluster};
use crate::config::{bad, RunConfig};
use crate::delay_proxy::DelayLink;
use crate::faketime;
use crate::firewall;
use crate::history_log::HistoryLog;
use crate::nemesis::Scheduler;
use crate::run_prefix::RunPrefix;
use crate::runtime::netns::NetnsRuntime;
use crate::runtime::{Node, Runtime};
use crate::schedule::{Schedule, Shape};
use crate::service::etcd::EtcdService;
use crate::service::redis::RedisService;
use crate::service::zookeeper::ZookeeperService;
use crate::service::{find_program, LockService, Requirement, ServiceSetup};
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
    /// The history as checked (empty if it was malformed).
    pub ops: Vec<Op>,
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
    let mut requirements = lock_service(config.lock).requirements();
    if config.nemeses.iter().any(|n| n.is_partition()) {
        requirements.push(Requirement {
            program: "nft",
            package: "nftables",
        });
    }
    if config.nemeses.iter().any(|n| n.is_server_clock()) {
        requirements.push(Requirement {
            program: faketime::LIBFAKETIME,
            package: "faketime",
        });
    }
    for r in requirements {
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

    let (ops, results) = crate::report::load(&dir)?;
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
    crate::report::write_run_reports(&dir, &ops, &results)?;
    crate::report::write_index(&config.store)?;
    Ok(Finished {
        dir,
        results,
        interrupted,
        crashed_clients,
        ops,
    })
}

/// Everything a running test holds. Dropping it stops every process and removes every node,
/// in that order, whatever happened before.
struct Workload {
    cluster: Cluster,
    clock: RunClock,
    log: HistoryLog,
    events: mpsc::Receiver<Event>,
    scheduler: Scheduler,
    open_clients: usize,
    crashed_clients: Vec<String>,
    /// Clients that believe they hold the lock now, for the progress line's count of overlaps
    /// so far (the checkers decide; this only shows the run is finding something).
    holding: std::collections::BTreeSet<u64>,
    overlaps_seen: u64,
    /// Each client's invocation still waiting for its completion.
    open_invocations: BTreeMap<u64, Op>,
    /// A fault injected into the controller itself, for tests of lockpick's own reliability.
    injected: Option<Injection>,
}

/// Faults a test can inject into the controller through `LOCKPICK_INJECT`:
/// `error-after:N` or `panic-after:N` (after N operations are recorded).
#[derive(Clone, Copy, Debug)]
enum Injection {
    ErrorAfter(u64),
    PanicAfter(u64),
}

impl Injection {
    fn from_environment() -> Option<Injection> {
        let text = std::env::var("LOCKPICK_INJECT").ok()?;
        let (kind, count) = text.split_once(':')?;
        let count = count.parse().ok()?;
        match kind {
            "error-after" => Some(Injection::ErrorAfter(count)),
            "panic-after" => Some(Injection::PanicAfter(count)),
            _ => None,
        }
    }
}

impl Workload {
    fn setup(config: &RunConfig, prefix: &RunPrefix, dir: &Path) -> Result<Workload> {
        let logs = dir.join(store::LOGS);
        let scratch = Scratch::create(&prefix.name)?;
        let mut runtime = NetnsRuntime::create(&prefix.name, prefix.subnet())?;
        let mut children = Children::default();
        let mut service = lock_service(config.lock);
        let mut nodes = BTreeMap::new();
        let mut add = |runtime: &mut NetnsRuntime, name: String| -> Result<Node> {
            let node = runtime.add_node(&name)?;
            nodes.insert(name, node.clone());
            Ok(node)
        };
        let servers: Vec<Node> = (1..=service.node_count())
            .map(|i| add(&mut runtime, format!("n{i}")))
            .collect::<Result<_>>()?;
        let resource_node = add(&mut runtime, "resource".to_string())?;
        let client_nodes: Vec<Node> = (0..config.clients)
            .map(|i| add(&mut runtime, format!("c{i}")))
            .collect::<Result<_>>()?;
        if config.nemeses.iter().any(|n| n.is_partition()) {
            for node in nodes.values() {
                firewall::install(&runtime, node, config.partition_mode)?;
            }
        }

        let faketime = config.nemeses.iter().any(|n| n.is_server_clock());
        let mut launches = BTreeMap::new();
        let started = Instant::now();
        service.start(&mut ServiceSetup {
            runtime: &runtime,
            nodes: &servers,
            logs: &logs,
            scratch: &scratch.path,
            children: &mut children,
            faketime,
            launches: &mut launches,
        })?;
        eprintln!(
            "lockpick: {} ready on {} node(s) in {:.2} s",
            config.lock.name(),
            servers.len(),
            started.elapsed().as_secs_f64()
        );
        let endpoints: BTreeMap<String, SocketAddr> = servers
            .iter()
            .zip(service.endpoints())
            .map(|(node, endpoint)| Ok((node.name.clone(), endpoint.parse()?)))
            .collect::<Result<_>>()?;

        let shape = Shape {
            servers: servers.iter().map(|n| n.name.clone()).collect(),
            clients: client_nodes.iter().map(|n| n.name.clone()).collect(),
            others: vec![resource_node.name.clone()],
        };
        let schedule = match &config.schedule {
            Some(path) => Schedule::load(path)?,
            None => Schedule::plan(config, &shape),
        };
        schedule.save(&dir.join(store::SCHEDULE))?;

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
                "fencing": fencing_name(config.fencing),
                "nemesis": config.nemesis_name(),
                "clients": config.clients,
                "seed": config.seed,
                "prefix": prefix.name,
                "servers": service.endpoints(),
            }),
        ))?;

        let (sender, events) = mpsc::channel();
        let me = std::env::current_exe().context("cannot find the lockpick binary")?;
        let resource = SocketAddr::from((resource_node.ip, RESOURCE_PORT));
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
            || children.has_exited(&Role::Resource),
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

        let spec = crate::client::spec_template(config, clock.origin_ns(), resource);
        let client_command = ClientCommand {
            program: me,
            spec,
            resource,
            logs: logs.clone(),
        };
        let mut cluster = Cluster::new(
            children,
            scratch,
            runtime,
            nodes,
            endpoints,
            launches,
            client_command,
            sender,
        );
        let delays = |kind| config.nemeses.contains(&kind);
        if delays(NemesisKind::DelayHolderWrite) || delays(NemesisKind::DelayClient) {
            for node in &client_nodes {
                let namespace = || fs::File::open(format!("/run/netns/{}", node.host_name));
                let link = DelayLink::start(namespace()?, resource)?;
                cluster.resource_links.insert(node.name.clone(), link);
                if delays(NemesisKind::DelayClient) {
                    let mut links = BTreeMap::new();
                    for (server, endpoint) in &cluster.endpoints {
                        links.insert(server.clone(), DelayLink::start(namespace()?, *endpoint)?);
                    }
                    cluster.server_links.insert(node.name.clone(), links);
                }
            }
        }
        let deadline = config.time_limit.as_nanos() as u64;
        for node in &client_nodes {
            cluster.spawn_client(&node.name, deadline)?;
        }

        Ok(Workload {
            cluster,
            clock,
            log,
            events,
            scheduler: Scheduler::new(&schedule),
            open_clients: 0,
            crashed_clients: Vec::new(),
            holding: Default::default(),
            overlaps_seen: 0,
            open_invocations: BTreeMap::new(),
            injected: Injection::from_environment(),
        })
    }

    /// The workload phase, then heal, then the clients' last operations. Returns whether the
    /// run was interrupted.
    fn execute(&mut self, config: &RunConfig, interrupt: &AtomicBool) -> Result<bool> {
        let heal_at = config.heal_at().as_nanos() as u64;
        let deadline = config.time_limit.as_nanos() as u64;
        // After the deadline, a client may still be finishing its critical section: give it time
        // for its requests to time out and its work to finish.
        let grace = config.fault_duration + config.ttl * 4 + config.work + Duration::from_secs(10);
        let hard_stop = deadline + grace.as_nanos() as u64;
        let mut progress = Progress::new(config.time_limit);
        let mut healed = false;
        let mut timed_out = false;
        let result = loop {
            if let Err(e) = self.receive(config, !healed) {
                break Err(e);
            }
            let now = self.clock.now();
            let interrupted = interrupt.load(Ordering::SeqCst);
            if !healed {
                let ticked = self
                    .scheduler
                    .on_tick(now, &mut self.cluster, config, &mut self.log);
                if let Err(e) = ticked {
                    break Err(e);
                }
                if now >= heal_at || interrupted {
                    healed = true;
                    let healing =
                        self.scheduler
                            .heal(now, &mut self.cluster, config, &mut self.log);
                    if let Err(e) = healing {
                        break Err(e);
                    }
                }
            }
            let finished = now >= deadline && self.open_clients == 0;
            if healed && (finished || interrupted || now >= hard_stop) {
                timed_out = !finished && !interrupted;
                break Ok(interrupted);
            }
            progress.show(
                now,
                self.log.len(),
                self.scheduler.open_faults(),
                self.overlaps_seen,
            );
        };
        progress.finish();
        // Whatever happened, heal before stopping anything (heal is idempotent).
        let healing =
            self.scheduler
                .heal(self.clock.now(), &mut self.cluster, config, &mut self.log);
        self.note_crashed_clients(timed_out);
        let children = &mut self.cluster.children;
        children.stop(|r| matches!(r, Role::Client(_)), Duration::from_secs(2));
        // The last look at the resource, once no client can reach it any more.
        match self.cluster.final_read() {
            Ok(state) => {
                let value = json!({ "value": state.value, "applied": state.applied });
                let op = Op::new(
                    self.clock.now(),
                    Process::named(Process::HARNESS),
                    OpType::Ok,
                    F::FinalRead,
                    value,
                );
                self.log.append(op)?;
            }
            Err(e) => eprintln!("lockpick: the final read of the resource failed: {e:#}"),
        }
        let children = &mut self.cluster.children;
        children.stop(|r| *r == Role::Resource, Duration::from_secs(2));
        self.cluster.close_streams();
        // Every stream is closed now: record what was still in the pipes.
        let drained = self.drain(config);
        let interrupted = result?;
        healing?;
        drained?;
        Ok(interrupted)
    }

    /// Finds clients that exited on their own with an error (a bug in a lock client, or a
    /// missing library), and, when the grace period ran out, clients that never finished: a run
    /// in which the lock was not exercised as configured is not called valid.
    fn note_crashed_clients(&mut self, timed_out: bool) {
        let wait = Duration::from_millis(if self.open_clients == 0 { 1000 } else { 0 });
        let processes: Vec<u64> = self.cluster.slots.values().copied().collect();
        for process in processes {
            let role = Role::Client(process);
            match self.cluster.children.exit_status(&role, wait) {
                Some(status) if !status.success() => self.crashed_clients.push(format!(
                    "client {process} exited with {status} (see logs/client-{process}.log)"
                )),
                None if timed_out => self.crashed_clients.push(format!(
                    "client {process} had not finished when the grace period after the time \
                     limit ran out: it was killed"
                )),
                _ => {}
            }
        }
    }

    /// Waits briefly for the next event and records it.
    fn receive(&mut self, config: &RunConfig, nemesis_active: bool) -> Result<()> {
        match self.events.recv_timeout(Duration::from_millis(5)) {
            Ok(event) => self.record(config, event, nemesis_active),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => Ok(()),
        }
    }

    fn record(&mut self, config: &RunConfig, event: Event, nemesis_active: bool) -> Result<()> {
        match event {
            Event::Op(op) => {
                let op = self.log.append(op)?;
                match self.injected {
                    Some(Injection::ErrorAfter(n)) if self.log.len() >= n => {
                        bail!("injected error after {n} operations (LOCKPICK_INJECT)")
                    }
                    Some(Injection::PanicAfter(n)) if self.log.len() >= n => {
                        panic!("injected panic after {n} operations (LOCKPICK_INJECT)")
                    }
                    _ => {}
                }
                if let Process::Client(p) = op.process {
                    if op.kind == OpType::Invoke {
                        self.open_invocations.insert(p, op.clone());
                    } else {
                        self.open_invocations.remove(&p);
                    }
                    match (op.f, op.kind) {
                        (F::Acquire, OpType::Ok) => {
                            if self.holding.iter().any(|h| *h != p) {
                                self.overlaps_seen += 1;
                            }
                            self.holding.insert(p);
                        }
                        (F::Acquire | F::Release, OpType::Invoke) => {
                            self.holding.remove(&p);
                        }
                        _ => {}
                    }
                }
                if nemesis_active {
                    let now = self.clock.now();
                    self.scheduler
                        .on_op(&op, now, &mut self.cluster, config, &mut self.log)?;
                }
            }
            Event::Opened(Role::Client(_)) => self.open_clients += 1,
            Event::Closed(Role::Client(p)) => {
                self.open_clients = self.open_clients.saturating_sub(1);
                self.complete_abandoned(p)?;
            }
            Event::Opened(_) | Event::Closed(_) => {}
            Event::Garbage(role, line) => {
                eprintln!("lockpick: {role:?} wrote a line that is not an operation: {line}");
            }
        }
        Ok(())
    }

    /// A client's stream closed with an invocation open (it crashed, hung and was killed, or
    /// was killed by a nemesis): nobody knows whether that operation took effect, so it is
    /// completed as `info`, as Jepsen does with a crashed process.
    fn complete_abandoned(&mut self, process: u64) -> Result<()> {
        let Some(invoke) = self.open_invocations.remove(&process) else {
            return Ok(());
        };
        let mut value = json!({
            "acquisition": invoke.value["acquisition"],
            "error": "the client process ended before this operation completed",
        });
        if invoke.value.get("token").is_some() {
            value["token"] = invoke.value["token"].clone();
        }
        let op = Op::new(
            self.clock.now(),
            invoke.process,
            OpType::Info,
            invoke.f,
            value,
        );
        self.log.append(op)?;
        Ok(())
    }

    /// Records the rest of every stream, waiting at most a few seconds.
    fn drain(&mut self, config: &RunConfig) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match self.events.recv_timeout(Duration::from_millis(50)) {
                Ok(event) => self.record(config, event, false)?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
        }
        bail!("the clients' output did not close after they were stopped")
    }

    fn teardown(&mut self) {
        self.cluster.children.stop_all(Duration::from_secs(3));
        self.cluster.resource_links.clear();
        self.cluster.server_links.clear();
        faketime::forget_all(&self.cluster.scratch.path);
        self.cluster.scratch.remove();
        for problem in self.cluster.runtime.teardown() {
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
        faketime::forget_all(&self.path);
        self.remove();
    }
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

    fn show(&mut self, now: u64, operations: u64, faults: usize, overlaps: u64) {
        if !self.terminal
            || self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        self.last = Some(Instant::now());
        eprint!(
            "\r  {:.0} s / {:.0} s, {operations} operations, {faults} fault(s) active, \
             {overlaps} overlapping acquisitions so far   ",
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
