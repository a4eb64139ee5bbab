//! `delay-holder-write`: once a holder has read the resource, hold its traffic to the resource
//! for --delay (through the userspace proxy on that link). Its write lands late: after its own
//! timeout, after the next holder has written. A fencing token turns that late write into a
//! rejection; without one the resource accepts it.

use anyhow::Result;
use serde_json::json;

use super::{Context, Fault, Holder, Nemesis, Trigger};
use crate::schedule::Window;

pub struct DelayHolderWrite;

struct Delayed {
    id: u64,
    slot: String,
    target: String,
    chunks_before: u64,
}

impl Nemesis for DelayHolderWrite {
    fn trigger(&self) -> Trigger {
        Trigger::Read
    }

    fn begin(
        &mut self,
        _window: &Window,
        holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let Some(holder) = holder else {
            return Ok(None);
        };
        let Some(slot) = ctx.cluster.slot_of(holder.process) else {
            return Ok(None);
        };
        let Some(link) = ctx.cluster.resource_links.get(&slot) else {
            return Ok(None);
        };
        let chunks_before = link.delayed_chunks();
        link.set_delay(ctx.config.delay);
        let target = format!("client {}", holder.process);
        let id = ctx.started(
            "delay",
            std::slice::from_ref(&target),
            json!({
                "link": "resource",
                "delay_ms": ctx.config.delay.as_millis() as u64,
                "trigger": format!("read by the holder of acquisition {}", holder.acquisition),
            }),
        )?;
        Ok(Some(Box::new(Delayed {
            id,
            slot,
            target,
            chunks_before,
        })))
    }
}

impl Fault for Delayed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let held = match ctx.cluster.resource_links.get(&self.slot) {
            Some(link) => {
                link.set_delay(std::time::Duration::ZERO);
                link.delayed_chunks() - self.chunks_before
            }
            None => 0,
        };
        ctx.stopped(
            self.id,
            "delay",
            std::slice::from_ref(&self.target),
            json!({ "delayed_chunks": held, "effective": held > 0 }),
        )
    }
}
