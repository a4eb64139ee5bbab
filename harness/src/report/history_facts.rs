//! What the report reads off the history beside the checkers' model: its setup line, when it
//! began and ended, every acquire's latency, and the libraries client programs named. Read in one streaming pass, keeping only these
//! (two numbers per successful acquire), so the end of a run holds no more than the check does.

use std::collections::HashMap;
use std::io::BufRead;

use lockpick_checkers::history::Lines;
use lockpick_checkers::record::{RawOpValue, Who};
use lockpick_checkers::setup::SetupRecord;
use lockpick_checkers::{Op, OpType, Process, F};
use serde::Deserialize;
use serde_json::Value;

#[derive(Clone, Debug, Default)]
pub struct HistoryFacts {
    /// The `setup` line's value (`Null` when there is none), as written: the report shows every
    /// field of it, and reads foreign histories' own names for some.
    pub setup: Value,
    /// The same line as lockpick writes it; empty when there is none or it does not read as
    /// one (a history is hostile input: then the outputs say nothing of what ran where).
    pub setup_record: SetupRecord,
    /// The earliest and latest `time` of any line.
    pub first: u64,
    pub last: u64,
    /// Successful acquires: (time of the ok, latency in ns), in history order.
    pub acquire_latencies: Vec<(u64, u64)>,
    /// The libraries client programs named in their hellos (an acquire completion's
    /// `library`), each once, in history order; at most [`MAX_LIBRARIES`], each cut to
    /// [`MAX_LIBRARY_CHARS`] (a history is hostile input).
    pub libraries: Vec<String>,
}

pub const MAX_LIBRARIES: usize = 8;
pub const MAX_LIBRARY_CHARS: usize = 200;

/// The `library` an acquire completion carries, if any. Most carry none: the text is looked at
/// before anything is decoded.
fn library_of(value: RawOpValue<'_>) -> Option<String> {
    #[derive(Deserialize)]
    struct Said {
        #[serde(default)]
        library: Option<String>,
    }
    if let RawOpValue::Text(raw) = value {
        if !raw.get().contains("\"library\"") {
            return None;
        }
    }
    let library = value.decode::<Said>().ok()?.library?;
    Some(library.chars().take(MAX_LIBRARY_CHARS).collect())
}

/// Follows acquires: an invoke starts the clock of its process, its ok stops it.
#[derive(Default)]
struct Facts {
    facts: HistoryFacts,
    invoked: HashMap<u64, u64>,
    seen: bool,
}

impl Facts {
    fn finish(mut self) -> HistoryFacts {
        let line = &self.facts.setup;
        self.facts.setup_record = SetupRecord::deserialize(line).unwrap_or_default();
        self.facts
    }

    fn library(&mut self, client: Option<u64>, kind: OpType, f: F, value: RawOpValue<'_>) {
        if client.is_none() || f != F::Acquire || kind == OpType::Invoke {
            return;
        }
        let libraries = &mut self.facts.libraries;
        if libraries.len() >= MAX_LIBRARIES {
            return;
        }
        if let Some(library) = library_of(value).filter(|l| !libraries.contains(l)) {
            libraries.push(library);
        }
    }

    fn line(&mut self, time: u64, client: Option<u64>, kind: OpType, f: F) {
        if !self.seen {
            self.facts.first = time;
            self.seen = true;
        }
        self.facts.first = self.facts.first.min(time);
        self.facts.last = self.facts.last.max(time);
        let (Some(p), F::Acquire) = (client, f) else {
            return;
        };
        match kind {
            OpType::Invoke => {
                self.invoked.insert(p, time);
            }
            OpType::Ok => {
                if let Some(start) = self.invoked.remove(&p) {
                    let latency = time.saturating_sub(start);
                    self.facts.acquire_latencies.push((time, latency));
                }
            }
            _ => {
                self.invoked.remove(&p);
            }
        }
    }
}

