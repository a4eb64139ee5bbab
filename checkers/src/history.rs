//! The history: every operation of a run, one JSON object per line, in the order the controller
//! received them (the schema is in `checkers/HISTORY.md`).
//!
//! An operation is Jepsen-shaped: `index`, `time`, `process`, `type`, `f`, `value`. `time` is
//! nanoseconds since the run began, read from the host's monotonic clock by whoever observed the
//! event (a client, the resource, the nemesis); faked or skewed clocks never reach it. Lines
//! arrive from several processes through separate pipes, so `index` is arrival order and `time`
//! need not grow with it: checkers order by `time` where real time matters, and by the
//! resource's own sequence where apply order matters.

use std::fmt;
use std::io::BufRead;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who performed an operation: a numbered client, or a named actor of the harness.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Process {
    /// A client process, numbered from 0.
    Client(u64),
    /// `"nemesis"`, `"resource"` or `"harness"`.
    Named(String),
}

impl Process {
    pub const NEMESIS: &'static str = "nemesis";
    pub const RESOURCE: &'static str = "resource";
    pub const HARNESS: &'static str = "harness";

    pub fn named(name: &str) -> Process {
        Process::Named(name.to_string())
    }

    pub fn is_named(&self, name: &str) -> bool {
        matches!(self, Process::Named(n) if n == name)
    }
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Process::Client(n) => write!(f, "client {n}"),
            Process::Named(name) => f.write_str(name),
        }
    }
}

/// Jepsen's operation types. `Info` means the outcome is unknown: the operation may or may not
/// have taken effect (a timed-out `SET` can still be applied later).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpType {
    Invoke,
    Ok,
    Fail,
    Info,
}

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum F {
    /// The harness describes the run (lock, TTL, fencing mode, which token the lock gives).
    Setup,
    /// A client tries once to take the lock.
    Acquire,
    /// A client reads the protected resource inside its critical section.
    Read,
    /// A client writes the protected resource inside its critical section.
    Write,
    /// A client gives the lock back.
    Release,
    /// The resource applied (`ok`) or rejected (`fail`) one access, in its serial order.
    Access,
    /// The nemesis started a fault.
    Start,
    /// The nemesis ended a fault.
    Stop,
    /// A client's lease was renewed in the background while it held the lock (a standalone
    /// line, no invoke): the new bounds of its lease.
    Renew,
    /// The harness's last look at the resource after the clients stopped: its value and the
    /// number of accesses it applied.
    #[serde(rename = "final-read")]
    FinalRead,
    /// The harness says how the workload ended: whether it was interrupted, and which clients
    /// crashed or hung (a run that did not exercise the lock as configured proves nothing).
    #[serde(rename = "run-end")]
    RunEnd,
}

/// One line of the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// Position in the history, from 0; assigned by the controller as lines arrive.
    #[serde(default)]
    pub index: u64,
    /// Nanoseconds since the run began, on the host's monotonic clock.
    pub time: u64,
    pub process: Process,
    #[serde(rename = "type")]
    pub kind: OpType,
    pub f: F,
    #[serde(default)]
    pub value: Value,
}

impl Op {
    pub fn new(time: u64, process: Process, kind: OpType, f: F, value: Value) -> Op {
        Op {
            index: 0,
            time,
            process,
            kind,
            f,
            value,
        }
    }

    /// The operation as one JSON line, without the newline.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).expect("an Op always serializes")
    }
}

/// A history that could not be read: which line, and why. A malformed history is never evidence
/// of a violation; checkers turn it into an `unknown` verdict.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("line {line}: {reason}")]
pub struct Malformed {
    /// 1-based line number in the history file (0 when the problem is not tied to one line).
    pub line: usize,
    pub reason: String,
}

impl Malformed {
    pub fn at(line: usize, reason: impl Into<String>) -> Malformed {
        Malformed {
            line,
            reason: reason.into(),
        }
    }
}

/// The longest line a history may hold. A longer line is malformed: the reader never holds
/// more than this much of one line, so a file without newlines (`/dev/zero`) ends in an
/// `unknown` verdict rather than in exhausted memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The operations of a JSON-lines history, one at a time, with their 1-based line numbers.
/// Blank lines are skipped; a final line cut off mid-write (a controller killed while writing)
/// is malformed like any other broken line, so the caller learns exactly where the history stops
/// being trustworthy. After the first malformed line the iterator ends.
pub struct Lines<R> {
    reader: R,
    pub(crate) buffer: Vec<u8>,
    line: usize,
    pub(crate) operations: u64,
    done: bool,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Lines<R> {
        Lines {
            reader,
            buffer: Vec::new(),
            line: 0,
            operations: 0,
            done: false,
        }
    }

