//! The setup phase: the nodes, the lock service's servers, the resource, the schedule, the
//! history's first line, the delay proxies, and the clients. Whatever it made undoes itself
//! when dropped, so a failure halfway leaves nothing behind.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use lockpick_checkers::setup::{Setup, SetupRecord};
use lockpick_checkers::{Op, OpType, Process, F};
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::RunClock;
use serde_json::Value;

use super::events::Workload;
use super::startup_times::StartupTimes;
use crate::cluster::{ClientCommand, Cluster, Parts};
use crate::config::RunConfig;
use crate::history_log::HistoryLog;
use crate::nemesis::window::RESOURCE_NODE;
use crate::processes::children::{read_ops, Children, Role};
use crate::run::scheduler::Scheduler;
use crate::run_prefix::RunPrefix;
use crate::runtime::process_spec::{ProcessSpec, Programs, Stream};
use crate::runtime::{Node, Runtime, RuntimeSettings};
use crate::schedule::Schedule;
use crate::scratch::Scratch;
use crate::service::entry::ClockMover;
use crate::service::ServiceSetup;
use crate::store;

const RESOURCE_PORT: u16 = 7000;

/// Runs the setup phase; each stage below is one step of it, in this order. Returns the
/// workload and how long its phases took since `begun`, the run's start.
pub fn setup(
    config: &RunConfig,
    prefix: &RunPrefix,
    dir: &Path,
    begun: Instant,
) -> Result<(Workload, StartupTimes)> {
    let logs = dir.join(store::LOGS);
    crate::run_prefix::record_made(&prefix.name, "scratch")?;
    let scratch = Scratch::create(&prefix.name)?;
    let mut service = config.lock.service();
    let shape = config.shape();
    // The gate before the nodes: a comparison's cells all reach it within moments of their
    // start, in the comparison's order, so that order decides; and a light cell that yields
    // makes its nodes after the heavy start-ups too (its `ip` processes are CPU as well).
    let pass = enter_startup_gate(config);
    let making = Instant::now();
    let (runtime, nodes) = make_nodes(config, prefix, dir, &scratch, service.name())?;
    let nodes_seconds = making.elapsed().as_secs_f64();
    let servers: Vec<Node> = shape.servers.iter().map(|n| nodes[n].clone()).collect();
    let mut children = Children::default();
    let mut launches = BTreeMap::new();
    let server_bin = config.server_bins.get(service.name()).map(PathBuf::as_path);
    let gate_wait = pass.waited;
    let (started, service_start) = start_service(
        config,
        pass,
        service.as_mut(),
        &mut ServiceSetup {
            runtime: runtime.as_ref(),
            nodes: &servers,
            logs: &logs,
            scratch: &scratch.path,
            children: &mut children,
            server_clock: config.needs().server_clock,
            faketime: config.needs().server_clock
                && config.lock.service_entry().clock_mover == ClockMover::Faketime,
            launches: &mut launches,
            server_bin,
            persistence: config.persistence.unwrap_or_default(),
            ttl: config.ttl,
        },
    )?;
    let schedule = match &config.schedule {
        Some(path) => Schedule::load(path)?,
        None => config.plan_schedule(),
    };
    schedule.save(&dir.join(store::SCHEDULE))?;

    let clock = RunClock::start();
    let times = StartupTimes {
        nodes_seconds,
        gate_wait_seconds: gate_wait.as_secs_f64(),
        service_seconds: service_start.as_secs_f64(),
        clock_started_seconds: begun.elapsed().as_secs_f64(),
        first_contended_seconds: None,
    };
    let mut log = HistoryLog::create(&dir.join(store::HISTORY))?;
    let record = setup_record(config, prefix, runtime.as_ref(), &started)?;
    log.append(Op::new(
        clock.now(),
        Process::named(Process::HARNESS),
        OpType::Info,
        F::Setup,
        serde_json::to_value(&record)?,
    ))?;

    let (sender, events) = mpsc::channel();
    let me = std::env::current_exe().context("cannot find the lockpick binary")?;
    let (resource, secret) = start_resource(
        config,
        (runtime.as_ref(), &nodes[RESOURCE_NODE]),
        (&me, &logs, &clock),
        &mut children,
        &sender,
    )?;
    let mut cluster = Cluster::new(Parts {
        children,
        service,
        scratch,
        runtime,
        nodes,
        endpoints: started.endpoints,
        launches,
        client_command: ClientCommand {
            program: me,
            spec: client_spec(config, resource, &clock),
            resource,
            logs,
            secret,
            clock_mover: config.lock.client_clock_mover(),
        },
        events: sender,
    });
    let needs = config.needs();
    if needs.resource_links || needs.server_links {
        cluster.install_delay_links(&shape.clients, needs.server_links)?;
    }
    let deadline = config.time_limit.as_nanos() as u64;
    for slot in &shape.clients {
        cluster.spawn_client(slot, deadline)?;
    }
    let scheduler = Scheduler::new(&schedule, config.faults.clone())?;
    Ok((Workload::new(cluster, clock, log, events, scheduler), times))
}

