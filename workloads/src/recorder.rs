//! Writes a client's operations as JSON lines, one flush per operation, so the controller (and
//! the history on disk) has each one as soon as it happened.

use std::io::{self, Write};

use lockpick_checkers::{Op, OpType, Process, F};
use serde_json::Value;

use crate::clock::RunClock;

pub struct Recorder<W: Write> {
    out: W,
    clock: RunClock,
    process: Process,
}

impl<W: Write> Recorder<W> {
    pub fn new(out: W, clock: RunClock, process: Process) -> Recorder<W> {
        Recorder {
            out,
            clock,
            process,
        }
    }

    pub fn clock(&self) -> RunClock {
        self.clock
    }

    /// Records one operation stamped now. An error means the controller is gone.
    pub fn record(&mut self, kind: OpType, f: F, value: Value) -> io::Result<()> {
        let op = Op::new(self.clock.now(), self.process.clone(), kind, f, value);
        writeln!(self.out, "{}", op.to_json_line())?;
        self.out.flush()
    }
}
