//! Nemeses: the faults of a run. Each reacts to the live history and to the passing of time,
//! records every fault it starts and stops in the history (process `nemesis`, type `info`, with
//! its targets), and undoes all of them in `heal`.

pub mod freeze;
pub mod pause_holder;
pub mod pause_node;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use lockpick_checkers::{Op, OpType, Process, F};
use nix::unistd::Pid;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use crate::history_log::HistoryLog;

/// What a nemesis can aim at.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    /// Client processes by history process number.
    pub clients: BTreeMap<u64, Pid>,
    /// Lock-service servers by node name.
    pub servers: BTreeMap<String, Pid>,
}

/// What a nemesis sees and can do at each step.
pub struct Context<'a> {
    /// Now, in ns since the run began.
    pub now: u64,
    pub targets: &'a Targets,
    pub log: &'a mut HistoryLog,
    next_fault: &'a mut u64,
}

impl Context<'_> {
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

/// A source of faults. Contract: `heal` ends every fault the nemesis started, after which it
/// starts no more; a fault's start and stop are both recorded, with the same id and targets.
pub trait Nemesis {
    /// Sees each operation as it lands in the history (lock-aware nemeses react here).
    fn on_op(&mut self, op: &Op, ctx: &mut Context) -> Result<()>;
    /// Called every few milliseconds: start or stop faults on the nemesis's schedule.
    fn on_tick(&mut self, ctx: &mut Context) -> Result<()>;
    /// Ends every fault still active.
    fn heal(&mut self, ctx: &mut Context) -> Result<()>;
}

/// Several nemeses acting together, each with its own random stream drawn from the run's seed.
pub struct Composed {
    nemeses: Vec<Box<dyn Nemesis>>,
    next_fault: u64,
}

impl Composed {
    pub fn new(nemeses: Vec<Box<dyn Nemesis>>) -> Composed {
        Composed {
            nemeses,
            next_fault: 0,
        }
    }

    /// Shows `op` to every nemesis.
    pub fn on_op(
        &mut self,
        op: &Op,
        now: u64,
        targets: &Targets,
        log: &mut HistoryLog,
    ) -> Result<()> {
        self.each(now, targets, log, |n, ctx| n.on_op(op, ctx))
    }

    pub fn on_tick(&mut self, now: u64, targets: &Targets, log: &mut HistoryLog) -> Result<()> {
        self.each(now, targets, log, |n, ctx| n.on_tick(ctx))
    }

    /// Heals every nemesis, even when one of them fails to heal.
    pub fn heal(&mut self, now: u64, targets: &Targets, log: &mut HistoryLog) -> Result<()> {
        let mut first_error = None;
        let _ = self.each(now, targets, log, |n, ctx| {
            if let Err(e) = n.heal(ctx) {
                first_error.get_or_insert(e);
            }
            Ok(())
        });
        first_error.map_or(Ok(()), Err)
    }

    fn each(
        &mut self,
        now: u64,
        targets: &Targets,
        log: &mut HistoryLog,
        mut step: impl FnMut(&mut dyn Nemesis, &mut Context) -> Result<()>,
    ) -> Result<()> {
        let mut ctx = Context {
            now,
            targets,
            log,
            next_fault: &mut self.next_fault,
        };
        for nemesis in &mut self.nemeses {
            step(nemesis.as_mut(), &mut ctx)?;
        }
        Ok(())
    }
}

/// A quiet period drawn from 0.5x to 1.5x the mean, in ns.
pub fn quiet_period(rng: &mut ChaCha8Rng, mean: Duration) -> u64 {
    let mean = mean.as_nanos() as u64;
    rng.gen_range(mean / 2..=mean + mean / 2)
}
