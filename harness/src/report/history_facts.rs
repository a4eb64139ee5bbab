//! What the report reads off the history beside the checkers' model: its setup line, when it
//! began and ended, and every acquire's latency. Read in one streaming pass, keeping only these
//! (two numbers per successful acquire), so the end of a run holds no more than the check does.

use std::collections::HashMap;
use std::io::BufRead;

use lockpick_checkers::history::Lines;
use lockpick_checkers::record::Who;
use lockpick_checkers::{Op, OpType, Process, F};
use serde_json::Value;

#[derive(Clone, Debug, Default)]
pub struct HistoryFacts {
    /// The `setup` line's value (`Null` when there is none).
    pub setup: Value,
    /// The earliest and latest `time` of any line.
    pub first: u64,
    pub last: u64,
    /// Successful acquires: (time of the ok, latency in ns), in history order.
    pub acquire_latencies: Vec<(u64, u64)>,
}

/// Follows acquires: an invoke starts the clock of its process, its ok stops it.
#[derive(Default)]
struct Facts {
    facts: HistoryFacts,
    invoked: HashMap<u64, u64>,
    seen: bool,
}

impl Facts {
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
            if is_setup {
                facts.facts.setup = record.value.decode().unwrap_or(Value::Null);
            }
        }
        facts.facts
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
            let harness = op.process.is_named(Process::HARNESS);
            if harness && op.f == F::Setup && facts.facts.setup.is_null() {
                facts.facts.setup = op.value.clone();
            }
        }
        facts.facts
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
        let text: String = ops
            .iter()
            .map(|o| serde_json::to_string(o).unwrap() + "\n")
            .collect();
        let streamed = HistoryFacts::read(text.as_bytes());
        let in_memory = HistoryFacts::of_ops(&ops);
        assert_eq!(streamed.acquire_latencies, vec![(40, 30), (65, 5)]);
        assert_eq!(streamed.acquire_latencies, in_memory.acquire_latencies);
        assert_eq!((streamed.first, streamed.last), (5, 65));
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
