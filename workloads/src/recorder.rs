//! Writes a client's operations as JSON lines, one flush per operation, so the controller (and
//! the history on disk) has each one as soon as it happened.
//!
//! A recorder is shared by the worker and its lease's renewal thread: clones write to the same
//! output, one whole line at a time, so their lines never interleave.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use lockpick_checkers::{Op, OpType, Process, F};
use serde_json::Value;

use crate::clock::RunClock;

pub struct Recorder<W: Write> {
    out: Arc<Mutex<W>>,
    clock: RunClock,
    process: Process,
}

impl<W: Write> Clone for Recorder<W> {
    fn clone(&self) -> Recorder<W> {
        Recorder {
            out: Arc::clone(&self.out),
            clock: self.clock,
            process: self.process.clone(),
        }
    }
}

impl<W: Write> Recorder<W> {
    pub fn new(out: W, clock: RunClock, process: Process) -> Recorder<W> {
        Recorder {
            out: Arc::new(Mutex::new(out)),
            clock,
            process,
        }
    }

    pub fn clock(&self) -> RunClock {
        self.clock
    }

    /// Records one operation stamped now. An error means the controller is gone.
    pub fn record(&self, kind: OpType, f: F, value: Value) -> io::Result<()> {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        // Stamped under the lock, so the lines of one process are in time order.
        let op = Op::new(self.clock.now(), self.process.clone(), kind, f, value);
        let mut line = op.to_json_line();
        line.push('\n');
        out.write_all(line.as_bytes())?;
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    /// A writer that keeps what it was given, shared with the test.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<u8>>>);

    impl Write for Kept {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            // One byte at a time: the worst case for interleaving.
            self.0.lock().unwrap().push(bytes[0]);
            Ok(1)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_from_two_threads_never_interleave() {
        let kept = Kept::default();
        let recorder = Recorder::new(kept.clone(), RunClock::start(), Process::Client(3));
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let recorder = recorder.clone();
                thread::spawn(move || {
                    for i in 0..200 {
                        let value = serde_json::json!({ "thread": t, "i": i });
                        recorder.record(OpType::Ok, F::Renew, value).unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let text = String::from_utf8(kept.0.lock().unwrap().clone()).unwrap();
        let ops: Vec<Op> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a whole line"))
            .collect();
        assert_eq!(ops.len(), 400);
        assert!(ops.windows(2).all(|w| w[0].time <= w[1].time));
    }
}
