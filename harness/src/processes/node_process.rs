//! A process a runtime started on a node, as the run keeps it: its pid on the node (what the
//! runtime's fault verbs name it by), its standard input and output when they were piped, and
//! the means to signal, wait for and kill it. A runtime whose nodes live elsewhere brings its
//! own kind; `LocalProcess` is the one for processes of this machine.

use std::io::{self, Read, Write};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

/// How long stopping waits for killed processes to go before it leaves them to the run's
/// teardown, which kills its cgroup again and names whatever still outlives it.
pub const REAP_WITHIN: Duration = Duration::from_secs(10);

pub trait NodeProcess: Send {
    /// The process's pid on its node.
    fn pid(&self) -> Pid;

    /// Its standard input, when piped (once).
    fn take_stdin(&mut self) -> Option<Box<dyn Write + Send>>;

    /// Its standard output, when piped (once).
    fn take_stdout(&mut self) -> Option<Box<dyn Read + Send>>;

    /// Sends `signal` to the process alone (not its group).
    fn signal(&self, signal: Signal) -> io::Result<()>;

    /// Kills the process alone at once (SIGKILL); its descendants are the runtime's `kill`.
    fn kill(&mut self) -> io::Result<()>;

    /// How it exited, if it has (reaping it then).
    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>>;

    /// Waits until it exits and reaps it.
    fn wait(&mut self) -> io::Result<ExitStatus>;

    /// Waits up to `bound` for it to exit, reaping it; `None` if it is still there. After
    /// SIGKILL a process ends at once, unless the kernel holds it (a frozen cgroup, an
    /// uninterruptible wait): the harness must not hang on it, and the run's teardown names it.
    fn wait_within(&mut self, bound: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A process of this machine: a child of the controller.
pub struct LocalProcess(pub Child);

impl NodeProcess for LocalProcess {
    fn pid(&self) -> Pid {
        Pid::from_raw(self.0.id() as i32)
    }

    fn take_stdin(&mut self) -> Option<Box<dyn Write + Send>> {
        Some(Box::new(self.0.stdin.take()?))
    }

    fn take_stdout(&mut self) -> Option<Box<dyn Read + Send>> {
        Some(Box::new(self.0.stdout.take()?))
    }

    fn signal(&self, signal: Signal) -> io::Result<()> {
        nix::sys::signal::kill(self.pid(), signal).map_err(io::Error::from)
    }

    fn kill(&mut self) -> io::Result<()> {
        self.0.kill()
    }

    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.0.try_wait()
    }

    fn wait(&mut self) -> io::Result<ExitStatus> {
        self.0.wait()
    }
}
