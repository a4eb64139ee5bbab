//! The workload phase: the event loop that records every client's operations as they arrive,
//! runs the schedule, heals every fault at the time limit (or on Ctrl-C), waits for the clients'
//! last operations, and takes the final read of the resource.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use lockpick_checkers::{Op, OpType, Process, F};
use lockpick_workloads::RunClock;
use serde_json::json;

use super::decided::Decider;
use super::progress::{Progress, Status};
use super::quiet::QuietPhase;
use crate::cluster::Cluster;
use crate::config::RunConfig;
use crate::history_log::{Abandoned, Follower, HistoryLog};
use crate::processes::children::{Event, Role};
use crate::run::scheduler::{Scheduler, Stage};
use crate::test_hooks::ControllerHook;

/// Everything a running test holds. Dropping it stops every process and removes every node,
/// in that order, whatever happened before.
pub struct Workload {
    pub(super) cluster: Cluster,
    clock: RunClock,
    log: HistoryLog,
    events: mpsc::Receiver<Event>,
    scheduler: Scheduler,
    open_clients: usize,
    pub(super) crashed_clients: Vec<String>,
    /// Each client's open invocation and who believes it holds the lock.
    follower: Follower,
    /// A fault injected into the controller itself, for tests of lockpick's own reliability
    /// (debug builds only).
    hook: ControllerHook,
}

impl Workload {
    pub fn new(
        cluster: Cluster,
        clock: RunClock,
        log: HistoryLog,
        events: mpsc::Receiver<Event>,
        scheduler: Scheduler,
    ) -> Workload {
        Workload {
            cluster,
            clock,
            log,
            events,
            scheduler,
            open_clients: 0,
            crashed_clients: Vec::new(),
            follower: Follower::default(),
            hook: ControllerHook::from_environment(),
        }
    }

    /// The workload phase, then heal, then the clients' last operations. Returns whether the
    /// run was interrupted. With a `decider` (`--until decided`), the workload phase also ends
    /// at the first violation the history proves.
    pub fn execute(
        &mut self,
        config: &RunConfig,
        interrupt: &AtomicBool,
        mut decider: Option<Decider>,
        history: std::path::PathBuf,
    ) -> Result<bool> {
        let heal_at = config.heal_at().as_nanos() as u64;
        let limit = config.time_limit.as_nanos() as u64;
        let mut quiet = QuietPhase::new(history, limit, config.quiet_extension());
        // After the deadline, a client may still be finishing its critical section: give it time
        // for its requests to time out and its work to finish.
        let grace = config.longest_fault() + config.ttl * 4 + config.work + Duration::from_secs(10);
        let hard_stop = limit + (grace + config.quiet_extension()).as_nanos() as u64;
        let mut progress = Progress::new(config.time_limit);
        let mut healed = false;
        let mut timed_out = false;
        let mut decided_at: Option<u64> = None;
        let result = loop {
            if let Err(e) = self.receive(!healed) {
                break Err(e);
            }
            let now = self.clock.now();
            let interrupted = interrupt.load(Ordering::SeqCst);
            if !healed {
                let stage = Stage {
                    now,
                    cluster: &mut self.cluster,
                    log: &mut self.log,
                };
                if let Err(e) = self.scheduler.on_tick(stage) {
                    break Err(e);
                }
                if decider.as_mut().is_some_and(Decider::decided) {
                    decided_at = Some(now);
                }
                if now >= heal_at || interrupted || decided_at.is_some() {
                    healed = true;
                    if let Err(e) = self.heal() {
                        break Err(e);
                    }
                }
            }
            let deadline = quiet.deadline(now, &mut self.cluster);
            let finished = now >= deadline && self.open_clients == 0;
            let ended = finished || interrupted || decided_at.is_some();
            if healed && (ended || now >= hard_stop) {
                timed_out = !ended;
                break Ok(interrupted);
            }
            progress.show(&Status {
                now,
                operations: self.log.len(),
                faults: self.scheduler.open_faults(),
                overlaps: self.follower.overlaps_seen(),
            });
        };
        progress.finish();
        // Whatever happened, heal before stopping anything (heal is idempotent).
        let healing = self.heal();
        self.note_crashed_clients(timed_out);
        let children = self.cluster.children();
        children.stop(|r| matches!(r, Role::Client(_)), Duration::from_secs(2));
        // How the workload ended goes into the history itself, so that `lockpick check` and
        // `lockpick report` of this history give the run's own verdict.
        let interrupted_now = matches!(result, Ok(true));
        self.record_run_end(interrupted_now, decided_at, quiet.extended_by())?;
        self.final_read()?;
        let children = self.cluster.children();
        children.stop(|r| *r == Role::Resource, Duration::from_secs(2));
        self.cluster.close_streams();
        // Every stream is closed now: record what was still in the pipes.
        let drained = self.drain();
        let interrupted = result?;
        healing?;
        drained?;
        Ok(interrupted)
    }

    fn heal(&mut self) -> Result<()> {
        let now = self.clock.now();
        self.scheduler.heal(Stage {
            now,
            cluster: &mut self.cluster,
            log: &mut self.log,
        })
    }

