//! `kill-node`: SIGKILL a lock-service server, and restart it with the same command when the
//! fault ends. A Redis server without persistence comes back empty: every lock it held is gone,
//! and a waiting client takes one its holder still believes in. Redlock's own remedies close
//! that: a restart delayed past the TTL (`--restart-after`), or an append-only file fsynced
//! before every reply (`--persistence aof-always`).
//!
//! The kill and the restart are [`kill_server`], shared by every nemesis that kills servers
//! (each aims its own way, and says so with `kills_servers`).

use std::time::Duration;

use anyhow::Result;
use lockpick_checkers::fault::{FaultKind, Target};
use serde_json::{json, Value};

use super::aim::{Aim, Begun, OnServer};
use super::window::Window;
use super::{Context, Fault, Nemesis};

pub struct KillNode;

struct Killed {
    id: u64,
    node: String,
    /// When the server was killed (ns since the run began): its measured downtime ends at the
    /// restart.
    killed_at: u64,
}

impl Nemesis for KillNode {
    fn name(&self) -> &'static str {
        "kill-node"
    }

    fn about(&self) -> &'static str {
        "Kill a random server (SIGKILL), restart it after --restart-after (else the fault duration)."
    }

    /// The classic failure: a server without persistence restarts, empty, while the lease it
    /// granted is still live, and grants the lock again. So it restarts within the lease, and
    /// the holder works long enough to still be holding then.
    fn default_duration(&self, ttl: Duration) -> Duration {
        ttl / 4
    }

    fn default_work(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl / 2)
    }

    fn kills_servers(&self) -> bool {
        true
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Server(self)
    }
}

impl OnServer for KillNode {
    fn begin(&self, node: &str, window: &Window, ctx: &mut Context) -> Begun {
        kill_server(node, window, json!({}), ctx)
    }
}

/// SIGKILLs the server on `node` and records the kill, with `details` (what aimed it there)
/// beside its own evidence: the pid, whether it is gone, and `downtime_ms`, how long the
/// window keeps it down (`--restart-after`, else the fault's duration). The fault returned
/// restarts it with the same command when the window ends, and records the new pid and the
/// downtime measured. `None` when the node runs no server now.
pub(super) fn kill_server(
    node: &str,
    window: &Window,
    mut details: Value,
    ctx: &mut Context,
) -> Begun {
    let Some(killed) = ctx.cluster.kill_server(node) else {
        return Ok(None);
    };
    details["pid"] = json!(killed.pid);
    details["effective"] = json!(killed.gone);
    details["downtime_ms"] = json!(window.duration_ms);
    let id = ctx.started(FaultKind::Kill, &[Target::Node(node.to_string())], details)?;
    Ok(Some(Box::new(Killed {
        id,
        node: node.to_string(),
        killed_at: ctx.now,
    })))
}

impl Fault for Killed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let restarted = ctx.cluster.restart_server(&self.node)?;
        // A restart inherits a pause still open on its node; the kernel's word on the new
        // process is the evidence.
        let mut details = json!({
            "restarted_pid": restarted.pid,
            "frozen": restarted.frozen,
            "down_ms": ctx.now.saturating_sub(self.killed_at) / 1_000_000,
        });
        if let Some(clock) = &restarted.clock {
            // The shifts still open on the node, given to the new process.
            details["clock_offset_ms"] = json!(clock.expected_ms);
            if let Some(failure) = &clock.failure {
                details["clock_error"] = json!(failure);
            }
        }
        if let Some(state) = restarted.state {
            details["proc_state"] = json!(state.to_string());
        }
        let target = Target::Node(self.node);
        ctx.stopped(self.id, FaultKind::Kill, &[target], details)
    }
}
