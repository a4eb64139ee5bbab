//! `skew-clients`'s verbs: skew/unskew one client's own clock. Our Redlock client reads its
//! offset from its skew file. An `exec:` client's program has its wall clock moved by a patched
//! vDSO ([`super::clock_vdso`]), whatever its language, and the skew is read back from the
//! program's own word: the client asks it `{"op": "clock"}` when the skew file changes
//! ([`lockpick_workloads::exec_clock`]) and writes the reading beside the file; the skew counts
//! as effective only when that reading shows it, as a server's jump does.
//!
//! The program patched is the client process's child that has exec'd (a copy of the client
//! not yet exec'd would lose the patch at its exec). One started later (after a breakage, or
//! in a client started after a kill) is not patched: its reading then shows no skew.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use lockpick_workloads::exec_clock::{reading_file, ClockReading};
use nix::unistd::Pid;
use serde_json::{json, Value};

use super::clock::ClockEvidence;
use super::Cluster;
use crate::locks::ClientClockMover;
use crate::processes::children::Role;
use crate::processes::freezer;

/// What a skew (or its end) was seen to do.
pub enum SkewEvidence {
    /// The skew file reads back (our Redlock client reads it on every clock reading).
    File { effective: bool },
    /// The program's clock, as it told it.
    Program(ClockEvidence),
}

impl SkewEvidence {
    /// Adds the evidence to a fault's start record: a skew not shown is not effective.
    pub fn describe_start(&self, details: &mut Value) {
        match self {
            SkewEvidence::File { effective } => details["effective"] = json!(effective),
            SkewEvidence::Program(evidence) => evidence.describe_start(details),
        }
    }

    /// Adds the evidence to a fault's stop record.
    pub fn describe(&self, details: &mut Value) {
        if let SkewEvidence::Program(evidence) = self {
            evidence.describe(details);
        }
    }
}

impl Cluster {
    /// The file a client node's clock skew is written to.
    pub fn skew_file(&self, slot: &str) -> PathBuf {
        self.scratch.path.join(format!("clock-skew-{slot}"))
    }

    /// Skews the clock of the client in `slot` by `offset_ms`.
    pub fn skew_client(&mut self, slot: &str, offset_ms: i64) -> Result<SkewEvidence> {
        match self.client_command.clock_mover {
            ClientClockMover::SkewFile => {
                let file = self.skew_file(slot);
                let line = format!("{offset_ms}");
                self.write_skew_line(slot, &line)?;
                let effective = std::fs::read_to_string(&file).is_ok_and(|t| t.trim() == line);
                Ok(SkewEvidence::File { effective })
            }
            ClientClockMover::ProgramVdso => self
                .skew_program(slot, offset_ms)
                .map(SkewEvidence::Program),
        }
    }

    /// Ends the skew of the client in `slot`.
    pub fn unskew_client(&mut self, slot: &str) -> Result<SkewEvidence> {
        match self.client_command.clock_mover {
            ClientClockMover::SkewFile => {
                let _ = std::fs::remove_file(self.skew_file(slot));
                Ok(SkewEvidence::File { effective: true })
            }
            ClientClockMover::ProgramVdso => {
                // Whatever the restore says, the program's clock is read back.
                let restored = self.clocks.programs.restore(slot);
                let mut evidence = self.read_program_clock(slot, 0)?;
                if let Err(e) = restored {
                    evidence.failure = Some(format!("{e:#}"));
                }
                Ok(SkewEvidence::Program(evidence))
            }
        }
    }

    fn write_skew_line(&self, slot: &str, line: &str) -> Result<()> {
        crate::files::safe_write::replace(&self.skew_file(slot), format!("{line}\n"))
            .context("cannot write a skew file")
    }

