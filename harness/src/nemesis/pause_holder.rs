//! `pause-holder`: the failure at the heart of the problem. Right after a client's acquire
//! succeeds, freeze that client (SIGSTOP) for the fault's duration, longer than the lease, then
//! resume it. While it sleeps its lease expires and another client takes the lock; when it wakes
//! it still believes it holds it.

use anyhow::Result;
use serde_json::json;

use super::freeze::Pause;
use super::{Context, Fault, Holder, Nemesis, Trigger};
use crate::schedule::Window;

pub struct PauseHolder;

impl Nemesis for PauseHolder {
    fn trigger(&self) -> Trigger {
        Trigger::Acquired
    }

    fn begin(
        &mut self,
        window: &Window,
        holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let Some(holder) = holder else {
            return Ok(None);
        };
        let Some(pid) = ctx.cluster.client_pid(holder.process) else {
            return Ok(None);
        };
        let mut details = holder.trigger();
        details["duration_ms"] = json!(window.duration_ms);
        let target = format!("client {}", holder.process);
        Ok(Some(Box::new(Pause::begin(ctx, pid, target, details)?)))
    }
}