    fn record_run_end(
        &mut self,
        interrupted: bool,
        decided_at: Option<u64>,
        quiet_extended: u64,
    ) -> Result<()> {
        let mut value =
            json!({ "interrupted": interrupted, "crashed_clients": self.crashed_clients });
        let hooks = crate::test_hooks::in_effect();
        if !hooks.is_empty() {
            value["test_hooks"] = json!(hooks);
        }
        if let Some(at) = decided_at {
            value["decided_at_ns"] = json!(at);
        }
        if quiet_extended > 0 {
            value["quiet_extended_ns"] = json!(quiet_extended);
        }
        let op = Op::new(
            self.clock.now(),
            Process::named(Process::HARNESS),
            OpType::Info,
            F::RunEnd,
            value,
        );
        self.log.append(op)?;
        Ok(())
    }

    /// The last look at the resource, once no client can reach it any more. A resource that
    /// does not answer is recorded as such: the checkers cannot vouch for a history without it.
    fn final_read(&mut self) -> Result<()> {
        let (kind, value) = match self.cluster.final_read() {
            Ok(state) => (
                OpType::Ok,
                json!({ "value": state.value, "applied": state.applied }),
            ),
            Err(e) => {
                crate::tell!("lockpick: the final read of the resource failed: {e:#}");
                (OpType::Fail, json!({ "error": format!("{e:#}") }))
            }
        };
        let op = Op::new(
            self.clock.now(),
            Process::named(Process::HARNESS),
            kind,
            F::FinalRead,
            value,
        );
        self.log.append(op)?;
        Ok(())
    }

    /// Finds clients that exited on their own with an error (a bug in a lock client, or a
    /// missing library), and, when the grace period ran out, clients that never finished: a run
    /// in which the lock was not exercised as configured is not called valid.
    fn note_crashed_clients(&mut self, timed_out: bool) {
        let wait = Duration::from_millis(if self.open_clients == 0 { 1000 } else { 0 });
        let processes = self.cluster.client_processes();
        let roles: Vec<Role> = processes.iter().map(|p| Role::Client(*p)).collect();
        // One deadline for all of them: waiting per client took a second each when a run was
        // interrupted before it had counted its clients' streams.
        let statuses = self.cluster.children().exit_statuses(&roles, wait);
        for (process, status) in processes.into_iter().zip(statuses) {
            match status {
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

    /// Waits briefly for the next event and records it, with whatever else is already waiting
    /// (a few milliseconds' worth at most, so the schedule's ticks stay on time), then writes
    /// the batch out.
    fn receive(&mut self, nemesis_active: bool) -> Result<()> {
        let first = match self.events.recv_timeout(Duration::from_millis(5)) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                return self.log.flush();
            }
        };
        let batch_ends = Instant::now() + crate::history_log::FLUSH_EVERY;
        let mut recorded = self.record(first, nemesis_active);
        while recorded.is_ok() && Instant::now() < batch_ends {
            match self.events.try_recv() {
                Ok(event) => recorded = self.record(event, nemesis_active),
                Err(_) => break,
            }
        }
        let flushed = self.log.flush();
        recorded.and(flushed)
    }

    fn record(&mut self, event: Event, nemesis_active: bool) -> Result<()> {
        match event {
            Event::Line(line) => {
                let index = self.log.append_received(&line)?;
                self.hook.after_recorded(&mut self.log, &mut self.cluster)?;
                if let Process::Client(p) = line.head.process {
                    self.follower.follow(p, &line.head);
                    // Only a client's successful acquire or read can set off a lock-aware
                    // fault: only those are shown to the schedule.
                    let trigger =
                        line.head.kind == OpType::Ok && matches!(line.head.f, F::Acquire | F::Read);
                    if nemesis_active && trigger {
                        let now = self.clock.now();
                        self.scheduler.on_op(
                            &line.to_op(index),
                            Stage {
                                now,
                                cluster: &mut self.cluster,
                                log: &mut self.log,
                            },
                        )?;
                    }
                }
            }
            Event::Opened(Role::Client(_)) => self.open_clients += 1,
            Event::Closed(Role::Client(p)) => {
                self.open_clients = self.open_clients.saturating_sub(1);
                let killed_at = self.cluster.killed_at(p);
                if let Some(Abandoned(op)) = self.follower.abandoned(p, killed_at, self.clock.now())
                {
                    self.log.append(op)?;
                }
            }
            Event::Opened(_) | Event::Closed(_) => {}
            Event::Garbage(role, line) => {
                crate::tell!("lockpick: {role:?} wrote a line that is not an operation: {line}");
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
                Err(RecvTimeoutError::Disconnected) => return self.log.flush(),
            }
        }
        self.log.flush()?;
        bail!("the clients' output did not close after they were stopped")
    }

    /// Tears the cluster down; returns (and tells) what it left behind.
    pub fn teardown(&mut self) -> Vec<String> {
        let left_behind = self.cluster.teardown();
        for problem in &left_behind {
            crate::tell!("lockpick: teardown: {problem}");
        }
        left_behind
    }
}
