//! `pause-node`: freeze a lock-service server (SIGSTOP), then resume it. A frozen server still
//! accepts TCP connections (the kernel's backlog) but answers nothing, so clients see timeouts:
//! unknown outcomes.

use anyhow::Result;
use serde_json::json;

use super::freeze::Pause;
use super::{Context, Fault, Holder, Nemesis};
use crate::schedule::Window;

pub struct PauseNode;

impl Nemesis for PauseNode {
    fn begin(
        &mut self,
        window: &Window,
        _holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let Some(node) = window.targets.first() else {
            return Ok(None);
        };
        let Some(pid) = ctx.cluster.server_pid(node) else {
            return Ok(None);
        };
        let details = json!({ "duration_ms": window.duration_ms });
        Ok(Some(Box::new(Pause::begin(
            ctx,
            pid,
            node.clone(),
            details,
        )?)))
    }
}
