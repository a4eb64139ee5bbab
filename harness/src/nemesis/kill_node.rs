//! `kill-node`: SIGKILL a lock-service server, and restart it with the same command when the
//! fault ends. A Redis server without persistence comes back empty: every lock it held is gone,
//! and a waiting client takes one its holder still believes in.

use anyhow::Result;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::window::{Shape, Targets, Window};
use super::{Context, Fault, Holder, Nemesis};

pub struct KillNode;

struct Killed {
    id: u64,
    node: String,
}

impl Nemesis for KillNode {
    fn name(&self) -> &'static str {
        "kill-node"
    }

    fn about(&self) -> &'static str {
        "Kill a random server (SIGKILL), restart it after the fault duration."
    }

    fn targets(&self) -> Targets {
        Targets::Servers
    }

    fn aim(&self, window: &mut Window, shape: &Shape, rng: &mut ChaCha8Rng) {
        window.targets = shape.servers.choose(rng).cloned().into_iter().collect();
    }

    fn begin(
        &self,
        window: &Window,
        _holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let Some(node) = window.targets.first() else {
            return Ok(None);
        };
        let Some(killed) = ctx.cluster.kill_server(node) else {
            return Ok(None);
        };
        let id = ctx.started(
            "kill",
            std::slice::from_ref(node),
            json!({
                "pid": killed.pid,
                "effective": killed.gone,
                "downtime_ms": window.duration_ms
            }),
        )?;
        Ok(Some(Box::new(Killed {
            id,
            node: node.clone(),
        })))
    }
}

impl Fault for Killed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let restarted = ctx.cluster.restart_server(&self.node)?;
        let mut details = json!({ "restarted_pid": restarted.pid });
        if restarted.frozen {
            // The restart inherits the pause still open on its node: the evidence says so.
            details["frozen"] = json!("restarted frozen: a pause of this server is still open");
        }
        ctx.stopped(self.id, "kill", std::slice::from_ref(&self.node), details)
    }
}
