//! Nemeses: the faults of a run. The schedule says when each fault's window opens; the
//! `Scheduler` opens it (at once for time-driven faults, or on the next matching operation for
//! lock-aware ones), keeps it for its duration, then closes it. Every fault records its start
//! and its stop in the history (process `nemesis`, type `info`, with targets and evidence that it
//! took effect), and `heal` closes whatever is still open.

pub mod clock_holder;
pub mod clock_jump;
pub mod delay_client;
pub mod delay_holder_write;
pub mod freeze;
pub mod kill_client;
pub mod kill_node;
pub mod loss;
pub mod partition;
pub mod partition_holder;
pub mod pause_holder;
pub mod pause_node;
pub mod skew_clients;

use std::collections::{BTreeMap, VecDeque};

use anyhow::Result;
use lockpick_checkers::{Op, OpType, Process, F};
use serde_json::{json, Value};

use crate::cli::NemesisKind;
use crate::cluster::Cluster;
use crate::config::RunConfig;
use crate::history_log::HistoryLog;
use crate::schedule::{Schedule, Window};

/// What opens a fault once its window has begun.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The window's start.
    Time,
    /// The next successful acquire: the fault hits the new holder.
    Acquired,
    /// The next successful read of the resource by a holder.
    Read,
}

/// The client a lock-aware fault hits, as the triggering operation describes it.
pub struct Holder {
    pub process: u64,
    pub acquisition: String,
    /// The servers that granted the lock (addresses), when the client says.
    pub granted_by: Vec<String>,
}

impl Holder {
    /// What set a lock-aware fault off, for its start record: the holder's acquisition and
    /// process.
    pub fn trigger(&self) -> serde_json::Value {
        json!({
            "trigger": format!("holder of acquisition {}", self.acquisition),
            "client": format!("client {}", self.process),
        })
    }
}

/// One kind of fault. Contract: `begin` records the fault's start (through `Context::started`)
/// only if it took hold, and returns what undoes it; `None` means there was nothing to hit.
pub trait Nemesis {
    fn trigger(&self) -> Trigger {
        Trigger::Time
    }

    fn begin(
        &mut self,
        window: &Window,
        holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>>;
}

/// A fault in progress. Contract: `end` undoes it and records its stop with the start's id.
pub trait Fault {
    /// Called every few milliseconds while the fault lasts (a strobing clock flips here).
    fn tick(&mut self, _ctx: &mut Context) -> Result<()> {
        Ok(())
    }

    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()>;
}

/// What a nemesis sees and acts on.
pub struct Context<'a> {
    /// Now, in ns since the run began.
    pub now: u64,
    pub cluster: &'a mut Cluster,
    pub config: &'a RunConfig,
    log: &'a mut HistoryLog,
    next_fault: &'a mut u64,
}

impl<'a> Context<'a> {
    fn new(
        now: u64,
        cluster: &'a mut Cluster,
        config: &'a RunConfig,
        log: &'a mut HistoryLog,
        next_fault: &'a mut u64,
    ) -> Context<'a> {
        Context {
            now,
            cluster,
            config,
            log,
            next_fault,
        }
    }

    /// The client node a time-driven fault's window aims at, and the process running there now.
    pub fn window_client(&self, window: &Window) -> Option<(String, u64)> {
        let slot = window.targets.first()?;
        let process = *self.cluster.slots.get(slot)?;
        Some((slot.clone(), process))
    }

    /// Records the start of a fault and returns its id, which its stop must carry.
    pub fn started(&mut self, fault: &str, targets: &[String], details: Value) -> Result<u64> {
        *self.next_fault += 1;
        let id = *self.next_fault;
        self.record(F::Start, id, fault, targets, details)?;
        Ok(id)
    }

    pub fn stopped(
        &mut self,
        id: u64,
        fault: &str,
        targets: &[String],
        details: Value,
    ) -> Result<()> {
        self.record(F::Stop, id, fault, targets, details)
    }

    fn record(
        &mut self,
        f: F,
        id: u64,
        fault: &str,
        targets: &[String],
        details: Value,
    ) -> Result<()> {
        let mut value = json!({ "id": id, "fault": fault, "targets": targets });
        if let (Some(value), Value::Object(details)) = (value.as_object_mut(), details) {
            value.extend(details);
        }
        let op = Op::new(
            self.now,
            Process::named(Process::NEMESIS),
            OpType::Info,
            f,
            value,
        );
        self.log.append(op)?;
        Ok(())
    }
}

/// A fault that is open, and when it closes.
struct Open {
    nemesis: NemesisKind,
    closes_at: u64,
    fault: Box<dyn Fault>,
}

/// Runs a schedule: opens windows, fires lock-aware faults, closes faults, heals.
pub struct Scheduler {
    pending: VecDeque<Window>,
    armed: Vec<(Window, u64)>,
    open: Vec<Open>,
    nemeses: BTreeMap<NemesisKind, Box<dyn Nemesis>>,
    next_fault: u64,
    healed: bool,
}

impl Scheduler {
    pub fn new(schedule: &Schedule) -> Scheduler {
        let mut nemeses: BTreeMap<NemesisKind, Box<dyn Nemesis>> = BTreeMap::new();
        for kind in schedule.nemeses() {
            nemeses.insert(kind, build(kind));
        }
        Scheduler {
            pending: schedule.windows.iter().cloned().collect(),
            armed: Vec::new(),
            open: Vec::new(),
            nemeses,
            next_fault: 0,
            healed: false,
        }
    }

    /// How many faults are open now.
    pub fn open_faults(&self) -> usize {
        self.open.len()
    }