impl HistoryFacts {
    /// Reads a history, line by line, up to its end or its first malformed line.
    pub fn read(reader: impl BufRead) -> HistoryFacts {
        let mut facts = Facts::default();
        let mut lines = Lines::new(reader);
        while let Ok(Some((_, record))) = lines.next_record() {
            let client = match record.process {
                Who::Client(p) => Some(p),
                Who::Named(_) => None,
            };
            let is_setup = record.f == F::Setup && facts.facts.setup.is_null();
            facts.line(record.time, client, record.kind, record.f);
            facts.library(client, record.kind, record.f, record.value);
            if is_setup {
                facts.facts.setup = record.value.decode().unwrap_or(Value::Null);
            }
        }
        facts.finish()
    }

    /// The same facts from operations already in memory (tests, generated histories).
    pub fn of_ops(ops: &[Op]) -> HistoryFacts {
        let mut facts = Facts::default();
        for op in ops {
            let client = match op.process {
                Process::Client(p) => Some(p),
                _ => None,
            };
            facts.line(op.time, client, op.kind, op.f);
            facts.library(client, op.kind, op.f, RawOpValue::Tree(&op.value));
            let harness = op.process.is_named(Process::HARNESS);
            if harness && op.f == F::Setup && facts.facts.setup.is_null() {
                facts.facts.setup = op.value.clone();
            }
        }
        facts.finish()
    }

    /// Latency percentile `q` (0 to 1) of successful acquires, in ns.
    pub fn acquire_latency_percentile(&self, q: f64) -> Option<u64> {
        let mut latencies: Vec<u64> = self.acquire_latencies.iter().map(|(_, l)| *l).collect();
        if latencies.is_empty() {
            return None;
        }
        latencies.sort_unstable();
        let i = ((latencies.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
        Some(latencies[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(index: u64, time: u64, process: Process, kind: OpType, f: F) -> Op {
        let mut op = Op::new(time, process, kind, f, json!({ "acquisition": "0.1" }));
        op.index = index;
        op
    }

    #[test]
    fn streaming_and_in_memory_read_the_same_facts() {
        let ops = vec![
            Op::new(
                5,
                Process::named(Process::HARNESS),
                OpType::Info,
                F::Setup,
                json!({ "lock": "redis" }),
            ),
            op(1, 10, Process::Client(0), OpType::Invoke, F::Acquire),
            op(2, 40, Process::Client(0), OpType::Ok, F::Acquire),
            op(3, 50, Process::Client(1), OpType::Invoke, F::Acquire),
            op(4, 55, Process::Client(1), OpType::Fail, F::Acquire),
            op(5, 60, Process::Client(1), OpType::Invoke, F::Acquire),
            op(6, 65, Process::Client(1), OpType::Ok, F::Acquire),
        ];
        let mut ops = ops;
        let said = |index, process, kind, library: &str| {
            let value = json!({ "acquisition": "0.1", "library": library });
            let mut op = Op::new(70, Process::Client(process), kind, F::Acquire, value);
            op.index = index;
            op
        };
        ops.push(said(7, 0, OpType::Fail, "redis-py 5.0.1"));
        ops.push(said(8, 1, OpType::Fail, "redis-py 5.0.1"));
        ops.push(said(9, 1, OpType::Invoke, "not at an invoke"));
        ops.push(said(10, 1, OpType::Info, &"x".repeat(500)));
        let text: String = ops
            .iter()
            .map(|o| serde_json::to_string(o).unwrap() + "\n")
            .collect();
        let streamed = HistoryFacts::read(text.as_bytes());
        let in_memory = HistoryFacts::of_ops(&ops);
        assert_eq!(streamed.acquire_latencies, vec![(40, 30), (65, 5)]);
        assert_eq!(streamed.acquire_latencies, in_memory.acquire_latencies);
        assert_eq!((streamed.first, streamed.last), (5, 70));
        let long = "x".repeat(MAX_LIBRARY_CHARS);
        assert_eq!(streamed.libraries, ["redis-py 5.0.1", long.as_str()]);
        assert_eq!(in_memory.libraries, streamed.libraries);
        assert_eq!(streamed.setup["lock"], "redis");
        assert_eq!(in_memory.setup, streamed.setup);
        assert_eq!(streamed.acquire_latency_percentile(0.0), Some(5));
        assert_eq!(streamed.acquire_latency_percentile(1.0), Some(30));
        assert_eq!(
            HistoryFacts::default().acquire_latency_percentile(0.5),
            None
        );
    }
}
