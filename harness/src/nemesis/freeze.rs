//! Freezing a process with SIGSTOP and thawing it with SIGCONT, checked through /proc: the
//! history says a pause took effect only if the kernel reported the process stopped.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use super::{Context, Fault};

/// Stops `pid` and waits (briefly) until the kernel reports it stopped. Returns whether it did.
pub fn freeze(pid: Pid) -> Result<bool> {
    kill(pid, Signal::SIGSTOP).with_context(|| format!("cannot SIGSTOP {pid}"))?;
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
    match kill(pid, Signal::SIGCONT) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot SIGCONT {pid}")),
    }
}

/// The process state letter from /proc/<pid>/stat (`T` when stopped).
pub fn state(pid: Pid) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the state follows the last ')'.
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// A frozen process.
pub struct Pause {
    id: u64,
    pid: Pid,
    target: String,
}

impl Pause {
    /// Freezes `pid` and records the start, with `details` about why.
    pub fn begin(ctx: &mut Context, pid: Pid, target: String, mut details: Value) -> Result<Pause> {
        let effective = freeze(pid)?;
        details["effective"] = effective.into();
        let id = ctx.started("pause", std::slice::from_ref(&target), details)?;
        Ok(Pause { id, pid, target })
    }
}

impl Fault for Pause {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        thaw(self.pid)?;
        ctx.stopped(
            self.id,
            "pause",
            std::slice::from_ref(&self.target),
            json!({}),
        )
    }
}
