//! The history as it grows on disk. Lines from clients and the resource are passed through as
//! they came, with the next index put in front; the controller's own records (setup, faults,
//! final read) are serialised here. Writes are batched: the buffer is flushed at least every
//! [`FLUSH_EVERY`] while lines arrive, whenever the controller finds no line waiting, after each
//! of its own records (each may come right before an action that could bring the run down), and
//! when the log is dropped (on every error path and at teardown), so a controller that dies
//! loses at most the last few milliseconds, and one that fails cleanly loses nothing.

mod follow;
mod received;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use lockpick_checkers::Op;

pub use follow::{Abandoned, Follower};
pub use received::{Head, Received};

/// The longest a received line waits in the buffer while other lines keep arriving.
pub const FLUSH_EVERY: Duration = Duration::from_millis(2);

pub struct HistoryLog {
    out: BufWriter<File>,
    next_index: u64,
    last_flush: Instant,
}

impl HistoryLog {
    pub fn create(path: &Path) -> Result<HistoryLog> {
        let file = crate::files::safe_write::create_new(path)
            .with_context(|| format!("cannot create {path:?}"))?;
        Ok(HistoryLog {
            out: BufWriter::with_capacity(1 << 16, file),
            next_index: 0,
            last_flush: Instant::now(),
        })
    }

    /// Appends one of the controller's own records with the next index, flushes, and returns
    /// the record as written.
    pub fn append(&mut self, mut op: Op) -> Result<Op> {
        op.index = self.next_index;
        let mut line = op.to_json_line();
        line.push('\n');
        self.out
            .write_all(line.as_bytes())
            .context("cannot write the history")?;
        self.next_index += 1;
        self.flush()?;
        Ok(op)
    }

    /// Appends a received line with the next index in front of its fields, and returns that
    /// index. Flushes when the last flush is [`FLUSH_EVERY`] old.
    pub fn append_received(&mut self, line: &Received) -> Result<u64> {
        let index = self.next_index;
        let mut digits = [0u8; 20];
        let written = (|| {
            self.out.write_all(b"{\"index\":")?;
            self.out.write_all(decimal(index, &mut digits))?;
            self.out.write_all(b",")?;
            self.out.write_all(line.fields().as_bytes())?;
            self.out.write_all(b"\n")
        })();
        written.context("cannot write the history")?;
        self.next_index += 1;
        if self.last_flush.elapsed() >= FLUSH_EVERY {
            self.flush()?;
        }
        Ok(index)
    }

    /// Writes out everything buffered.
    pub fn flush(&mut self) -> Result<()> {
        self.last_flush = Instant::now();
        self.out.flush().context("cannot write the history")
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len(&self) -> u64 {
        self.next_index
    }
}

impl Drop for HistoryLog {
    fn drop(&mut self) {
        if let Err(e) = self.out.flush() {
            crate::tell!("lockpick: cannot write the end of the history: {e}");
        }
    }
}

/// `n` in decimal, written into `buffer` without allocating.
fn decimal(mut n: u64, buffer: &mut [u8; 20]) -> &[u8] {
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buffer[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockpick_checkers::{OpType, Process, F};

    #[test]
    fn received_and_own_records_make_one_readable_history() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let mut log = HistoryLog::create(&path).unwrap();
        let setup = Op::new(
            0,
            Process::named("harness"),
            OpType::Info,
            F::Setup,
            json!({}),
        );
        log.append(setup).unwrap();
        for line in [
            r#"{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","value":{"acquisition":"0.1"}}"#,
            r#"{"time":6,"process":0,"type":"fail","f":"acquire","value":{"acquisition":"0.1"}}"#,
        ] {
            let received = Received::parse(line.to_string()).unwrap();
            log.append_received(&received).unwrap();
        }
        drop(log);
        let text = std::fs::read(&path).unwrap();
        let ops = lockpick_checkers::read_history(text.as_slice()).unwrap();
        let indexes: Vec<u64> = ops.iter().map(|op| op.index).collect();
        assert_eq!(indexes, vec![0, 1, 2]);
        assert_eq!(ops[2].kind, OpType::Fail);
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        let mut buffer = [0u8; 20];
        for n in [0, 7, 10, 12345, u64::MAX] {
            assert_eq!(decimal(n, &mut buffer), n.to_string().as_bytes());
        }
    }

    use serde_json::json;
}
