//! Freezing a process with SIGSTOP and thawing it with SIGCONT, checked through /proc: the
//! history says a pause took effect only if the kernel reported the process stopped.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::node_process::NodeProcess;

/// Stops `pid` with its descendants and waits (briefly) until the kernel reports them all
/// stopped. Returns whether it did. `pid` stops first, so it starts no new child meanwhile.
pub fn freeze(pid: Pid) -> Result<bool> {
    signal_group(pid, Signal::SIGSTOP).with_context(|| format!("cannot SIGSTOP {pid}"))?;
    let tree = descendants(pid);
    for &child in &tree {
        // One that exited meanwhile needs no stopping.
        let _ = signal_group(child, Signal::SIGSTOP);
    }
    let deadline = Instant::now() + Duration::from_millis(200);
    while Instant::now() < deadline {
        let stopped = |p: Pid| matches!(state(p), Some('T') | None | Some('Z') | Some('X'));
        if state(pid) == Some('T') && tree.iter().all(|&p| stopped(p)) {
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(false)
}

/// Resumes `pid` and its descendants. A process that has already exited needs no resuming.
pub fn thaw(pid: Pid) -> Result<()> {
    for child in descendants(pid) {
        let _ = signal_group(child, Signal::SIGCONT);
    }
    match signal_group(pid, Signal::SIGCONT) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot SIGCONT {pid}")),
    }
}

/// Kills `child` with its descendants at once and reaps it; its pid. The descendants (a
/// server's workers may lead groups of their own) are stopped first so that none forks
/// meanwhile; resuming after SIGKILL changes nothing but lets the kernel finish them.
pub fn kill_tree(child: &mut dyn NodeProcess) -> Pid {
    let pid = child.pid();
    let _ = kill(pid, Signal::SIGSTOP);
    let tree = descendants(pid);
    let _ = child.kill();
    for descendant in tree {
        let _ = kill(descendant, Signal::SIGKILL);
    }
    let _ = kill(pid, Signal::SIGCONT);
    let _ = child.wait_within(super::node_process::REAP_WITHIN);
    pid
}

/// Every descendant of `pid` now (children, theirs, ...), from /proc: a server whose workers
/// lead process groups of their own (a database forking one backend per session) is not
/// reached by its group alone.
pub fn descendants(pid: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(Pid, Pid)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| Some((Pid::from_raw(p), parent(Pid::from_raw(p))?)))
        .collect();
    let mut found = vec![pid];
    let mut next = 0;
    while next < found.len() {
        let of = found[next];
        found.extend(parents.iter().filter(|(_, pp)| *pp == of).map(|(p, _)| *p));
        next += 1;
    }
    found.remove(0);
    found
}

/// The parent pid from /proc/<pid>/stat (the field after the state).
pub fn parent(pid: Pid) -> Option<Pid> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace()
        .nth(1)?
        .parse()
        .ok()
        .map(Pid::from_raw)
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
