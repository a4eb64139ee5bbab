//! Figures read off a history for people: acquire latency and its percentiles, and durations in the units a person would say.

use std::collections::BTreeMap;

use lockpick_checkers::{Op, OpType, Process, F};

const SECOND: u64 = 1_000_000_000;

/// Successful acquires: (time of the ok, latency in ns), in history order.
pub fn acquire_latencies(ops: &[Op]) -> Vec<(u64, u64)> {
    let mut invoked: BTreeMap<u64, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for op in ops {
        let (Process::Client(p), F::Acquire) = (&op.process, op.f) else {
            continue;
        };
        match op.kind {
            OpType::Invoke => {
                invoked.insert(*p, op.time);
            }
            OpType::Ok => {
                if let Some(start) = invoked.remove(p) {
                    out.push((op.time, op.time.saturating_sub(start)));
                }
            }
            _ => {
                invoked.remove(p);
            }
        }
    }
    out
}

/// Latency percentile `q` (0 to 1) of successful acquires, in ns.
pub fn acquire_latency_percentile(ops: &[Op], q: f64) -> Option<u64> {
    let mut latencies: Vec<u64> = acquire_latencies(ops).into_iter().map(|(_, l)| l).collect();
    if latencies.is_empty() {
        return None;
    }
    latencies.sort_unstable();
    let i = ((latencies.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
    Some(latencies[i])
}

/// A duration as a person says it: `0 s`, `250 µs`, `1.5 ms`, `500 ms`, `1 s`, `2.5 s`,
/// `1 min 30 s`.
pub fn human_duration(ns: u64) -> String {
    const MINUTE: u64 = 60 * SECOND;
    if ns == 0 {
        return "0 s".to_string();
    }
    if ns < 1_000_000 {
        return format!("{} µs", decimal(ns as f64 / 1e3));
    }
    if ns < SECOND {
        return format!("{} ms", decimal(ns as f64 / 1e6));
    }
    if ns < MINUTE {
        return format!("{} s", decimal(ns as f64 / 1e9));
    }
    let (minutes, rest) = (ns / MINUTE, ns % MINUTE);
    if rest == 0 {
        format!("{minutes} min")
    } else {
        format!("{minutes} min {}", human_duration(rest))
    }
}

/// Up to two decimals, without trailing zeros: `1`, `1.5`, `0.25`.
fn decimal(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(time: u64, p: u64, kind: OpType) -> Op {
        Op::new(
            time,
            Process::Client(p),
            kind,
            F::Acquire,
            json!({"acquisition": "a"}),
        )
    }

    #[test]
    fn latency_pairs_each_ok_with_its_own_clients_invoke() {
        let ops = [
            op(0, 1, OpType::Invoke),
            op(10, 2, OpType::Invoke),
            op(30, 1, OpType::Ok),
            op(40, 2, OpType::Fail),
            op(50, 2, OpType::Invoke),
            op(55, 2, OpType::Ok),
        ];
        assert_eq!(acquire_latencies(&ops), vec![(30, 30), (55, 5)]);
        assert_eq!(acquire_latency_percentile(&ops, 0.0), Some(5));
        assert_eq!(acquire_latency_percentile(&ops, 1.0), Some(30));
        assert_eq!(acquire_latency_percentile(&[], 0.5), None);
    }

    #[test]
    fn durations_read_in_human_units() {
        assert_eq!(human_duration(0), "0 s");
        assert_eq!(human_duration(250_000), "250 µs");
        assert_eq!(human_duration(1_500_000), "1.5 ms");
        assert_eq!(human_duration(500_000_000), "500 ms");
        assert_eq!(human_duration(SECOND), "1 s");
        assert_eq!(human_duration(2_500_000_000), "2.5 s");
        assert_eq!(human_duration(90 * SECOND), "1 min 30 s");
        assert_eq!(human_duration(120 * SECOND), "2 min");
    }
}
