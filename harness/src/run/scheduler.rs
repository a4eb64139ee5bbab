//! Runs a schedule during the workload: opens each window when it is due (at once for
//! time-driven faults; lock-aware faults are armed and go off on the next matching operation),
//! keeps each fault for its duration, closes it, and heals everything at the end. One fault per
//! nemesis at a time: a window whose nemesis is still busy waits.

use std::collections::VecDeque;

use anyhow::Result;
use lockpick_checkers::{Op, OpType, Process, F};

use crate::cluster::Cluster;
use crate::history_log::HistoryLog;
use crate::nemesis::window::Window;
use crate::nemesis::{self, Context, Fault, FaultKnobs, Holder, Nemesis, Trigger};
use crate::schedule::Schedule;

/// A fault that is open, and when it closes.
struct Open {
    nemesis: &'static dyn Nemesis,
    closes_at: u64,
    fault: Box<dyn Fault>,
}

/// A lock-aware window waiting for its operation, and when it lapses.
struct Armed {
    nemesis: &'static dyn Nemesis,
    window: Window,
    lapses_at: u64,
}

pub struct Scheduler {
    pending: VecDeque<(&'static dyn Nemesis, Window)>,
    armed: Vec<Armed>,
    open: Vec<Open>,
    knobs: FaultKnobs,
    next_fault: u64,
    healed: bool,
}

/// What the scheduler acts with.
pub struct Stage<'a> {
    pub now: u64,
    pub cluster: &'a mut Cluster,
    pub log: &'a mut HistoryLog,
}

impl Scheduler {
    /// A scheduler for `schedule`. Fails on a window whose nemesis is not in the catalogue.
    pub fn new(schedule: &Schedule, knobs: FaultKnobs) -> Result<Scheduler> {
        let mut windows = Vec::new();
        for window in &schedule.windows {
            let nemesis = nemesis::find(&window.nemesis)
                .ok_or_else(|| anyhow::anyhow!("no nemesis {}", window.nemesis))?;
            windows.push((nemesis, window.clone()));
        }
        Ok(Scheduler::with_windows(windows, knobs))
    }

    /// A scheduler for windows whose nemeses are already known, in start order.
    pub fn with_windows(
        windows: Vec<(&'static dyn Nemesis, Window)>,
        knobs: FaultKnobs,
    ) -> Scheduler {
        Scheduler {
            pending: windows.into(),
            armed: Vec::new(),
            open: Vec::new(),
            knobs,
            next_fault: 0,
            healed: false,
        }
    }

    /// How many faults are open now.
    pub fn open_faults(&self) -> usize {
        self.open.len()
    }

    /// Shows an operation to the armed lock-aware faults.
    pub fn on_op(&mut self, op: &Op, stage: Stage) -> Result<()> {
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
        let Some(i) = self
            .armed
            .iter()
            .position(|a| a.nemesis.aim().trigger() == trigger)
        else {
            return Ok(());
        };
        let armed = self.armed.remove(i);
        let holder = Holder::of(*process, &op.value);
        let now = stage.now;
        let mut ctx = Context::new(
            now,
            stage.cluster,
            &self.knobs,
            stage.log,
            &mut self.next_fault,
        );
        let fault = armed.nemesis.aim().begin(
            &armed.window,
            Some(&holder),
            ctx.acting(armed.nemesis.name()),
        )?;
        keep_open(&mut self.open, armed.nemesis, &armed.window, now, fault);
        Ok(())
    }

    /// Opens due windows and closes faults whose time is up.
    pub fn on_tick(&mut self, stage: Stage) -> Result<()> {
        if self.healed {
            return Ok(());
        }
        let now = stage.now;
        let mut ctx = Context::new(
            now,
            stage.cluster,
            &self.knobs,
            stage.log,
            &mut self.next_fault,
        );
        // Close what is due, tick the rest.
        let mut still_open = Vec::new();
        for mut open in self.open.drain(..) {
            ctx.acting(open.nemesis.name());
            if now >= open.closes_at {
                open.fault.end(&mut ctx)?;
            } else {
                open.fault.tick(&mut ctx)?;
                still_open.push(open);
            }
        }
        self.open = still_open;
        self.armed.retain(|a| now < a.lapses_at);
        let mut waiting = VecDeque::new();
        while let Some((nemesis, window)) = self.pending.pop_front() {
            let busy = self.open.iter().any(|o| o.nemesis.name() == nemesis.name())
                || self
                    .armed
                    .iter()
                    .any(|a| a.nemesis.name() == nemesis.name());
            if window.start_ms * 1_000_000 > now || busy {
                waiting.push_back((nemesis, window));
                continue;
            }
            if nemesis.aim().trigger() == Trigger::Time {
                let fault = nemesis
                    .aim()
                    .begin(&window, None, ctx.acting(nemesis.name()))?;
                keep_open(&mut self.open, nemesis, &window, now, fault);
            } else {
                let lapses_at = now + window.duration_ms * 1_000_000;
                self.armed.push(Armed {
                    nemesis,
                    window,
                    lapses_at,
                });
            }
        }
        self.pending = waiting;
        Ok(())
    }

    /// Closes every open fault and cancels the rest of the schedule. Tries every fault even if
    /// one fails to heal, and reports the first failure. Healing twice does nothing more.
    pub fn heal(&mut self, stage: Stage) -> Result<()> {
        self.healed = true;
        self.pending.clear();
        self.armed.clear();
        let mut ctx = Context::new(
            stage.now,
            stage.cluster,
            &self.knobs,
            stage.log,
            &mut self.next_fault,
        );
        let mut first_error = None;
        for open in self.open.drain(..) {
            if let Err(e) = open.fault.end(ctx.acting(open.nemesis.name())) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Keeps a fault that began now open for its window's duration.
fn keep_open(
    open: &mut Vec<Open>,
    nemesis: &'static dyn Nemesis,
    window: &Window,
    now: u64,
    fault: Option<Box<dyn Fault>>,
) {
    if let Some(fault) = fault {
        open.push(Open {
            nemesis,
            closes_at: now + window.duration_ms * 1_000_000,
            fault,
        });
    }
}

#[cfg(test)]
mod tests;
