//! Lock services: the real servers a lock runs on, started by the harness on its own nodes.

pub mod redis;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::children::Children;
use crate::runtime::{Node, Runtime};

/// A program a service needs, and the Debian package that provides it.
pub struct Requirement {
    pub program: &'static str,
    pub package: &'static str,
}

/// A lock service: how many nodes it needs, how to start its servers there and when they are
/// ready. Contract: `start` returns only once every server answers (or fails with the server's
/// log in the error); every process it starts is registered in `children`, so the run can pause
/// and stop it.
pub trait LockService {
    /// Programs that must be installed before a run starts.
    fn requirements(&self) -> Vec<Requirement>;

    /// How many server nodes the service runs on.
    fn node_count(&self) -> usize;

    /// Starts one server per node and waits until all are ready.
    fn start(
        &mut self,
        runtime: &dyn Runtime,
        nodes: &[Node],
        logs: &Path,
        children: &mut Children,
    ) -> Result<()>;

    /// The addresses clients connect to, one per node.
    fn endpoints(&self) -> Vec<String>;

    /// Which fencing token the lock gives its holders, in words ("none" when it gives none).
    fn token(&self) -> &'static str;
}

/// Finds `program` on the PATH.
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Polls `ready` until it succeeds or `timeout` passes; then fails with the last error and the
/// end of the server's log.
pub fn wait_until_ready(
    what: &str,
    log: &Path,
    timeout: Duration,
    mut ready: impl FnMut() -> Result<()>,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        match ready() {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() >= deadline => {
                bail!(
                    "{what} was not ready after {:?}: {e:#}\nlast lines of {}:\n{}",
                    timeout,
                    log.display(),
                    log_tail(log, 15)
                )
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn log_tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_else(|e| format!("(unreadable: {e})"));
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
