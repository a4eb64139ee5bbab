//! `pause-holder`: the failure at the heart of the problem. Right after a client's acquire
//! succeeds, freeze that client (SIGSTOP) for the fault's duration, longer than the lease, then
//! resume it. While it sleeps its lease expires and another client takes the lock; when it wakes
//! it still believes it holds it.

use anyhow::Result;
use lockpick_checkers::fault::{FaultKind, Target};
use serde_json::json;

use super::aim::{Aim, Begun, OnHolder};
use super::window::Window;
use super::{Context, Fault, Holder, Nemesis, Trigger};

pub struct PauseHolder;

impl Nemesis for PauseHolder {
    fn name(&self) -> &'static str {
        "pause-holder"
    }

    fn about(&self) -> &'static str {
        "Lock-aware: right after a client acquires, freeze it (SIGSTOP), then resume it."
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Holder(Trigger::Acquired, self)
    }
}

impl OnHolder for PauseHolder {
    fn begin(&self, holder: &Holder, window: &Window, ctx: &mut Context) -> Begun {
        let Some(effective) = ctx.cluster.freeze_client(holder.process)? else {
            return Ok(None);
        };
        let mut details = holder.trigger();
        details["duration_ms"] = json!(window.duration_ms);
        details["effective"] = json!(effective);
        let target = Target::Client(holder.process);
        let id = ctx.started(FaultKind::Pause, std::slice::from_ref(&target), details)?;
        Ok(Some(Box::new(ClientPause {
            id,
            process: holder.process,
            target,
        })))
    }
}

/// A frozen client process.
pub struct ClientPause {
    id: u64,
    process: u64,
    target: Target,
}

impl Fault for ClientPause {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        ctx.cluster.thaw_client(self.process)?;
        ctx.stopped(
            self.id,
            FaultKind::Pause,
            std::slice::from_ref(&self.target),
            json!({}),
        )
    }
}
