//! The scheduler alone, over a cluster with no nodes behind it: marker nemeses that touch
//! nothing and only record their start and stop, so what is tested is when the scheduler opens,
//! arms, fires, closes and heals faults.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Result};
use lockpick_checkers::fault::FaultKind;
use lockpick_checkers::{Op, OpType, Process, F};
use lockpick_workloads::client_spec::ClientSpec;
use serde_json::{json, Value};

use super::{Scheduler, Stage};
use crate::cluster::{ClientCommand, Cluster, Parts};
use crate::history_log::HistoryLog;
use crate::nemesis::aim::{Draws, OnHolder};
use crate::nemesis::window::{Shape, Targets, Window};
use crate::nemesis::{Aim, Begun, Context, Fault, FaultKnobs, Holder, Nemesis, Trigger};
use crate::processes::children::Children;
use crate::runtime::firewall::PartitionMode;
use crate::runtime::{Node, Runtime};
use crate::scratch::Scratch;
use crate::service::{LockService, Requirement, ServiceSetup};
use rand_chacha::ChaCha8Rng;

/// A nemesis that only records that it began and ended.
struct Marker {
    name: &'static str,
    trigger: Trigger,
}

static TIMED: Marker = Marker {
    name: "timed",
    trigger: Trigger::Time,
};
static ON_ACQUIRE: Marker = Marker {
    name: "on-acquire",
    trigger: Trigger::Acquired,
};

struct Marked {
    id: u64,
    name: &'static str,
}

impl Nemesis for Marker {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        "records its start and stop, touches nothing"
    }

    /// A time-driven marker draws nothing and hits nothing; the others hit the holder.
    fn aim(&self) -> Aim<'_> {
        match self.trigger {
            Trigger::Time => Aim::Drawn(Targets::Holder, self),
            trigger => Aim::Holder(trigger, self),
        }
    }
}

impl Marker {
    fn mark(&self, details: Value, ctx: &mut Context) -> Begun {
        let id = ctx.started(FaultKind::of_name(self.name), &[], details)?;
        Ok(Some(Box::new(Marked {
            id,
            name: self.name,
        })))
    }
}

impl Draws for Marker {
    fn draw(&self, _window: &mut Window, _shape: &Shape, _rng: &mut ChaCha8Rng) {}

    fn begin(&self, _window: &Window, ctx: &mut Context) -> Begun {
        self.mark(json!({}), ctx)
    }
}

impl OnHolder for Marker {
    fn begin(&self, holder: &Holder, _window: &Window, ctx: &mut Context) -> Begun {
        self.mark(holder.trigger(), ctx)
    }
}

impl Fault for Marked {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        ctx.stopped(self.id, FaultKind::of_name(self.name), &[], json!({}))
    }
}

/// A runtime with no nodes: the markers never ask it for anything.
struct Nowhere;

