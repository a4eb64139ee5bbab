//! `pause-node`: freeze a random lock-service server (SIGSTOP) for the fault's duration, then
//! resume it. Pauses of one server stack with each other and with kills: a server restarted
//! while a pause is open comes back frozen, and only the last pause to end resumes it.

use anyhow::Result;
use lockpick_checkers::fault::{FaultKind, Target};
use serde_json::json;

use super::aim::{Aim, Begun, OnServer};
use super::window::Window;
use super::{Context, Fault, Nemesis};

pub struct PauseNode;

impl Nemesis for PauseNode {
    fn name(&self) -> &'static str {
        "pause-node"
    }

    fn about(&self) -> &'static str {
        "Freeze a random lock-service server (SIGSTOP), then resume it."
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Server(self)
    }
}

impl OnServer for PauseNode {
    fn begin(&self, node: &str, window: &Window, ctx: &mut Context) -> Begun {
        let details = match ctx.cluster.freeze_server(node)? {
            Some(effective) => json!({ "duration_ms": window.duration_ms, "effective": effective }),
            // Killed and not yet restarted: nothing runs to freeze now; the restart comes back
            // frozen while this pause is open (its record says so, with the kernel's word).
            None => json!({
                "duration_ms": window.duration_ms,
                "effective": false,
                "server_down": "killed; it restarts frozen while this pause is open",
            }),
        };
        let target = Target::Node(node.to_string());
        let id = ctx.started(FaultKind::Pause, &[target], details)?;
        Ok(Some(Box::new(ServerPause {
            id,
            node: node.to_string(),
        })))
    }
}

struct ServerPause {
    id: u64,
    node: String,
}

impl Fault for ServerPause {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let thawed = ctx.cluster.thaw_server(&self.node)?;
        let mut details = json!({ "resumed": thawed.resumed });
        if let Some(state) = thawed.state {
            details["proc_state"] = json!(state.to_string());
        }
        let target = Target::Node(self.node);
        ctx.stopped(self.id, FaultKind::Pause, &[target], details)
    }
}
