//! `loss`: a server drops a share of its packets, both ways (nft's random numbers), for the
//! fault's duration.

use anyhow::Result;
use serde_json::json;

use super::{Context, Fault, Holder, Nemesis};
use crate::firewall;
use crate::schedule::Window;

pub struct Loss;

struct Lossy {
    id: u64,
    node: String,
    dropped_before: u64,
}

impl Nemesis for Loss {
    fn begin(
        &mut self,
        window: &Window,
        _holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let Some(name) = window.targets.first() else {
            return Ok(None);
        };
        let node = ctx.cluster.node(name)?.clone();
        let dropped_before = ctx.cluster.dropped_packets(std::slice::from_ref(name));
        firewall::lose(&ctx.cluster.runtime, &node, ctx.config.loss)?;
        let percent = ctx.config.loss;
        let id = ctx.started(
            "loss",
            std::slice::from_ref(name),
            json!({ "percent": percent }),
        )?;
        Ok(Some(Box::new(Lossy {
            id,
            node: name.clone(),
            dropped_before,
        })))
    }
}

impl Fault for Lossy {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let node = std::slice::from_ref(&self.node);
        let dropped = ctx
            .cluster
            .dropped_packets(node)
            .saturating_sub(self.dropped_before);
        firewall::stop_loss(&ctx.cluster.runtime, ctx.cluster.node(&self.node)?)?;
        ctx.stopped(
            self.id,
            "loss",
            std::slice::from_ref(&self.node),
            json!({ "dropped_packets": dropped, "effective": dropped > 0 }),
        )
    }
}
