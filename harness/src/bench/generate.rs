//! Synthetic histories for the benchmarks, written straight to a file: clients take turns
//! holding the lock (one failed attempt by the next client each time), read and write the
//! resource under the lock with fencing tokens and leases, the nemesis opens and closes a fault
//! every few thousand lines, and the harness ends with an agreeing final read. `Overlapping`
//! makes every hold start before the previous one ended: every pair of neighbours overlaps.

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Result;
use lockpick_checkers::fault::{FaultKind, FaultRecord, Target};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Correct,
    Overlapping,
}

const CLIENTS: u64 = 5;
/// Lines per hold: acquire fail (2), acquire (2), read (2) and its access, write (2) and its
/// access, release (2).
const LINES_PER_HOLD: u64 = 12;
const HOLDS_PER_FAULT: u64 = 2000;

/// Writes a history of about `lines` lines to `path` and returns how many it wrote.
pub fn write(path: &Path, lines: u64, shape: Shape) -> Result<u64> {
    let file = crate::files::safe_write::create_new(path)?;
    write_to(BufWriter::with_capacity(1 << 20, file), lines, shape)
}

/// A history of about `lines` lines, in memory.
pub fn in_memory(lines: u64, shape: Shape) -> Result<Vec<u8>> {
    let mut text = Vec::new();
    write_to(&mut text, lines, shape)?;
    Ok(text)
}

fn write_to(out: impl Write, lines: u64, shape: Shape) -> Result<u64> {
    let mut out = Lines { out, index: 0 };
    out.line(
        0,
        "\"harness\"",
        "info",
        "setup",
        r#"{"lock":"bench","token":"a counter","ttl_ms":1000,"fencing":"off","nemesis":"pause-holder","lease_silence_ms":null}"#,
    )?;
    let holds = lines.saturating_sub(2) / LINES_PER_HOLD;
    let mut seq = 0;
    let mut fault = 0;
    let mut time = 1_000;
    for h in 0..holds {
        seq = write_hold(&mut out, h, time, seq)?;
        if h % HOLDS_PER_FAULT == 0 {
            write_fault(&mut out, fault, h % CLIENTS, time)?;
            fault += 1;
        }
        // The next hold starts after this one's release, or, overlapping, before it.
        time += match shape {
            Shape::Correct => 1_000,
            Shape::Overlapping => 550,
        };
    }
    let last = format!(r#"{{"value":{},"applied":{seq}}}"#, holds.saturating_sub(1));
    out.line(time + 1_000, "\"harness\"", "ok", "final-read", &last)?;
    out.out.flush()?;
    Ok(out.index)
}

/// Hold `h`, from `time`: the bulk of every history, its [`LINES_PER_HOLD`] lines written in
/// one place. Returns the resource's access count after it (`seq` before it).
fn write_hold(out: &mut Lines<impl Write>, h: u64, time: u64, mut seq: u64) -> Result<u64> {
    let p = h % CLIENTS;
    let other = (h + 1) % CLIENTS;
    let acq = format!("{p}.{h}");
    let failed = format!("{other}.f{h}");
    let client = p.to_string();
    let token = h + 1;
    out.line(
        time,
        &other.to_string(),
        "invoke",
        "acquire",
        &acquisition(&failed),
    )?;
    out.line(time + 10, &client, "invoke", "acquire", &acquisition(&acq))?;
    out.line(
        time + 50,
        &other.to_string(),
        "fail",
        "acquire",
        &failed_value(&failed),
    )?;
    let lease = format!(
        r#"{{"live_until":{},"expires_by":{}}}"#,
        time + 900,
        time + 1_100
    );
    let ok = format!(r#"{{"acquisition":"{acq}","token":{token},"lease":{lease}}}"#);
    out.line(time + 100, &client, "ok", "acquire", &ok)?;
    let used = format!(r#"{{"acquisition":"{acq}","token":{token}}}"#);
    for (k, f) in [(0, "read"), (1, "write")] {
        let at = time + 200 + k * 200;
        out.line(at, &client, "invoke", f, &used)?;
        seq += 1;
        let access = format!(
            r#"{{"seq":{seq},"process":{p},"acquisition":"{acq}","token":{token},"op":"{f}","value":{h}}}"#
        );
        out.line(at + 50, "\"resource\"", "ok", "access", &access)?;
        let done = format!(r#"{{"acquisition":"{acq}","token":{token},"value":{h}}}"#);
        out.line(at + 100, &client, "ok", f, &done)?;
    }
    out.line(time + 700, &client, "invoke", "release", &acquisition(&acq))?;
    out.line(time + 800, &client, "ok", "release", &acquisition(&acq))?;
    Ok(seq)
}

/// Fault `id`, a pause of client `p` inside the hold that starts at `time`: only every
/// [`HOLDS_PER_FAULT`] holds, so it is written apart from the hold.
fn write_fault(out: &mut Lines<impl Write>, id: u64, p: u64, time: u64) -> Result<()> {
    let start = serde_json::to_string(&FaultRecord {
        id,
        fault: FaultKind::Pause,
        targets: vec![Target::Client(p)],
        nemesis: Some("pause-holder".to_string()),
        effective: Some(true),
    })?;
    out.line(time + 150, "\"nemesis\"", "info", "start", &start)?;
    out.line(time + 650, "\"nemesis\"", "info", "stop", &start)?;
    Ok(())
}

fn acquisition(acq: &str) -> String {
    format!(r#"{{"acquisition":"{acq}"}}"#)
}

fn failed_value(acq: &str) -> String {
    format!(r#"{{"acquisition":"{acq}","error":"the lock is held"}}"#)
}

struct Lines<W: Write> {
    out: W,
    index: u64,
}

impl<W: Write> Lines<W> {
    fn line(&mut self, time: u64, process: &str, kind: &str, f: &str, value: &str) -> Result<()> {
        writeln!(
            self.out,
            r#"{{"index":{},"time":{time},"process":{process},"type":"{kind}","f":"{f}","value":{value}}}"#,
            self.index
        )?;
        self.index += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockpick_checkers::Validity;

    fn check(shape: Shape) -> lockpick_checkers::Results {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let lines = write(&path, 5_000, shape).unwrap();
        assert!(lines > 4_900 && lines <= 5_000, "{lines}");
        let text = std::fs::read(&path).unwrap();
        lockpick_checkers::check_reader(text.as_slice())
    }

    #[test]
    fn a_correct_history_is_valid() {
        let results = check(Shape::Correct);
        assert_eq!(
            results.valid,
            Validity::Valid,
            "{:?}",
            results.unknown_reasons
        );
    }

    #[test]
    fn an_overlapping_history_overlaps_at_every_hold() {
        let results = check(Shape::Overlapping);
        assert_eq!(results.valid, Validity::Invalid);
        let overlaps = results.overlapping_holders.unwrap();
        assert_eq!(overlaps.overlaps.len(), overlaps.holds - 1);
    }
}
