//! Processes whose clocks move by a patched vDSO ([`crate::clock_shift`]): etcd's and
//! ZooKeeper's servers, and the programs of `exec:` clients, in the namespace runtime. A process
//! is patched when the first shift opens on it, its offset is then changed by a write into its
//! memory (no ptrace, no stop), and its vDSO is put back when the last shift on it ends, or at
//! teardown. Only the wall clocks move, as an
//! NTP step moves them; the monotonic clocks (which etcd's leases and ZooKeeper's sessions are
//! timed by) are left alone.
//!
//! ptrace binds a tracee to the thread that attached it, and a wait on the tracee from any
//! other thread of ours could take its stops. Both are kept safe by shape rather than by
//! locks: every ptrace request of a patch or a restore is made, and the tracee let go, within
//! that one call (`inject` and `restore` each hold the threads only while they run), on the
//! controller's thread, which owns the cluster and so its `Children`, the only code that waits
//! on servers (a client's program is its client process's child, never waited on here). No
//! tracee outlives a call, so nothing is left attached on an error or Ctrl-C;
//! a controller killed outright has its tracees detached by the kernel.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::clock_shift::{self, Clocks, Restoration, ShiftedProcess};

#[derive(Default)]
pub struct PatchedProcesses {
    by_node: BTreeMap<String, ShiftedProcess>,
}

impl PatchedProcesses {
    /// Sets the clock of `node`'s process `pid` (its server, or its client's program) to true
    /// time plus `offset_ms`, patching it first if it is not patched yet.
    pub fn set(&mut self, node: &str, pid: i32, offset_ms: i64) -> Result<()> {
        if self.by_node.get(node).is_some_and(|s| s.pid() != pid) {
            // A process since replaced: dropping it finds it gone.
            self.by_node.remove(node);
        }
        let shifted = match self.by_node.entry(node.to_string()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e
                .insert(clock_shift::inject(pid, Clocks::Wall).with_context(|| {
                    format!("cannot patch the clock of {node}'s process {pid}")
                })?),
        };
        shifted.set_offset(offset_ms * 1_000_000)
    }

    /// Puts back the vDSO of `node`'s process: no shift is open on it any more. An error says
    /// how it was left instead.
    pub fn restore(&mut self, node: &str) -> Result<()> {
        let Some(mut shifted) = self.by_node.remove(node) else {
            return Ok(());
        };
        match shifted.restore()? {
            Restoration::Restored | Restoration::Gone => Ok(()),
            Restoration::OffsetZeroed(why) => {
                anyhow::bail!(
                    "{node}'s process is back on true time, its vDSO still patched: {why}"
                )
            }
        }
    }

    /// Forgets `node`'s process, which was killed: there is nothing left to restore.
    pub fn forget(&mut self, node: &str) {
        if let Some(mut shifted) = self.by_node.remove(node) {
            let _ = shifted.restore();
        }
    }

    /// Restores every patched process (teardown); returns what could not be.
    pub fn restore_all(&mut self) -> Vec<String> {
        let nodes: Vec<String> = self.by_node.keys().cloned().collect();
        nodes
            .into_iter()
            .filter_map(|node| self.restore(&node).err().map(|e| format!("{e:#}")))
            .collect()
    }
}

/// Waits (up to 10 s) until process `pid` runs `program`: a server just spawned is a copy of
/// the controller until it execs, and patching that copy would move nothing.
pub fn wait_for_exec(pid: i32, program: &Path) -> Result<()> {
    let wanted = program
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", program.display()))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
            .with_context(|| format!("process {pid} is gone"))?;
        if exe == wanted {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "process {pid} did not start {} within 10 s",
            program.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
