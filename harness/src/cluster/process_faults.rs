//! The cluster's process verbs: freeze/thaw and kill a client, freeze/thaw, kill/restart a
//! server. The cluster keeps what makes faults on one process compose (how many pauses hold a
//! server, its launch for the restart); the runtime signals the process on its node and reads
//! back what the node's kernel says, which is the history's evidence.

use anyhow::{Context, Result};
use nix::unistd::Pid;

use super::{ClockEvidence, Cluster};
use crate::processes::children::Role;
use crate::runtime::Node;

/// A server just restarted.
pub struct Restarted {
    pub pid: i32,
    /// It came back frozen, because a pause of its node is still open.
    pub frozen: bool,
    /// The new process's state as the kernel reports it (`T` when stopped), read after the
    /// restart: evidence that the pause it inherited took hold.
    pub state: Option<char>,
    /// The clock shift the new process was given, when shifts are open on its node and its
    /// service's clock moves by a patched vDSO (a libfaketime server reads its file anew).
    pub clock: Option<ClockEvidence>,
}

/// A pause of a server just ended.
pub struct Thawed {
    /// Whether the server runs again (no other pause holds it).
    pub resumed: bool,
    /// The server process's state as the kernel reports it afterwards.
    pub state: Option<char>,
}

/// A server just killed.
pub struct KilledServer {
    pub pid: i32,
    /// Its process is gone.
    pub gone: bool,
}

impl Cluster {
    /// A client process's node and pid, while it runs.
    fn client(&self, process: u64) -> Option<(Node, Pid)> {
        let pid = self.children.pid(&Role::Client(process))?;
        let node = self.nodes.get(self.client_nodes.get(&process)?)?;
        Some((node.clone(), pid))
    }

    /// Freezes a client process; `None` if it is not running, else whether it was seen stopped.
    pub fn freeze_client(&mut self, process: u64) -> Result<Option<bool>> {
        match self.client(process) {
            Some((node, pid)) => self.runtime.freeze(&node, pid).map(Some),
            None => Ok(None),
        }
    }

    pub fn thaw_client(&mut self, process: u64) -> Result<()> {
        match self.client(process) {
            Some((node, pid)) => self.runtime.thaw(&node, pid),
            None => Ok(()),
        }
    }

    /// Kills a client process at once, `now` being read before the kill; `None` if it was not
    /// running, else whether it is gone.
    pub fn kill_client(&mut self, process: u64, now: u64) -> Option<bool> {
        let node = self.nodes.get(self.client_nodes.get(&process)?)?.clone();
        let mut spawned = self.children.take(&Role::Client(process))?;
        self.killed_clients.insert(process, now);
        Some(self.runtime.kill(&node, spawned.process.as_mut()))
    }

    /// When the harness killed this client, if it did (read before the kill).
    pub fn killed_at(&self, process: u64) -> Option<u64> {
        self.killed_clients.get(&process).copied()
    }

    /// Freezes a server. Pauses stack, and a pause of a server that is down (killed) holds it
    /// when it restarts: `None` then, else whether it is (now or already) seen stopped.
    pub fn freeze_server(&mut self, name: &str) -> Result<Option<bool>> {
        let count = self.frozen_servers.entry(name.to_string()).or_insert(0);
        *count += 1;
        let first = *count == 1;
        let node = self.node(name)?;
        match self.children.pid(&Role::Server(name.to_string())) {
            None => Ok(None),
            Some(pid) if first => self.runtime.freeze(node, pid).map(Some),
            Some(pid) => Ok(Some(self.runtime.process_state(node, pid) == Some('T'))),
        }
    }

    /// Ends one pause of a server; it resumes only when no other pause holds it.
    pub fn thaw_server(&mut self, name: &str) -> Result<Thawed> {
        let pid = self.children.pid(&Role::Server(name.to_string()));
        let count = self.frozen_servers.entry(name.to_string()).or_insert(0);
        *count = count.saturating_sub(1);
        let resumed = *count == 0;
        if resumed {
            self.frozen_servers.remove(name);
        }
        let node = self.node(name)?;
        let state = match pid {
            Some(pid) if resumed => {
                self.runtime.thaw(node, pid)?;
                self.runtime.resumed_state(node, pid)
            }
            Some(pid) => self.runtime.process_state(node, pid),
            None => None,
        };
        Ok(Thawed { resumed, state })
    }

    /// Kills a server at once; `None` if it was not running.
    pub fn kill_server(&mut self, name: &str) -> Option<KilledServer> {
        let node = self.nodes.get(name)?.clone();
        let mut spawned = self.children.take(&Role::Server(name.to_string()))?;
        let pid = spawned.pid();
        let gone = self.runtime.kill(&node, spawned.process.as_mut());
        // libfaketime leaves its shared memory behind when its process is killed.
        crate::runtime::faketime::forget(pid);
        self.forget_patch(name);
        Some(KilledServer {
            pid: pid.as_raw(),
            gone,
        })
    }

    /// Restarts a killed server with its original launch. A pause still open on its node holds
    /// the new process too.
    pub fn restart_server(&mut self, name: &str) -> Result<Restarted> {
        let launch = self
            .launches
            .get(name)
            .with_context(|| format!("no server {name}"))?;
        let process = launch.spawn(self.runtime.as_ref())?;
        let faked = launch
            .env
            .iter()
            .any(|(k, _)| k == "FAKETIME_TIMESTAMP_FILE");
        let pid = self.children.add(Role::Server(name.to_string()), process);
        if faked {
            crate::runtime::faketime::register(&self.scratch.path, pid)?;
        }
        let clock = self.reshift_restarted(name, pid.as_raw());
        let frozen = self.frozen_servers.get(name).is_some_and(|n| *n > 0);
        let node = self.node(name)?;
        if frozen {
            self.runtime.freeze(node, pid)?;
        }
        Ok(Restarted {
            pid: pid.as_raw(),
            frozen,
            state: self.runtime.process_state(node, pid),
            clock,
        })
    }
}
