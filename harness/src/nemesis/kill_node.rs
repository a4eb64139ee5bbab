//! `kill-node`: SIGKILL a lock-service server, and restart it with the same command when the
//! fault ends. A Redis server without persistence comes back empty: every lock it held is gone,
//! and a waiting client takes one its holder still believes in.

use anyhow::Result;
use serde_json::json;

use super::{Context, Fault, Holder, Nemesis};
use crate::schedule::Window;

pub struct KillNode;

struct Killed {
    id: u64,
    node: String,
}

impl Nemesis for KillNode {
    fn begin(
        &mut self,
        window: &Window,
        _holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let Some(node) = window.targets.first() else {
            return Ok(None);
        };
        let Some(pid) = ctx.cluster.kill_server(node) else {
            return Ok(None);
        };
        let gone = !std::path::Path::new(&format!("/proc/{pid}")).exists();
        let id = ctx.started(
            "kill",
            std::slice::from_ref(node),
            json!({ "pid": pid.as_raw(), "effective": gone, "downtime_ms": window.duration_ms }),
        )?;
        Ok(Some(Box::new(Killed {
            id,
            node: node.clone(),
        })))
    }
}

impl Fault for Killed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let pid = ctx.cluster.restart_server(&self.node)?;
        ctx.stopped(
            self.id,
            "kill",
            std::slice::from_ref(&self.node),
            json!({ "restarted_pid": pid.as_raw() }),
        )
    }
}
