//! How long a run took to reach contention, phase by phase: its nodes, the wait at the
//! start-up gate, its service's start-up, and the first contended acquire (an acquire invoked
//! while another client holds the lock or waits for it). `results.json` keeps them, `lockpick
//! bench startup` reports them per service, and a comparison watches its cells' start-ups to
//! notice a machine that is running too many at once.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Seconds from the run's start (the time that `lockpick run` began to set up).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StartupTimes {
    /// Making every node (namespaces, links, firewalls).
    pub nodes_seconds: f64,
    /// Waiting at the start-up gate for other cells' start-ups.
    pub gate_wait_seconds: f64,
    /// The service's start, from its first server launched until every server answers.
    pub service_seconds: f64,
    /// From the run's start until the run clock started (the history's time 0).
    pub clock_started_seconds: f64,
    /// From the run's start until the first contended acquire; none when no acquire was ever
    /// contended.
    pub first_contended_seconds: Option<f64>,
}

/// The history lines read at most to find the first contended acquire: it comes within the
/// first few dozen lines of any run that contends at all.
const MAX_LINES: usize = 100_000;

impl StartupTimes {
    /// Fills in the first contended acquire from the run's history (time 0 at `clock_started`).
    pub fn with_first_contended(mut self, history: &Path) -> StartupTimes {
        self.first_contended_seconds = first_contended_ns(history)
            .map(|ns| self.clock_started_seconds + Duration::from_nanos(ns).as_secs_f64());
        self
    }
}

/// One history line, as far as this needs it.
#[derive(Deserialize)]
struct Line {
    time: u64,
    process: serde_json::Value,
    #[serde(rename = "type")]
    kind: String,
    f: String,
}

/// The run clock's time of the first acquire invoked while another client held the lock or
/// waited for it.
fn first_contended_ns(history: &Path) -> Option<u64> {
    let file = std::fs::File::open(history).ok()?;
    first_contended_in(BufReader::new(file))
}

fn first_contended_in(reader: impl BufRead) -> Option<u64> {
    // The processes that asked for the lock or hold it: an acquire's invoke adds its process,
    // a failed acquire or a release's completion removes it.
    let mut wanting: Vec<String> = Vec::new();
    for line in reader.lines().take(MAX_LINES) {
        let line = line.ok()?;
        let Ok(op) = serde_json::from_str::<Line>(&line) else {
            continue;
        };
        let process = op.process.to_string();
        match (op.f.as_str(), op.kind.as_str()) {
            ("acquire", "invoke") => {
                if wanting.iter().any(|p| *p != process) {
                    return Some(op.time);
                }
                if !wanting.contains(&process) {
                    wanting.push(process);
                }
            }
            ("acquire", "fail" | "info") | ("release", "ok" | "fail" | "info") => {
                wanting.retain(|p| *p != process)
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(time: u64, process: u32, kind: &str, f: &str) -> String {
        format!(r#"{{"index":0,"time":{time},"process":{process},"type":"{kind}","f":"{f}"}}"#)
    }

    #[test]
    fn the_first_acquire_invoked_while_another_client_wants_the_lock_is_contended() {
        let history = [
            r#"{"index":0,"time":1,"process":"harness","type":"info","f":"setup","value":{}}"#
                .to_string(),
            line(10, 0, "invoke", "acquire"),
            line(20, 0, "ok", "acquire"),
            line(30, 0, "invoke", "release"),
            line(40, 0, "ok", "release"),
            line(50, 1, "invoke", "acquire"),
            line(60, 1, "ok", "acquire"),
            line(70, 2, "invoke", "acquire"),
        ]
        .join("\n");
        assert_eq!(first_contended_in(history.as_bytes()), Some(70));
    }

    #[test]
    fn one_client_alone_never_contends() {
        let history = [
            line(10, 0, "invoke", "acquire"),
            line(20, 0, "fail", "acquire"),
            line(30, 0, "invoke", "acquire"),
        ]
        .join("\n");
        assert_eq!(first_contended_in(history.as_bytes()), None);
    }
}
