//! What moving a process's clock through its vDSO costs it: a clock read's time in a child
//! that only reads clocks, redis-server's SET throughput (redis-benchmark over a unix socket in
//! the bench's folder) and etcd's put rate ([`super::clock_shift_etcd`]), each without and with
//! the replacements in place. Rounds
//! alternate plain and shifted so a busy machine's drift falls on both alike, and the best of
//! each is printed: on a shared machine the other loads only ever make a round worse, so the
//! best round is the closest to the code's own cost.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::clock_shift_row::{evident, row, shifted, ClockShiftRow, Reaped};

/// Reads clocks when told: for each line on stdin, times a loop of clock_gettime calls on
/// CLOCK_REALTIME, then on CLOCK_MONOTONIC, and prints the nanoseconds per call of each and
/// the wall clock's seconds (the evidence that a shift took effect).
pub fn measure_in_child() -> Result<()> {
    use nix::time::{clock_gettime, ClockId};
    const CALLS: u32 = 1_000_000;
    for line in std::io::stdin().lock().lines() {
        line?;
        let mut per_call = Vec::new();
        for clock in [ClockId::CLOCK_REALTIME, ClockId::CLOCK_MONOTONIC] {
            let started = Instant::now();
            for _ in 0..CALLS {
                std::hint::black_box(clock_gettime(clock)?);
            }
            per_call.push(started.elapsed().as_nanos() as f64 / f64::from(CALLS));
        }
        let wall = clock_gettime(ClockId::CLOCK_REALTIME)?;
        crate::say!("{} {} {}", per_call[0], per_call[1], wall.tv_sec());
    }
    Ok(())
}

/// Redis's own clock (`TIME`) less ours, in seconds.
fn redis_ahead(socket: &Path) -> Result<f64> {
    let out = Command::new("redis-cli")
        .arg("-s")
        .arg(socket)
        .arg("TIME")
        .output()
        .context("cannot run redis-cli")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let seconds: f64 = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .with_context(|| format!("redis-cli TIME said {text:?}"))?;
    Ok(seconds - chrono::Utc::now().timestamp() as f64)
}

/// Measures both parts over `rounds` alternating rounds.
pub fn measure(dir: &Path, rounds: u32, requests: u32) -> Result<Vec<ClockShiftRow>> {
    let mut rows = clock_reads(rounds)?;
    rows.extend(redis(dir, rounds, requests)?);
    // A put is a raft round and an fsync, far dearer than a SET: fewer of them.
    rows.push(super::clock_shift_etcd::measure(rounds, requests / 10)?);
    Ok(rows)
}

fn clock_reads(rounds: u32) -> Result<Vec<ClockShiftRow>> {
    let exe = std::env::current_exe().context("cannot find lockpick's own binary")?;
    let mut child = Command::new(exe)
        .args(["bench", "measure-clock"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start the clock-reading child")?;
    let mut input = child.stdin.take().expect("piped");
    let mut output = BufReader::new(child.stdout.take().expect("piped"));
    let child = Reaped(child);
    // Per call on each clock, and how far ahead the child's wall clock was.
    let mut sample = || -> Result<((f64, f64), f64)> {
        writeln!(input, "go")?;
        let mut line = String::new();
        output.read_line(&mut line)?;
        let fields: Vec<f64> = line
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        let now = chrono::Utc::now().timestamp() as f64;
        match fields[..] {
            [realtime, monotonic, wall] => Ok(((realtime, monotonic), wall - now)),
            _ => bail!("the clock-reading child said {line:?}"),
        }
    };
    let (mut plain, mut moved, mut fast) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        plain.push(sample()?.0);
        let mut process = shifted(child.0.id())?;
        fast = process.fast_paths().to_vec();
        let (figures, ahead) = sample()?;
        evident(ahead, "the clock-reading child's wall clock")?;
        moved.push(figures);
        process.restore()?;
    }
    let pick = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| v.iter().map(f).collect::<Vec<_>>();
    Ok(vec![
        row(
            "clock_gettime(CLOCK_REALTIME), moved",
            "ns/call",
            pick(&plain, |s| s.0),
            pick(&moved, |s| s.0),
            &fast,
        ),
        row(
            "clock_gettime(CLOCK_MONOTONIC), not moved",
            "ns/call",
            pick(&plain, |s| s.1),
            pick(&moved, |s| s.1),
            &fast,
        ),
    ])
}

fn redis(dir: &Path, rounds: u32, requests: u32) -> Result<Vec<ClockShiftRow>> {
    let socket = dir.join("clock-shift-redis.sock");
    let server = Reaped(
        Command::new("redis-server")
            .args(["--port", "0", "--unixsocket"])
            .arg(&socket)
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start redis-server")?,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        if Instant::now() > deadline {
            bail!("redis-server made no socket at {socket:?} in 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut rows = Vec::new();
    for pipeline in [1u32, 16] {
        let benchmark = || benchmark(&socket, requests, pipeline);
        let (mut plain, mut moved, mut fast) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            plain.push(benchmark()?);
            let mut process = shifted(server.0.id())?;
            fast = process.fast_paths().to_vec();
            evident(redis_ahead(&socket)?, "redis-server's TIME")?;
            moved.push(benchmark()?);
            process.restore()?;
        }
        rows.push(row(
            &format!("redis-server SET, 50 clients, pipeline {pipeline}"),
            "requests/s",
            plain,
            moved,
            &fast,
        ));
    }
    Ok(rows)
}

/// SET requests per second through redis-benchmark.
fn benchmark(socket: &Path, requests: u32, pipeline: u32) -> Result<f64> {
    let out = Command::new("redis-benchmark")
        .arg("-s")
        .arg(socket)
        .args(["-t", "set", "-c", "50", "-q", "--csv"])
        .args(["-n", &requests.to_string(), "-P", &pipeline.to_string()])
        .output()
        .context("cannot run redis-benchmark")?;
    let text = String::from_utf8_lossy(&out.stdout);
    // --csv: a header, then "SET","<rps>",...
    text.lines()
        .find_map(|l| {
            let mut fields = l.split(',').map(|f| f.trim_matches('"'));
            (fields.next() == Some("SET")).then(|| fields.next()?.parse().ok())?
        })
        .with_context(|| format!("redis-benchmark printed no SET figure: {text}"))
}