    /// Reads the next line into `self.buffer`, without its newline; false at the end of input.
    fn read_line(&mut self) -> Result<bool, Malformed> {
        self.buffer.clear();
        self.line += 1;
        let mut read_any = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Malformed::at(self.line, format!("cannot read: {e}"))),
            };
            if available.is_empty() {
                return Ok(read_any);
            }
            read_any = true;
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.unwrap_or(available.len());
            if self.buffer.len() + take > MAX_LINE_BYTES {
                return Err(Malformed::at(
                    self.line,
                    format!("line longer than {MAX_LINE_BYTES} bytes"),
                ));
            }
            self.buffer.extend_from_slice(&available[..take]);
            let consumed = take + usize::from(newline.is_some());
            self.reader.consume(consumed);
            if newline.is_some() {
                return Ok(true);
            }
        }
    }

    /// Reads up to the next line that is not blank and gives its number; `None` at the end of
    /// input. The line is left in `self.buffer`.
    pub(crate) fn next_line(&mut self) -> Result<Option<usize>, Malformed> {
        loop {
            if !self.read_line()? {
                return Ok(None);
            }
            if !self.buffer.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(self.line));
            }
        }
    }

    fn next_op(&mut self) -> Result<Option<(usize, Op)>, Malformed> {
        let Some(number) = self.next_line()? else {
            return Ok(None);
        };
        let op: Op = serde_json::from_str(text_of(&self.buffer, number)?)
            .map_err(|e| not_an_operation(number, e))?;
        count(&mut self.operations, number, op.index)?;
        Ok(Some((number, op)))
    }
}

pub(crate) fn text_of(buffer: &[u8], number: usize) -> Result<&str, Malformed> {
    std::str::from_utf8(buffer)
        .map(str::trim)
        .map_err(|_| Malformed::at(number, "not valid UTF-8"))
}

/// Checks that `index` is the next one expected, and counts it.
pub(crate) fn count(operations: &mut u64, number: usize, index: u64) -> Result<(), Malformed> {
    if index != *operations {
        return Err(Malformed::at(
            number,
            format!("index {index} where {operations} was expected"),
        ));
    }
    *operations += 1;
    Ok(())
}

pub(crate) fn not_an_operation(number: usize, e: serde_json::Error) -> Malformed {
    Malformed::at(number, format!("not a history operation: {e}"))
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = Result<(usize, Op), Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_op().transpose();
        self.done = !matches!(next, Some(Ok(_)));
        next
    }
}

/// Reads a whole JSON-lines history into memory (see [`Lines`] for the rules).
pub fn read_history(reader: impl BufRead) -> Result<Vec<Op>, Malformed> {
    Lines::new(reader)
        .map(|line| line.map(|(_, op)| op))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_it_writes() {
        let op = Op::new(
            5,
            Process::Client(3),
            OpType::Ok,
            F::Acquire,
            serde_json::json!({"acquisition": "3.1", "token": null}),
        );
        let nemesis = Op {
            index: 1,
            ..Op::new(
                9,
                Process::named("nemesis"),
                OpType::Info,
                F::Start,
                Value::Null,
            )
        };
        let text = format!("{}\n\n{}\n", op.to_json_line(), nemesis.to_json_line());
        let ops = read_history(text.as_bytes()).unwrap();
        assert_eq!(ops, vec![op, nemesis]);
    }

    #[test]
    fn a_broken_line_is_reported_with_its_number() {
        let good = Op::new(
            1,
            Process::Client(0),
            OpType::Invoke,
            F::Acquire,
            Value::Null,
        );
        let text = format!("{}\n{{\"index\":1,\"time\":", good.to_json_line());
        let err = read_history(text.as_bytes()).unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn an_unknown_operation_type_is_malformed() {
        let text = r#"{"index":0,"time":1,"process":0,"type":"maybe","f":"acquire"}"#;
        assert_eq!(read_history(text.as_bytes()).unwrap_err().line, 1);
    }

    #[test]
    fn a_line_longer_than_the_bound_is_malformed_with_its_number() {
        let first = r#"{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire"}"#;
        let long = vec![b' '; MAX_LINE_BYTES + 1];
        let mut text = format!("{first}\n").into_bytes();
        text.extend_from_slice(&long);
        let err = read_history(text.as_slice()).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.reason.contains("longer than"), "{err}");
    }

    #[test]
    fn an_endless_line_without_newlines_ends_malformed() {
        let zeros = std::io::BufReader::new(std::io::repeat(0));
        let err = read_history(zeros).unwrap_err();
        assert_eq!(err.line, 1);
    }

    #[test]
    fn indexes_must_count_from_zero_without_gaps() {
        let text = r#"{"index":1,"time":1,"process":0,"type":"invoke","f":"acquire"}"#;
        let err = read_history(text.as_bytes()).unwrap_err();
        assert!(err.reason.contains("index 1"), "{err}");
    }
}
