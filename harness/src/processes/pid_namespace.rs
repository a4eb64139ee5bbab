//! The run's PID namespace: every process the harness's own programs start (the clients, the
//! client programs of an `exec:` lock and whatever those start, the resource) lives in it. No
//! process can leave a PID namespace, whatever it does (a double fork, `setsid`, writing itself
//! into another cgroup, joining another network namespace), and when the namespace's init
//! dies, the kernel kills every process in it. The init is ours: a copy of the controller,
//! forked into the namespace, that only reaps and dies with the controller (its parent-death
//! signal), so a killed controller takes the namespace with it. The user's program is never
//! PID 1 (which ignores signals it has no handler for): it is an ordinary member, and the
//! harness addresses it by its host pid as before.
//!
//! The servers stay outside: libfaketime names its shared-memory files by the pid the server
//! sees, which the harness removes by host pid. The run's cgroup and network namespaces hold
//! them.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sched::{setns, unshare, CloneFlags};
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::{fork, ForkResult, Pid};

use crate::processes::freezer;

pub struct RunPidNamespace {
    /// The namespace, for the spawning thread to enter while it forks a process into it.
    namespace: File,
    /// Its inode: a process is in it when its `/proc/<pid>/ns/pid` names it.
    inode: u64,
    /// The spawning thread's own PID namespace, to go back to after each fork.
    own: File,
    /// The namespace's init (PID 1 inside), by its host pid.
    init: Pid,
    /// The init is killed and reaped (or given up on): nothing more to do on drop.
    ended: bool,
}

impl RunPidNamespace {
    /// Makes the namespace and its init, which enters the run's cgroup (`cgroup`, its
    /// `cgroup.procs`) first, so that `clean` reaches it there too. Call it from the thread
    /// that will spawn the run's processes: the init dies with that thread.
    pub fn create(cgroup: Option<std::os::fd::RawFd>) -> Result<RunPidNamespace> {
        let own = File::open("/proc/thread-self/ns/pid").context("cannot open my PID namespace")?;
        unshare(CloneFlags::CLONE_NEWPID).context("cannot make a PID namespace")?;
        let made = Self::start_init(cgroup);
        // Back in our own namespace whatever happened: this thread forks into it otherwise.
        setns(own.as_fd(), CloneFlags::CLONE_NEWPID).context("cannot leave the PID namespace")?;
        let (namespace, init) = made?;
        let inode = namespace.metadata()?.ino();
        Ok(RunPidNamespace {
            namespace,
            inode,
            own,
            init,
            ended: false,
        })
    }

    /// Forks the init into the namespace this thread's next child enters, and opens the
    /// namespace (through the init, which holds it until the namespace ends).
    fn start_init(cgroup: Option<std::os::fd::RawFd>) -> Result<(File, Pid)> {
        // SAFETY: the child only makes system calls that need no lock and allocate nothing
        // (write, prctl, setpgid, sigprocmask, waitpid, nanosleep) and never returns.
        match unsafe { fork() }.context("cannot start the PID namespace's init")? {
            ForkResult::Child => init(cgroup),
            ForkResult::Parent { child } => {
                let namespace = File::open(format!("/proc/{child}/ns/pid"));
                match namespace {
                    Ok(namespace) => Ok((namespace, child)),
                    Err(e) => {
                        let _ = kill(child, Signal::SIGKILL);
                        let _ = waitpid(child, None);
                        Err(e).context("cannot open the run's PID namespace")
                    }
                }
            }
        }
    }

    /// Runs `spawn` (which forks once, as `Command::spawn` does) with its child in the
    /// namespace.
    pub fn spawn_inside<T>(&self, spawn: impl FnOnce() -> Result<T>) -> Result<T> {
        setns(self.namespace.as_fd(), CloneFlags::CLONE_NEWPID)
            .context("cannot enter the run's PID namespace")?;
        let spawned = spawn();
        // A thread whose children go into another namespace cannot start threads: go back.
        setns(self.own.as_fd(), CloneFlags::CLONE_NEWPID)
            .context("cannot leave the run's PID namespace")?;
        spawned
    }

    /// The processes in the namespace now, but the init, by host pid (zombies have ended).
    pub fn members(&self) -> Vec<Pid> {
        let name = format!("pid:[{}]", self.inode);
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .map(Pid::from_raw)
            .filter(|&pid| pid != self.init && !freezer::is_gone(pid))
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/ns/pid"))
                    .is_ok_and(|link| link.as_os_str() == name.as_str())
            })
            .collect()
    }

    /// Kills every process in the namespace (by killing its init, whose end the kernel makes
    /// theirs) and waits until none is left, up to `deadline`; an error names those alive then.
    pub fn end(&mut self, deadline: Instant) -> Result<()> {
        self.ended = true;
        let _ = kill(self.init, Signal::SIGKILL);
        loop {
            let left = self.members();
            if left.is_empty() {
                // The kernel hands the init back once every member is reaped: a client not
                // reaped yet holds it, dead, a little longer.
                let _ = waitpid(self.init, Some(WaitPidFlag::WNOHANG));
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "processes of the run still alive after SIGKILL, in its PID namespace: {}",
                    describe(&left).join(", ")
                );
            }
            for &pid in &left {
                let _ = kill(pid, Signal::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for RunPidNamespace {
    fn drop(&mut self) {
        if !self.ended {
            if let Err(e) = self.end(Instant::now() + crate::processes::cgroup::TEARDOWN_WAIT) {
                crate::tell!("lockpick: teardown: {e:#}");
            }
        }
    }
}

/// Processes as `pid (name, state X)`.
pub fn describe(pids: &[Pid]) -> Vec<String> {
    pids.iter()
        .map(|&pid| {
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let state = freezer::state(pid).unwrap_or('?');
            format!("{pid} ({}, state {state})", name.trim())
        })
        .collect()
}

/// The init: dies with the thread that forked it, takes no signal but SIGKILL, and reaps
/// whatever the kernel hands it (orphans of the namespace) until then.
fn init(cgroup: Option<std::os::fd::RawFd>) -> ! {
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    if let Some(procs) = cgroup {
        let _ = crate::processes::cgroup::enter(procs);
    }
    // It never execs, so it holds a copy of every descriptor the controller had at the fork,
    // close-on-exec or not: the pipes of an `ip` another cell's thread was running then would
    // stay open for this whole run, and that thread would wait for their end until this run
    // ended (a comparison's cells made their nodes 12 s late). It needs none of them.
    // SAFETY: one system call, no lock, no allocation.
    unsafe {
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    }
    // Its own process group: Ctrl-C at the terminal is the controller's to handle.
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    let _ = nix::sys::prctl::set_name(c"lockpick-init");
    let _ = SigSet::all().thread_block();
    loop {
        if let Err(nix::errno::Errno::ECHILD) = waitpid(None::<Pid>, None) {
            let pause = nix::sys::time::TimeSpec::from_duration(Duration::from_millis(100));
            let _ = nix::time::clock_nanosleep(
                nix::time::ClockId::CLOCK_MONOTONIC,
                nix::time::ClockNanosleepFlags::empty(),
                &pause,
            );
        }
    }
}

#[cfg(test)]
#[path = "pid_namespace_tests.rs"]
mod tests;