/// The runtime and every node of the run (servers, clients, the resource's), with firewall
/// rules where a nemesis will cut or drop packets: the ground everything else stands on.
fn make_nodes(
    config: &RunConfig,
    prefix: &RunPrefix,
    dir: &Path,
    scratch: &Scratch,
    service: &str,
) -> Result<(Box<dyn Runtime>, BTreeMap<String, Node>)> {
    let shape = config.shape();
    let mut runtime: Box<dyn Runtime> = config.runtime.create(&RuntimeSettings {
        prefix: &prefix.name,
        subnet: prefix.subnet(),
        service,
        servers: &shape.servers,
        images: &config.images,
        shared: vec![dir.to_path_buf(), scratch.path.clone()],
    })?;
    let mut nodes = BTreeMap::new();
    let making = Instant::now();
    for name in shape.everyone() {
        nodes.insert(name.clone(), runtime.add_node(name)?);
    }
    crate::tell!(
        "lockpick: {} node(s) up in {:.2} s ({} runtime)",
        nodes.len(),
        making.elapsed().as_secs_f64(),
        config.runtime.name()
    );
    if config.needs().firewall {
        for node in nodes.values() {
            runtime.install_firewall(node, config.faults.partition_mode)?;
        }
    }
    Ok((runtime, nodes))
}

/// What the started service said about itself, for the history's setup line and the cluster.
struct Started {
    facts: Option<BTreeMap<String, Value>>,
    server_versions: BTreeMap<String, String>,
    server_bins: BTreeMap<String, String>,
    endpoints: BTreeMap<String, SocketAddr>,
    /// The addresses clients reach the servers at, in the service's order.
    addresses: Vec<String>,
}

/// Waits at the start-up gate (see [`super::startup_gate`]) for the cores the service's
/// start-up keeps busy, and says so when that took a while.
fn enter_startup_gate(config: &RunConfig) -> super::startup_gate::Pass {
    let cost = config.lock.service_entry().cost;
    let pass = super::startup_gate::enter(cost.startup_cores, super::startup_gate::cores());
    if pass.waited >= Duration::from_millis(100) {
        crate::tell!(
            "lockpick: waited {:.2} s for other cells' start-ups",
            pass.waited.as_secs_f64()
        );
    }
    pass
}

/// Starts the lock service's servers, holding the start-up gate's `pass` until they answer:
/// the step whose time the terminal tells, with what the service is (its facts, what each
/// server keeps). Returns also how long the start took.
fn start_service(
    config: &RunConfig,
    pass: super::startup_gate::Pass,
    service: &mut dyn crate::service::LockService,
    setup: &mut ServiceSetup,
) -> Result<(Started, Duration)> {
    let started = Instant::now();
    service.start(setup)?;
    let took = started.elapsed();
    drop(pass);
    let keeping = match config.persistence {
        Some(kept) if kept.keeps_data() => format!(", each keeping its data ({})", kept.name()),
        _ => String::new(),
    };
    let facts = match service.facts() {
        Value::Object(facts) => Some(facts.into_iter().collect::<BTreeMap<_, _>>()),
        _ => None,
    };
    let told: Vec<String> = (facts.iter().flatten())
        .map(|(name, value)| format!("{name} {value}"))
        .collect();
    crate::tell!(
        "lockpick: {} ready on {} node(s) in {:.2} s{keeping}{}",
        crate::text::terminal::field(config.lock.label()),
        setup.nodes.len(),
        took.as_secs_f64(),
        if told.is_empty() {
            String::new()
        } else {
            format!(" ({})", told.join(", "))
        }
    );
    // Every node of a service runs the same build: the first one speaks for all.
    let server_versions = (setup.nodes.first())
        .and_then(|node| service.server_version(setup.runtime, node))
        .map(|version| (service.name().to_string(), version))
        .into_iter()
        .collect();
    let server_bins = (service.server_bin())
        .map(|path| (service.name().to_string(), path.display().to_string()))
        .into_iter()
        .collect();
    let endpoints = (setup.nodes.iter())
        .zip(service.endpoints())
        .map(|(node, endpoint)| Ok((node.name.clone(), endpoint.parse()?)))
        .collect::<Result<_>>()?;
    Ok((
        Started {
            facts,
            server_versions,
            server_bins,
            endpoints,
            addresses: service.endpoints(),
        },
        took,
    ))
}

