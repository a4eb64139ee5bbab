//! `delay-client`: hold everything one client sends (to every lock server and to the resource)
//! for --delay, through the userspace proxies on its links. Its requests time out and are
//! applied late: a `SET` it gave up on can still take the lock; a write it gave up on can still
//! land.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use super::{Context, Fault, Holder, Nemesis};
use crate::schedule::Window;

pub struct DelayClient;

struct Delayed {
    id: u64,
    slot: String,
    target: String,
    chunks_before: u64,
}

/// The delayed chunks on all of a client node's links so far.
fn chunks(ctx: &Context, slot: &str) -> u64 {
    let servers = ctx
        .cluster
        .server_links
        .get(slot)
        .into_iter()
        .flat_map(|l| l.values());
    let resource = ctx.cluster.resource_links.get(slot);
    servers.chain(resource).map(|l| l.delayed_chunks()).sum()
}

fn set_delay(ctx: &Context, slot: &str, delay: Duration) -> usize {
    let servers = ctx
        .cluster
        .server_links
        .get(slot)
        .into_iter()
        .flat_map(|l| l.values());
    let resource = ctx.cluster.resource_links.get(slot);
    let mut links = 0;
    for link in servers.chain(resource) {
        link.set_delay(delay);
        links += 1;
    }
    links
}

impl Nemesis for DelayClient {
    fn begin(
        &mut self,
        window: &Window,
        _holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let Some((slot, process)) = ctx.window_client(window) else {
            return Ok(None);
        };
        let chunks_before = chunks(ctx, &slot);
        let links = set_delay(ctx, &slot, ctx.config.delay);
        let target = format!("client {process}");
        let id = ctx.started(
            "delay",
            std::slice::from_ref(&target),
            json!({ "links": links, "delay_ms": ctx.config.delay.as_millis() as u64 }),
        )?;
        Ok(Some(Box::new(Delayed {
            id,
            slot: slot.clone(),
            target,
            chunks_before,
        })))
    }
}

impl Fault for Delayed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        set_delay(ctx, &self.slot, Duration::ZERO);
        let held = chunks(ctx, &self.slot) - self.chunks_before;
        ctx.stopped(
            self.id,
            "delay",
            std::slice::from_ref(&self.target),
            json!({ "delayed_chunks": held, "effective": held > 0 }),
        )
    }
}