impl Runtime for Nowhere {
    fn add_node(&mut self, _name: &str) -> Result<Node> {
        bail!("no nodes here")
    }
    fn spawn(
        &self,
        _node: &Node,
        _spec: &crate::runtime::process_spec::ProcessSpec,
    ) -> Result<Box<dyn crate::processes::node_process::NodeProcess>> {
        bail!("no nodes here")
    }
    fn command(&self, _node: &Node, _program: &Path) -> Result<Command> {
        bail!("no nodes here")
    }
    fn network_namespace(&self, _node: &Node) -> Result<std::fs::File> {
        bail!("no nodes here")
    }
    fn probe(&self, _node: &Node, _probe: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()> {
        bail!("no nodes here")
    }
    fn teardown(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// A service with no servers.
struct NoService;

impl LockService for NoService {
    fn name(&self) -> &'static str {
        "none"
    }
    fn server_version(&self, _runtime: &dyn Runtime, _node: &Node) -> Option<String> {
        None
    }
    fn server_bin(&self) -> Option<PathBuf> {
        None
    }
    fn requirements(&self) -> Vec<Requirement> {
        Vec::new()
    }
    fn server_requirement(&self) -> &'static str {
        "none"
    }
    fn node_count(&self) -> usize {
        0
    }
    fn start(&mut self, _setup: &mut ServiceSetup) -> Result<()> {
        Ok(())
    }
    fn endpoints(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A cluster with nothing in it, its history in a temporary folder.
struct Bench {
    cluster: Cluster,
    log: HistoryLog,
    history: PathBuf,
    _folder: tempfile::TempDir,
}

impl Bench {
    fn new(name: &str) -> Bench {
        let folder = tempfile::tempdir().unwrap();
        let history = folder.path().join("history.jsonl");
        let (events, _) = std::sync::mpsc::channel();
        let resource = "127.0.0.1:9".parse().unwrap();
        let cluster = Cluster::new(Parts {
            children: Children::default(),
            service: Box::new(NoService),
            scratch: Scratch::create(&format!(
                "lockpick-scheduler-test-{name}-{}",
                std::process::id()
            ))
            .unwrap(),
            runtime: Box::new(Nowhere),
            nodes: BTreeMap::new(),
            endpoints: BTreeMap::new(),
            launches: BTreeMap::new(),
            client_command: ClientCommand {
                program: PathBuf::from("/nonexistent"),
                spec: ClientSpec {
                    process: 0,
                    lock: "redis".to_string(),
                    nodes: Vec::new(),
                    resource,
                    key: "lockpick".to_string(),
                    ttl_ms: 1000,
                    op_timeout_ms: 500,
                    work_ms: 100,
                    origin_ns: 0,
                    deadline_ns: 0,
                    quiet_extension_ms: 0,
                    max_attempts: 1,
                    skew_file: None,
                    wait_replicas: None,
                },
                resource,
                logs: folder.path().to_path_buf(),
                secret: "test".to_string(),
                clock_mover: crate::locks::ClientClockMover::SkewFile,
            },
            events,
        });
        Bench {
            cluster,
            log: HistoryLog::create(&history).unwrap(),
            history,
            _folder: folder,
        }
    }

    fn stage(&mut self, now_ms: u64) -> Stage<'_> {
        Stage {
            now: now_ms * 1_000_000,
            cluster: &mut self.cluster,
            log: &mut self.log,
        }
    }

    /// The nemesis records so far: (ms, start/stop, fault).
    fn records(&mut self) -> Vec<(u64, String, String)> {
        self.log.flush().unwrap();
        std::fs::read_to_string(&self.history)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|op| {
                (
                    op["time"].as_u64().unwrap() / 1_000_000,
                    op["f"].as_str().unwrap().to_string(),
                    op["value"]["nemesis"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

fn knobs() -> FaultKnobs {
    FaultKnobs {
        fault_duration: Duration::from_secs(2),
        fault_duration_given: false,
        fault_interval: Duration::from_secs(1),
        clock_jump: Duration::from_secs(2),
        delay: Duration::from_secs(2),
        loss: 30,
        partition_mode: PartitionMode::Drop,
        restart_after: None,
        client_deadline_ns: 10_000_000_000,
    }
}

fn window(
    nemesis: &'static Marker,
    start_ms: u64,
    duration_ms: u64,
) -> (&'static dyn Nemesis, Window) {
    (
        nemesis,
        Window {
            nemesis: nemesis.name().to_string(),
            start_ms,
            duration_ms,
            targets: Vec::new(),
            cuts: Vec::new(),
            one_way: false,
        },
    )
}

fn acquired(process: u64) -> Op {
    Op::new(
        0,
        Process::Client(process),
        OpType::Ok,
        F::Acquire,
        json!({ "acquisition": format!("{process}.1"), "token": null }),
    )
}

fn at(t: u64, f: &str, n: &str) -> (u64, String, String) {
    (t, f.to_string(), n.to_string())
}

#[test]
fn a_window_opens_at_its_start_and_closes_after_its_duration() {
    let mut bench = Bench::new("timing");
    let mut scheduler = Scheduler::with_windows(vec![window(&TIMED, 100, 300)], knobs());
    for now in [0, 50, 100, 200, 399, 400, 500] {
        scheduler.on_tick(bench.stage(now)).unwrap();
    }
    assert_eq!(
        bench.records(),
        [at(100, "start", "timed"), at(400, "stop", "timed")]
    );
    assert_eq!(scheduler.open_faults(), 0);
}

#[test]
fn a_nemesis_busy_with_one_fault_waits_before_its_next() {
    let mut bench = Bench::new("busy");
    let windows = vec![window(&TIMED, 100, 300), window(&TIMED, 200, 100)];
    let mut scheduler = Scheduler::with_windows(windows, knobs());
    for now in [100, 200, 300, 400, 450, 500, 600] {
        scheduler.on_tick(bench.stage(now)).unwrap();
    }
    // The second window was due at 200 but the first fault held the nemesis until 400.
    assert_eq!(
        bench.records(),
        [
            at(100, "start", "timed"),
            at(400, "stop", "timed"),
            at(400, "start", "timed"),
            at(500, "stop", "timed"),
        ]
    );
}

#[test]
fn a_lock_aware_fault_fires_on_the_next_acquire_and_lapses_without_one() {
    let mut bench = Bench::new("armed");
    let windows = vec![
        window(&ON_ACQUIRE, 100, 200),
        window(&ON_ACQUIRE, 1000, 200),
    ];
    let mut scheduler = Scheduler::with_windows(windows, knobs());
    scheduler.on_tick(bench.stage(100)).unwrap();
    // Armed, not yet open: nothing recorded until a client acquires.
    assert!(bench.records().is_empty());
    scheduler.on_op(&acquired(3), bench.stage(150)).unwrap();
    assert_eq!(scheduler.open_faults(), 1);
    for now in [200, 350, 1000, 1100, 1300] {
        scheduler.on_tick(bench.stage(now)).unwrap();
    }
    // The second window lapsed at 1200 with no acquire: it never began.
    scheduler.on_op(&acquired(4), bench.stage(1300)).unwrap();
    assert_eq!(
        bench.records(),
        [
            at(150, "start", "on-acquire"),
            at(350, "stop", "on-acquire")
        ]
    );
    bench.log.flush().unwrap();
    let text = std::fs::read_to_string(&bench.history).unwrap();
    assert!(text.contains("holder of acquisition 3.1"), "{text}");
}

#[test]
fn heal_closes_every_open_fault_and_cancels_the_rest() {
    let mut bench = Bench::new("heal");
    let windows = vec![window(&TIMED, 100, 5000), window(&TIMED, 6000, 100)];
    let mut scheduler = Scheduler::with_windows(windows, knobs());
    scheduler.on_tick(bench.stage(100)).unwrap();
    scheduler.heal(bench.stage(200)).unwrap();
    scheduler.heal(bench.stage(250)).unwrap();
    for now in [6000, 7000] {
        scheduler.on_tick(bench.stage(now)).unwrap();
    }
    scheduler.on_op(&acquired(1), bench.stage(7000)).unwrap();
    assert_eq!(
        bench.records(),
        [at(100, "start", "timed"), at(200, "stop", "timed")]
    );
}
