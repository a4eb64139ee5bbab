//! `loss`: drop --loss percent of a random server's packets, both ways, for the fault's
//! duration. Evidence: the firewall's count of dropped packets.

use anyhow::Result;
use lockpick_checkers::fault::{FaultKind, Target};
use serde_json::json;

use super::aim::{Aim, Begun, OnServer};
use super::window::Window;
use super::{Context, Fault, Needs, Nemesis};

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

    fn aim(&self) -> Aim<'_> {
        Aim::Server(self)
    }
}

impl OnServer for Loss {
    fn begin(&self, name: &str, _window: &Window, ctx: &mut Context) -> Begun {
        let dropped_before = ctx.cluster.dropped_packets(&[name.to_string()]);
        let percent = ctx.knobs.loss;
        ctx.cluster.lose(name, percent)?;
        let id = ctx.started(
            FaultKind::Loss,
            &[Target::Node(name.to_string())],
            json!({ "percent": percent }),
        )?;
        Ok(Some(Box::new(Lossy {
            id,
            node: name.to_string(),
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
