//! The processes a run spawned (servers, the resource, clients) and the threads that read their
//! operation streams.
//!
//! Stopping is always the same: resume (a frozen process must not stay frozen), ask politely
//! (SIGTERM), wait a grace period, then SIGKILL, then reap.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::Sender;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::node_process::{NodeProcess, REAP_WITHIN};
use crate::history_log::Received;

/// What a spawned process is, for targeting faults and ordering shutdown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// A lock-service server on a node (the name is the node's).
    Server(String),
    /// The protected resource.
    Resource,
    /// A client process, by its history process number.
    Client(u64),
}

pub struct Spawned {
    pub role: Role,
    /// The process as its runtime started it.
    pub process: Box<dyn NodeProcess>,
}

impl Spawned {
    pub fn pid(&self) -> Pid {
        self.process.pid()
    }
}

#[derive(Default)]
pub struct Children {
    spawned: Vec<Spawned>,
}

impl Children {
    pub fn add(&mut self, role: Role, process: Box<dyn NodeProcess>) -> Pid {
        let spawned = Spawned { role, process };
        let pid = spawned.pid();
        self.spawned.push(spawned);
        pid
    }

    /// Whether the process with this role has exited (reaping it if so).
    pub fn has_exited(&mut self, role: &Role) -> bool {
        match self.spawned.iter_mut().find(|s| &s.role == role) {
            Some(s) => !matches!(s.process.try_wait(), Ok(None)),
            None => true,
        }
    }

    /// Kills the process with this role at once (resuming it first, as SIGKILL would anyway)
    /// and forgets it.
    pub fn kill(&mut self, role: &Role) -> Option<Pid> {
        Some(crate::processes::freezer::kill_tree(
            self.take(role)?.process.as_mut(),
        ))
    }

    /// Forgets the process with this role and hands it over, for its runtime to kill.
    pub fn take(&mut self, role: &Role) -> Option<Spawned> {
        let index = self.spawned.iter().position(|s| &s.role == role)?;
        Some(self.spawned.remove(index))
    }

    pub fn pid(&self, role: &Role) -> Option<Pid> {
        self.spawned
            .iter()
            .find(|s| &s.role == role)
            .map(Spawned::pid)
    }

    /// How each process with these roles exited, waiting up to `wait` in all (one deadline
    /// for every one of them, however many); `None` for one still running (or unknown).
    pub fn exit_statuses(
        &mut self,
        roles: &[Role],
        wait: Duration,
    ) -> Vec<Option<std::process::ExitStatus>> {
        let deadline = Instant::now() + wait;
        let mut statuses = vec![None; roles.len()];
        loop {
            let mut running = false;
            for (role, status) in roles.iter().zip(statuses.iter_mut()) {
                if status.is_some() {
                    continue;
                }
                if let Some(s) = self.spawned.iter_mut().find(|s| &s.role == role) {
                    match s.process.try_wait() {
                        Ok(Some(exit)) => *status = Some(exit),
                        Ok(None) => running = true,
                        Err(_) => {}
                    }
                }
            }
            if !running || Instant::now() >= deadline {
                return statuses;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops every process whose role matches: signals every one of them first, then waits
    /// for all together, `grace` in all (not per process), and kills what is left.
    pub fn stop(&mut self, matches: impl Fn(&Role) -> bool, grace: Duration) {
        let (mut stopping, keep): (Vec<Spawned>, Vec<Spawned>) =
            self.spawned.drain(..).partition(|s| matches(&s.role));
        self.spawned = keep;
        for s in &stopping {
            let _ = s.process.signal(Signal::SIGCONT);
            let _ = s.process.signal(Signal::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline
            && stopping
                .iter_mut()
                .any(|s| matches!(s.process.try_wait(), Ok(None)))
        {
            thread::sleep(Duration::from_millis(10));
        }
        for s in &mut stopping {
            if matches!(s.process.try_wait(), Ok(None)) {
                let _ = s.process.kill();
            }
        }
        // One deadline for all of them, as for the grace.
        let deadline = Instant::now() + REAP_WITHIN;
        for s in &mut stopping {
            let _ = s
                .process
                .wait_within(deadline.saturating_duration_since(Instant::now()));
        }
    }

    /// Stops everything: clients first, then the resource, then the servers.
    pub fn stop_all(&mut self, grace: Duration) {
        self.stop(|r| matches!(r, Role::Client(_)), grace);
        self.stop(|r| *r == Role::Resource, grace);
        self.stop(|_| true, grace);
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop_all(Duration::from_millis(500));
    }
}

/// What the reader threads tell the controller.
pub enum Event {
    /// A process's stream began.
    Opened(Role),
    /// A line that is an operation, decoded only as far as the controller needs.
    Line(Received),
    /// A line that is not an operation (a bug in whoever wrote it).
    Garbage(Role, String),
    /// The stream ended: the process exited or closed its output.
    Closed(Role),
}

/// Reads operations, one JSON line each, from a child's output until it closes. Each reader
/// thread decodes its own lines' heads, so that work is spread over the children's streams
/// and the controller only writes them out.
pub fn read_ops(role: Role, output: impl Read + Send + 'static, events: Sender<Event>) {
    thread::spawn(move || {
        if events.send(Event::Opened(role.clone())).is_err() {
            return;
        }
        for line in BufReader::new(output).lines() {
            let Ok(line) = line else { break };
            let event = match Received::parse(line) {
                Ok(received) => Event::Line(received),
                Err((line, _)) => Event::Garbage(role.clone(), line),
            };
            if events.send(event).is_err() {
                return;
            }
        }
        let _ = events.send(Event::Closed(role));
    });
}

#[cfg(test)]
#[path = "children_tests.rs"]
mod tests;
