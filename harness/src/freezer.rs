//! Freezing a process with SIGSTOP and thawing it with SIGCONT, checked through /proc: the
//! history says a pause took effect only if the kernel reported the process stopped.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Stops `pid` and waits (briefly) until the kernel reports it stopped. Returns whether it did.
pub fn freeze(pid: Pid) -> Result<bool> {
    signal_group(pid, Signal::SIGSTOP).with_context(|| format!("cannot SIGSTOP {pid}"))?;
    let deadline = Instant::now() + Duration::from_millis(200);
    while Instant::now() < deadline {
        if state(pid) == Some('T') {
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(false)
}

/// Resumes `pid`. A process that has already exited needs no resuming.
pub fn thaw(pid: Pid) -> Result<()> {
    match signal_group(pid, Signal::SIGCONT) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot SIGCONT {pid}")),
    }
}

/// Signals `pid`'s whole process group when it leads one, else `pid` alone. Every process
/// lockpick starts leads its own group, which holds what it starts in turn (a client program
/// that `--lock exec:...` runs): a pause must freeze those, with their background threads, too.
fn signal_group(pid: Pid, signal: Signal) -> nix::Result<()> {
    if nix::unistd::getpgid(Some(pid)) == Ok(pid) {
        nix::sys::signal::killpg(pid, signal)
    } else {
        kill(pid, signal)
    }
}

/// The process state letter from /proc/<pid>/stat (`T` when stopped).
pub fn state(pid: Pid) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the state follows the last ')'.
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// Whether `pid` is gone (no /proc entry, or a zombie waiting to be reaped).
pub fn is_gone(pid: Pid) -> bool {
    matches!(state(pid), None | Some('Z') | Some('X'))
}