    /// Shows an operation to the armed lock-aware faults.
    pub fn on_op(
        &mut self,
        op: &Op,
        now: u64,
        cluster: &mut Cluster,
        config: &RunConfig,
        log: &mut HistoryLog,
    ) -> Result<()> {
        if self.healed || self.armed.is_empty() {
            return Ok(());
        }
        let (Process::Client(process), OpType::Ok) = (&op.process, op.kind) else {
            return Ok(());
        };
        let trigger = match op.f {
            F::Acquire => Trigger::Acquired,
            F::Read => Trigger::Read,
            _ => return Ok(()),
        };
        let holder = Holder {
            process: *process,
            acquisition: op.value["acquisition"].as_str().unwrap_or("?").to_string(),
            granted_by: op.value["nodes"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        };
        let Some(i) = self
            .armed
            .iter()
            .position(|(w, _)| self.nemeses[&w.nemesis].trigger() == trigger)
        else {
            return Ok(());
        };
        let (window, _) = self.armed.remove(i);
        let mut ctx = Context::new(now, cluster, config, log, &mut self.next_fault);
        let nemesis = self.nemeses.get_mut(&window.nemesis).expect("built");
        let fault = nemesis.begin(&window, Some(&holder), &mut ctx)?;
        Self::keep_open(&mut self.open, &window, now, fault);
        Ok(())
    }

    /// Keeps a fault that began now open for its window's duration.
    fn keep_open(open: &mut Vec<Open>, window: &Window, now: u64, fault: Option<Box<dyn Fault>>) {
        if let Some(fault) = fault {
            open.push(Open {
                nemesis: window.nemesis,
                closes_at: now + window.duration_ms * 1_000_000,
                fault,
            });
        }
    }

    /// Opens due windows and closes faults whose time is up.
    pub fn on_tick(
        &mut self,
        now: u64,
        cluster: &mut Cluster,
        config: &RunConfig,
        log: &mut HistoryLog,
    ) -> Result<()> {
        if self.healed {
            return Ok(());
        }
        let mut ctx = Context::new(now, cluster, config, log, &mut self.next_fault);
        // Close what is due, tick the rest.
        let mut still_open = Vec::new();
        for mut open in self.open.drain(..) {
            if now >= open.closes_at {
                open.fault.end(&mut ctx)?;
            } else {
                open.fault.tick(&mut ctx)?;
                still_open.push(open);
            }
        }
        self.open = still_open;
        self.armed.retain(|(_, lapses_at)| now < *lapses_at);
        // Open due windows, one fault per nemesis at a time: a window whose nemesis is still
        // busy waits.
        let mut waiting = VecDeque::new();
        while let Some(window) = self.pending.pop_front() {
            if window.start_ms * 1_000_000 > now {
                waiting.push_back(window);
                continue;
            }
            let busy = self.open.iter().any(|o| o.nemesis == window.nemesis)
                || self.armed.iter().any(|(w, _)| w.nemesis == window.nemesis);
            if busy {
                waiting.push_back(window);
                continue;
            }
            let nemesis = self.nemeses.get_mut(&window.nemesis).expect("built");
            if nemesis.trigger() == Trigger::Time {
                let fault = nemesis.begin(&window, None, &mut ctx)?;
                Self::keep_open(&mut self.open, &window, now, fault);
            } else {
                let lapses_at = now + window.duration_ms * 1_000_000;
                self.armed.push((window, lapses_at));
            }
        }
        self.pending = waiting;
        Ok(())
    }

    /// Closes every open fault and cancels the rest of the schedule. Tries every fault even if
    /// one fails to heal, and reports the first failure.
    pub fn heal(
        &mut self,
        now: u64,
        cluster: &mut Cluster,
        config: &RunConfig,
        log: &mut HistoryLog,
    ) -> Result<()> {
        self.healed = true;
        self.pending.clear();
        self.armed.clear();
        let mut ctx = Context::new(now, cluster, config, log, &mut self.next_fault);
        let mut first_error = None;
        for open in self.open.drain(..) {
            if let Err(e) = open.fault.end(&mut ctx) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

fn build(kind: NemesisKind) -> Box<dyn Nemesis> {
    match kind {
        NemesisKind::PauseHolder => Box::new(pause_holder::PauseHolder),
        NemesisKind::PauseNode => Box::new(pause_node::PauseNode),
        NemesisKind::PartitionNode
        | NemesisKind::PartitionHalves
        | NemesisKind::PartitionRing
        | NemesisKind::PartitionBridge
        | NemesisKind::PartitionClient
        | NemesisKind::PartitionOneWay => Box::new(partition::Partition),
        NemesisKind::PartitionHolder => Box::new(partition_holder::PartitionHolder),
        NemesisKind::ClockForward | NemesisKind::ClockBackward | NemesisKind::ClockStrobe => {
            Box::new(clock_jump::ClockJump)
        }
        NemesisKind::ClockHolder => Box::new(clock_holder::ClockHolder),
        NemesisKind::SkewClients => Box::new(skew_clients::SkewClients),
        NemesisKind::KillNode => Box::new(kill_node::KillNode),
        NemesisKind::KillClient => Box::new(kill_client::KillClient),
        NemesisKind::DelayHolderWrite => Box::new(delay_holder_write::DelayHolderWrite),
        NemesisKind::DelayClient => Box::new(delay_client::DelayClient),
        NemesisKind::Loss => Box::new(loss::Loss),
        NemesisKind::None => unreachable!("`none` is never scheduled"),
    }
}
