//! Every thread of a process held still under ptrace, for as long as a [`Stopped`] lives: seized
//! and interrupted (no signal sent, so the program sees nothing), listed again until no new
//! thread appears (a thread not yet stopped may have started one). Dropping it detaches them
//! all, handing back any signal that arrived while they were held.
//!
//! ptrace binds each tracee to the tracing thread: everything here must run on the thread that
//! made the `Stopped`, and nothing else in the process may wait on the tracees.

use std::collections::HashSet;
use std::ops::Range;

use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::vdso::Memory;
use crate::bad_input::bad;

/// How many instructions a thread may take to leave a range before we give up on it: a vDSO
/// clock read is a few dozen, even when it retries.
const MAX_STEPS: u32 = 100_000;

struct Thread {
    tid: Pid,
    /// A signal that arrived while the thread was held, delivered when it is let go.
    pending: Option<Signal>,
}

pub struct Stopped {
    threads: Vec<Thread>,
}

/// What a wait on a held thread saw.
enum Seen {
    /// Stopped by our interrupt or in a group stop.
    Held,
    /// Stopped delivering a signal (SIGTRAP after a single step).
    Signal(Signal),
    Gone,
}

fn wait(tid: Pid) -> Result<Seen> {
    loop {
        match waitpid(tid, Some(WaitPidFlag::__WALL)) {
            Ok(WaitStatus::PtraceEvent(..)) => return Ok(Seen::Held),
            Ok(WaitStatus::Stopped(_, signal)) => return Ok(Seen::Signal(signal)),
            Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) => return Ok(Seen::Gone),
            Ok(_) => continue,
            Err(Errno::EINTR) => continue,
            Err(Errno::ECHILD) => return Ok(Seen::Gone),
            Err(e) => return Err(e).with_context(|| format!("cannot wait for thread {tid}")),
        }
    }
}

fn tasks(pid: i32) -> Result<Vec<Pid>> {
    let dir = format!("/proc/{pid}/task");
    let mut tids: Vec<Pid> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {dir}"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .map(Pid::from_raw)
        .collect();
    tids.sort();
    Ok(tids)
}

fn refused(pid: i32, errno: Errno) -> anyhow::Error {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").unwrap_or_default();
    let hint = match scope.trim() {
        "3" => " (kernel.yama.ptrace_scope is 3: ptrace is off until reboot)",
        "2" => " (kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may attach)",
        _ => "",
    };
    bad(format!(
        "the kernel refused to ptrace process {pid}: {errno}{hint}; its clocks cannot be moved"
    ))
}

impl Stopped {
    /// Seizes and stops every thread of `pid`.
    pub fn all(pid: i32) -> Result<Stopped> {
        let mut stopped = Stopped {
            threads: Vec::new(),
        };
        let mut seen: HashSet<Pid> = HashSet::new();
        loop {
            let fresh: Vec<Pid> = tasks(pid)?
                .into_iter()
                .filter(|t| !seen.contains(t))
                .collect();
            if fresh.is_empty() {
                break;
            }
            for tid in fresh {
                seen.insert(tid);
                match ptrace::seize(tid, ptrace::Options::empty()) {
                    Ok(()) => {}
                    Err(Errno::ESRCH) => continue, // the thread ended meanwhile
                    Err(e @ (Errno::EPERM | Errno::EACCES)) => return Err(refused(pid, e)),
                    Err(e) => return Err(e).with_context(|| format!("cannot seize thread {tid}")),
                }
                match ptrace::interrupt(tid) {
                    Ok(()) => {}
                    Err(Errno::ESRCH) => continue, // ended between the two calls
                    Err(e) => return Err(e).with_context(|| format!("cannot stop thread {tid}")),
                }
                let pending = match wait(tid)? {
                    Seen::Held => None,
                    Seen::Signal(signal) => Some(signal),
                    Seen::Gone => continue,
                };
                stopped.threads.push(Thread { tid, pending });
            }
        }
        if stopped.threads.is_empty() {
            bail!("process {pid} has no thread left to stop");
        }
        Ok(stopped)
    }

    /// One instruction of `tid`; false when the thread is gone.
    fn step(&mut self, index: usize) -> Result<bool> {
        let tid = self.threads[index].tid;
        loop {
            ptrace::step(tid, None).with_context(|| format!("cannot single-step {tid}"))?;
            match wait(tid)? {
                Seen::Signal(Signal::SIGTRAP) => return Ok(true),
                // Another signal came first: keep it for later, and step again.
                Seen::Signal(signal) => self.threads[index].pending = Some(signal),
                Seen::Held => {}
                Seen::Gone => return Ok(false),
            }
        }
    }

    /// Single-steps every thread whose instruction pointer lies in one of `ranges` until it
    /// has left them all, so no thread is caught half-way through bytes about to change.
    pub fn step_out_of(&mut self, ranges: &[Range<u64>]) -> Result<()> {
        let mut index = 0;
        while index < self.threads.len() {
            let tid = self.threads[index].tid;
            let mut steps = 0;
            loop {
                let rip = ptrace::getregs(tid)
                    .with_context(|| format!("cannot read the registers of {tid}"))?
                    .rip;
                if !ranges.iter().any(|r| r.contains(&rip)) {
                    break;
                }
                steps += 1;
                if steps > MAX_STEPS {
                    bail!("thread {tid} did not leave the vDSO within {MAX_STEPS} instructions");
                }
                if !self.step(index)? {
                    break;
                }
            }
            index += 1;
        }
        Ok(())
    }

    /// Makes system call `number` with `args` in the first held thread, by placing a
    /// `syscall` instruction at `at` (which no thread is executing) and single-stepping it.
    /// The thread's registers and the two bytes are put back; the call's result is returned.
    pub fn syscall(
        &mut self,
        memory: &Memory,
        at: u64,
        number: u64,
        args: [u64; 6],
    ) -> Result<u64> {
        let tid = self.threads[0].tid;
        let saved =
            ptrace::getregs(tid).with_context(|| format!("cannot read {tid}'s registers"))?;
        let saved_bytes = memory.read(at, 2)?;
        memory.write(at, &[0x0f, 0x05])?;
        let mut regs = saved;
        regs.rip = at;
        regs.rax = number;
        [regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9] = args;
        // Not in a system call: if the thread was stopped inside one, the kernel must not
        // restart it at our instruction (it will, from `saved`, once that is put back).
        regs.orig_rax = u64::MAX;
        let outcome = ptrace::setregs(tid, regs)
            .context("cannot set registers")
            .and_then(|()| self.step(0))
            .and_then(|alive| {
                anyhow::ensure!(alive, "thread {tid} ended during an injected system call");
                Ok(ptrace::getregs(tid)?)
            });
        // Both put back whatever happened, before any error is passed on: the thread must not
        // be let go with our registers.
        let bytes_back = memory.write(at, &saved_bytes);
        let registers_back = ptrace::setregs(tid, saved)
            .with_context(|| format!("cannot restore {tid}'s registers"));
        let after = outcome?;
        bytes_back?;
        registers_back?;
        anyhow::ensure!(
            after.rip == at + 2,
            "the injected system call {number} did not run (stopped at {:#x})",
            after.rip
        );
        Ok(after.rax)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        for thread in &self.threads {
            let _ = ptrace::detach(thread.tid, thread.pending);
        }
    }
}