    /// Patches the program of the client in `slot` to run `offset_ms` off, and reads it back.
    fn skew_program(&mut self, slot: &str, offset_ms: i64) -> Result<ClockEvidence> {
        let program = self.program_in(slot);
        let patched =
            program.and_then(|pid| self.clocks.programs.set(slot, pid.as_raw(), offset_ms));
        if let Err(e) = patched {
            let mut evidence = ClockEvidence::of(offset_ms, offset_ms, None, 1);
            evidence.failure = Some(format!("{e:#}"));
            return Ok(evidence);
        }
        self.read_program_clock(slot, offset_ms)
    }

    /// The program the client in `slot` runs now, once it has exec'd.
    fn program_in(&self, slot: &str) -> Result<Pid> {
        let process = self.process_in(slot).context("no client runs there")?;
        let client = self
            .children
            .pid(&Role::Client(process))
            .with_context(|| format!("client {process} is not running"))?;
        let own = std::fs::read_link(format!("/proc/{client}/exe")).ok();
        freezer::descendants(client)
            .into_iter()
            .find(|pid| {
                freezer::parent(*pid) == Some(client)
                    && std::fs::read_link(format!("/proc/{pid}/exe")).ok() != own
            })
            .with_context(|| format!("client {process} runs no program (yet)"))
    }

    /// Asks the client in `slot` for its program's clock (a new line in its skew file) and
    /// waits for the reading: it comes before the client's next request, so within one acquire
    /// (its wait and op timeout) and one critical section, plus the program's answer.
    fn read_program_clock(&mut self, slot: &str, expected_ms: i64) -> Result<ClockEvidence> {
        self.clocks.asks += 1;
        let line = format!("{expected_ms} {}", self.clocks.asks);
        self.write_skew_line(slot, &line)?;
        let spec = &self.client_command.spec;
        let within = Duration::from_millis(3 * spec.op_timeout_ms + spec.work_ms + 1_000);
        let client = self
            .process_in(slot)
            .and_then(|process| self.children.pid(&Role::Client(process)));
        let node = self.nodes.get(slot);
        let state = || Some(self.runtime.process_state(node?, client?));
        let file = reading_file(&self.skew_file(slot));
        let reading = wait_for_reading(&file, &line, within, state);
        // The tolerance is the change's 10 % or 50 ms: an end, back to 0, gets 50 ms.
        let change = expected_ms;
        Ok(match reading {
            Ok(ClockReading {
                offset_ms: Some(measured),
                uncertainty_ms,
                ..
            }) => {
                let resolution = 2 * uncertainty_ms.unwrap_or(1).max(1);
                ClockEvidence::of(expected_ms, change, Some(measured), resolution)
            }
            Ok(ClockReading { error, .. }) => {
                let mut evidence = ClockEvidence::of(expected_ms, change, None, 1);
                evidence.failure = Some(format!(
                    "the client program did not tell its clock: {}",
                    error.unwrap_or_else(|| "no reason given".to_string())
                ));
                evidence
            }
            Err(why) => {
                let mut evidence = ClockEvidence::of(expected_ms, change, None, 1);
                evidence.failure = Some(why);
                evidence
            }
        })
    }
}

/// The reading in `file` that answers `line`, within `within`; none at once when the client
/// process is stopped (a pause of it: waiting would only hold up the schedule) or gone, as
/// `client_state` reads it (`None`: no client runs; `Some(None)`: its process has no state).
fn wait_for_reading(
    file: &std::path::Path,
    line: &str,
    within: Duration,
    client_state: impl Fn() -> Option<Option<char>>,
) -> Result<ClockReading, String> {
    let deadline = Instant::now() + within;
    loop {
        match client_state() {
            None | Some(None | Some('Z' | 'X')) => {
                return Err("the client is gone: its program's clock cannot be asked".to_string())
            }
            Some(Some('T')) => {
                return Err("the client is paused: its program's clock cannot be asked".to_string())
            }
            _ => {}
        }
        let reading = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| serde_json::from_str::<ClockReading>(text.trim()).ok())
            .filter(|r| r.asked == line);
        if let Some(reading) = reading {
            return Ok(reading);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the client did not read its program's clock within {} ms",
                within.as_millis()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
