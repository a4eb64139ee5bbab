//! `loss`: drop --loss percent of a random server's packets, both ways, for the fault's
//! duration. Evidence: the firewall's count of dropped packets.

use anyhow::Result;
use lockpick_checkers::fault::{FaultKind, Target};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::window::{Shape, Targets, Window};
use super::{Context, Fault, Holder, Needs, Nemesis};

pub struct Loss;

struct Lossy {
    id: u64,
    node: String,
    dropped_before: u64,
}

impl Nemesis for Loss {
    fn name(&self) -> &'static str {
        "loss"
    }

    fn about(&self) -> &'static str {
        "Drop --loss percent of a random server's packets, both ways."
    }

    fn needs(&self) -> Needs {
        Needs {
            firewall: true,
            ..Needs::default()
        }
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
        let Some(name) = window.targets.first() else {
            return Ok(None);
        };
        let dropped_before = ctx.cluster.dropped_packets(std::slice::from_ref(name));
        let percent = ctx.knobs.loss;
        ctx.cluster.lose(name, percent)?;
        let id = ctx.started(
            FaultKind::Loss,
            &[Target::Node(name.clone())],
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
        ctx.cluster.stop_loss(&self.node)?;
        ctx.stopped(
            self.id,
            FaultKind::Loss,
            &[Target::Node(self.node.clone())],
            json!({ "dropped_packets": dropped, "effective": dropped > 0 }),
        )
    }
}
