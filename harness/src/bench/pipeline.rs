//! Report size and time, and the controller's CPU per recorded line.
//!
//! The controller's figure comes from a synthetic run of the record path, no servers: `cat`
//! feeds a generated history's client lines through a pipe into the same reader thread a client
//! gets, and the controller's loop writes each line to a history with its index, following
//! every client line as a run does. CPU is the whole controller process's (both threads).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{Context, Result};
use nix::time::{clock_gettime, ClockId};
use serde::Serialize;

use super::generate::{self, Shape};
use crate::history_log::{Follower, HistoryLog};
use crate::processes::children::{read_ops, Event, Role};

#[derive(Debug, Serialize)]
pub struct ReportRow {
    pub lines: u64,
    /// Loading (reading and checking) plus writing report.html and junit.xml.
    pub seconds: f64,
    pub report_bytes: u64,
}

/// Writes a run folder holding a generated history of each size and times its report.
pub fn report(dir: &Path, sizes: &[u64]) -> Result<Vec<ReportRow>> {
    let mut rows = Vec::new();
    for &size in sizes {
        let run = dir.join(format!("run-{size}"));
        std::fs::create_dir_all(&run)?;
        let lines = generate::write(&run.join(crate::store::HISTORY), size, Shape::Correct)?;
        let started = Instant::now();
        let loaded = crate::report::load(&run)?;
        crate::report::write_run_reports(&run, &loaded)?;
        let seconds = started.elapsed().as_secs_f64();
        let report_bytes = std::fs::metadata(run.join(crate::report::REPORT))?.len();
        std::fs::remove_dir_all(&run)?;
        rows.push(ReportRow {
            lines,
            seconds,
            report_bytes,
        });
    }
    Ok(rows)
}

#[derive(Debug, Serialize)]
pub struct ControllerRow {
    pub lines: u64,
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    pub cpu_us_per_line: f64,
    pub lines_per_cpu_second: f64,
}

fn cpu_now() -> f64 {
    clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(0.0)
}

/// Records `size` generated lines through the record path and measures its CPU.
pub fn controller(dir: &Path, size: u64) -> Result<ControllerRow> {
    let source = dir.join("controller-input.jsonl");
    generate::write(&source, size, Shape::Correct)?;
    let target = dir.join("controller-history.jsonl");
    let _ = std::fs::remove_file(&target);
    let mut log = HistoryLog::create(&target)?;
    let mut follower = Follower::default();
    let (sender, events) = mpsc::channel();
    let cpu_before = cpu_now();
    let started = Instant::now();
    let mut feeder = Command::new("cat")
        .arg(&source)
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run cat")?;
    let output = feeder.stdout.take().context("cat has no output")?;
    read_ops(Role::Client(0), output, sender);
    let mut recorded = 0;
    for event in events.iter() {
        match event {
            Event::Line(line) => {
                log.append_received(&line)?;
                if let lockpick_checkers::Process::Client(p) = line.head.process {
                    follower.follow(p, &line.head);
                }
                recorded += 1;
            }
            Event::Closed(_) => break,
            Event::Opened(_) | Event::Garbage(..) => {}
        }
    }
    log.flush()?;
    let cpu_seconds = cpu_now() - cpu_before;
    let wall_seconds = started.elapsed().as_secs_f64();
    feeder.wait()?;
    drop(log);
    let check =
        lockpick_checkers::check_reader(std::io::BufReader::new(std::fs::File::open(&target)?));
    anyhow::ensure!(
        check.malformed.is_none() && check.operations as u64 == recorded,
        "the recorded history does not read back: {:?}",
        check.malformed
    );
    std::fs::remove_file(&source)?;
    std::fs::remove_file(&target)?;
    Ok(ControllerRow {
        lines: recorded,
        cpu_seconds,
        wall_seconds,
        cpu_us_per_line: cpu_seconds * 1e6 / recorded.max(1) as f64,
        lines_per_cpu_second: recorded as f64 / cpu_seconds.max(1e-9),
    })
}
