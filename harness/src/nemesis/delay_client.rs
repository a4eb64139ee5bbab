//! `delay-client`: hold everything one client sends to the lock servers and the resource for
//! --delay, through the userspace proxies on each of its links (the kernel here has no netem).
//! Evidence: how many chunks the proxies held.

use anyhow::Result;
use lockpick_checkers::fault::{FaultKind, Target};
use serde_json::json;

use super::aim::{Aim, Begun, Client, OnClient};
use super::{Context, Fault, Needs, Nemesis};
use crate::cluster::Links;

pub struct DelayClient;

/// A client's links held back; ending it lets them go and counts what they held.
pub(super) struct Delayed {
    pub(super) id: u64,
    pub(super) slot: String,
    pub(super) target: Target,
    pub(super) links: Links,
    pub(super) chunks_before: u64,
}

impl Nemesis for DelayClient {
    fn name(&self) -> &'static str {
        "delay-client"
    }

    fn about(&self) -> &'static str {
        "Hold everything a random client sends to the lock servers and the resource for --delay."
    }

    fn needs(&self) -> Needs {
        Needs {
            resource_links: true,
            server_links: true,
            ..Needs::default()
        }
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Client(self)
    }
}

impl OnClient for DelayClient {
    fn begin(&self, Client { slot, process }: Client, ctx: &mut Context) -> Begun {
        let chunks_before = ctx.cluster.delayed_chunks(&slot, Links::All);
        let links = ctx.cluster.delay(&slot, Links::All, ctx.knobs.delay);
        let target = Target::Client(process);
        let id = ctx.started(
            FaultKind::Delay,
            std::slice::from_ref(&target),
            json!({ "links": links, "delay_ms": ctx.knobs.delay.as_millis() as u64 }),
        )?;
        Ok(Some(Box::new(Delayed {
            id,
            slot,
            target,
            links: Links::All,
            chunks_before,
        })))
    }
}

impl Fault for Delayed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        ctx.cluster.undelay(&self.slot, self.links);
        let held = ctx.cluster.delayed_chunks(&self.slot, self.links) - self.chunks_before;
        ctx.stopped(
            self.id,
            FaultKind::Delay,
            std::slice::from_ref(&self.target),
            json!({ "delayed_chunks": held, "effective": held > 0 }),
        )
    }
}
