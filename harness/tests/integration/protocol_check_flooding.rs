//! `lockpick protocol-check` against a program that floods its outputs (one endless line, or
//! lines between requests): refused at the line bound, in bounded memory and output, with
//! nothing left behind.
//!
//! Needs Debian's redis-server and python3.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::common::lockpick;
use crate::protocol_check::{prefix_in, Checked};

/// The peak resident memory (`VmHWM`) of `pid` so far; 0 once it is gone.
fn peak_memory_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A check of `program` (a real process), watched as it runs: what it printed (the first MiB
/// of each output, and their sizes) and the highest peak memory seen of lockpick.
struct Watched {
    checked: Checked,
    stdout_bytes: usize,
    stderr_bytes: usize,
    peak_kib: u64,
}

fn watch_check(program: &[&str]) -> Watched {
    let mut child = lockpick()
        .args(["protocol-check", "--"])
        .args(program)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Both outputs are read as they come and counted; only their starts are kept.
    let count = |mut stream: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let (mut kept, mut total, mut buffer) = (Vec::new(), 0usize, vec![0u8; 65536]);
            while let Ok(n @ 1..) = stream.read(&mut buffer) {
                total += n;
                if kept.len() < 1 << 20 {
                    kept.extend_from_slice(&buffer[..n]);
                }
            }
            (String::from_utf8_lossy(&kept).into_owned(), total)
        })
    };
    let stdout = count(Box::new(child.stdout.take().unwrap()));
    let stderr = count(Box::new(child.stderr.take().unwrap()));
    let started = std::time::Instant::now();
    let mut peak_kib = 0;
    while child.try_wait().unwrap().is_none() {
        peak_kib = peak_kib.max(peak_memory_kib(pid));
        if started.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(180),
        "the check did not end within 180 s"
    );
    let (stdout, stdout_bytes) = stdout.join().unwrap();
    let (stderr, stderr_bytes) = stderr.join().unwrap();
    Watched {
        checked: Checked {
            code: status.code(),
            prefix: prefix_in(&stderr),
            stdout,
            stderr,
        },
        stdout_bytes,
        stderr_bytes,
        peak_kib,
    }
}

/// A program that floods its stdout and its stderr fails the check, and lockpick's memory and
/// output stay bounded. (Before the bounds, lockpick peaked at 792 MB and copied 3.4 GB of the
/// program's stderr in 4 s.)
fn flooding_is_refused_in_bounded_memory_and_output(how: &[&str]) -> Checked {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/flood_outputs.py");
    let program = program.to_str().unwrap();
    let watched = watch_check(&[&["/usr/bin/python3", program], how].concat());
    let checked = watched.checked;
    assert_eq!(checked.code, Some(1), "{}", checked.stdout);
    assert!(
        checked.line("acquire").trim_start().starts_with("fail"),
        "{}",
        checked.stdout
    );
    let (out, err) = (watched.stdout_bytes, watched.stderr_bytes);
    assert!(out < 64 * 1024, "{out} bytes on stdout");
    assert!(err < 1 << 20, "{err} bytes on stderr");
    let cut = checked.stderr.contains("stderr cut here");
    assert!(cut, "{}", &checked.stderr[..2000]);
    let peak = watched.peak_kib;
    assert!(peak < 100 * 1024, "lockpick peaked at {peak} KiB");
    checked.left_nothing();
    checked
}

#[test]
fn a_program_flooding_one_endless_line_fails_at_the_line_bound_in_bounded_memory() {
    let checked = flooding_is_refused_in_bounded_memory_and_output(&[]);
    let acquire = checked.line("acquire");
    assert!(acquire.contains("a line longer than 64 KiB"), "{acquire}");
}

#[test]
fn a_program_flooding_lines_between_requests_fails_in_bounded_memory() {
    flooding_is_refused_in_bounded_memory_and_output(&["lines"]);
}
