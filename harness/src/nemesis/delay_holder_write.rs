//! `delay-holder-write`: once the holder has read the resource, hold its traffic to the
//! resource for --delay, so its write lands late, maybe after its lease ran out and another
//! holder wrote: the delayed-packet case of the fencing argument.

use lockpick_checkers::fault::{FaultKind, Target};
use serde_json::json;

use super::aim::{Aim, Begun, OnHolder};
use super::delay_client::Delayed;
use super::window::Window;
use super::{Context, Holder, Needs, Nemesis, Trigger};
use crate::cluster::Links;

pub struct DelayHolderWrite;

impl Nemesis for DelayHolderWrite {
    fn name(&self) -> &'static str {
        "delay-holder-write"
    }

    fn about(&self) -> &'static str {
        "Lock-aware: once the holder has read the resource, hold its traffic to the resource for \
         --delay, so its write lands late."
    }

    fn needs(&self) -> Needs {
        Needs {
            resource_links: true,
            ..Needs::default()
        }
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Holder(Trigger::Read, self)
    }
}

impl OnHolder for DelayHolderWrite {
    fn begin(&self, holder: &Holder, _window: &Window, ctx: &mut Context) -> Begun {
        let Some(slot) = ctx.cluster.slot_of(holder.process) else {
            return Ok(None);
        };
        let chunks_before = ctx.cluster.delayed_chunks(&slot, Links::Resource);
        if ctx.cluster.delay(&slot, Links::Resource, ctx.knobs.delay) == 0 {
            return Ok(None);
        }
        let target = Target::Client(holder.process);
        let id = ctx.started(
            FaultKind::Delay,
            std::slice::from_ref(&target),
            json!({
                "link": "resource",
                "delay_ms": ctx.knobs.delay.as_millis() as u64,
                "trigger": format!("read by the holder of acquisition {}", holder.acquisition),
            }),
        )?;
        Ok(Some(Box::new(Delayed {
            id,
            slot,
            target,
            links: Links::Resource,
            chunks_before,
        })))
    }
}