/// The history's first line: what the run is, as the checkers and every output read it.
fn setup_record(
    config: &RunConfig,
    prefix: &RunPrefix,
    runtime: &dyn Runtime,
    started: &Started,
) -> Result<SetupRecord> {
    let capabilities = config.lock.capabilities();
    let runtime_facts = match runtime.facts() {
        Value::Object(facts) => Some(facts.into_iter().collect()),
        _ => None,
    };
    let label = config.lock.label();
    Ok(SetupRecord {
        checked: Setup {
            lock: config.lock.name().to_string(),
            lock_name: (label != config.lock.name()).then(|| label.to_string()),
            token: capabilities.token.to_string(),
            ttl_ms: config.ttl.as_millis() as u64,
            fencing: config.fencing.name().to_string(),
            nemesis: Some(config.nemesis_name()),
            lease_silence_ms: config
                .lock
                .lease_silence(config.ttl)
                .map(|d| d.as_millis() as u64),
            jam_bound_ms: config.jam_bound.map(|d| d.as_millis() as u64),
        },
        clients: Some(config.clients as u64),
        seed: Some(config.seed),
        prefix: Some(prefix.name.clone()),
        servers: started.addresses.clone(),
        runtime: Some(config.runtime.name().to_string()),
        runtime_facts,
        service_facts: started.facts.clone(),
        server_versions: started.server_versions.clone(),
        server_bins: started.server_bins.clone(),
        persistence: config.persistence.map(|kept| kept.name().to_string()),
    })
}

/// Starts the protected resource on its own node, hands it the run's secret, and waits until
/// it listens: the clients' one shared thing. Returns its address and the secret.
fn start_resource(
    config: &RunConfig,
    (runtime, node): (&dyn Runtime, &Node),
    (me, logs, clock): (&Path, &Path, &RunClock),
    children: &mut Children,
    sender: &mpsc::Sender<crate::processes::children::Event>,
) -> Result<(SocketAddr, String)> {
    let resource = SocketAddr::from((node.ip, RESOURCE_PORT));
    let resource_log = logs.join("resource.log");
    let spec = ProcessSpec::new("the resource", Programs::Harness, me)
        .arg("resource")
        .args(["--listen", &resource.to_string()])
        .args(["--fencing", config.fencing.name()])
        .args(["--origin-ns", &clock.origin_ns().to_string()])
        .streams(Stream::Piped, Stream::Piped, Stream::new_log(&resource_log));
    let mut process = runtime.spawn(node, &spec)?;
    // Drawn fresh for each run, never from its seed: client programs must not be able to
    // know it.
    let secret = format!("{:032x}", rand::random::<u128>());
    crate::cluster::give_secret(process.as_mut(), &secret);
    read_ops(
        Role::Resource,
        process.take_stdout().expect("piped"),
        sender.clone(),
    );
    children.add(Role::Resource, process);
    crate::service::wait_until_ready(
        "the resource",
        &resource_log,
        Duration::from_secs(10),
        || children.has_exited(&Role::Resource),
        || {
            runtime.probe(
                node,
                Box::new(move || {
                    std::net::TcpStream::connect_timeout(&resource, Duration::from_millis(200))?;
                    Ok(())
                }),
            )
        },
    )?;
    Ok((resource, secret))
}

/// What every client gets; `Cluster::spawn_client` fills in the per-client parts (process,
/// servers, resource, deadline, skew file).
fn client_spec(config: &RunConfig, resource: SocketAddr, clock: &RunClock) -> ClientSpec {
    ClientSpec {
        process: 0,
        lock: config.lock.name().to_string(),
        nodes: Vec::new(),
        resource,
        key: "lockpick".to_string(),
        ttl_ms: config.ttl.as_millis() as u64,
        op_timeout_ms: config.op_timeout.as_millis() as u64,
        work_ms: config.work.as_millis() as u64,
        origin_ns: clock.origin_ns(),
        deadline_ns: 0,
        quiet_extension_ms: config.quiet_extension().as_millis() as u64,
        max_attempts: 1_000_000,
        skew_file: None,
        wait_replicas: config.wait_replicas,
    }
}
