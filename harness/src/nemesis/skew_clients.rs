//! `skew-clients`: skew one client's own clock by --clock-jump for the fault's duration. Only a
//! client that reasons with its own clock (our Redlock, which measures its validity on it)
//! notices; locks whose clients do not are refused through their capabilities.

use anyhow::Result;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::window::{Shape, Targets, Window};
use super::{Context, Fault, Holder, Needs, Nemesis};

pub struct SkewClients;

struct Skewed {
    id: u64,
    slot: String,
    target: String,
}

impl Nemesis for SkewClients {
    fn name(&self) -> &'static str {
        "skew-clients"
    }

    fn about(&self) -> &'static str {
        "Skew a random client's own clock by --clock-jump (our Redlock client)."
    }

    fn needs(&self) -> Needs {
        Needs {
            client_clock: true,
            ..Needs::default()
        }
    }

    fn targets(&self) -> Targets {
        Targets::Clients
    }

    fn aim(&self, window: &mut Window, shape: &Shape, rng: &mut ChaCha8Rng) {
        window.targets = shape.clients.choose(rng).cloned().into_iter().collect();
    }

    fn begin(
        &self,
        window: &Window,
        _holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let Some((slot, process)) = ctx.window_client(window) else {
            return Ok(None);
        };
        let offset = ctx.knobs.clock_jump.as_millis() as i64;
        let effective = ctx.cluster.skew_client(&slot, offset)?;
        let target = format!("client {process}");
        let id = ctx.started(
            "skew",
            std::slice::from_ref(&target),
            json!({ "offset_ms": offset, "effective": effective }),
        )?;
        Ok(Some(Box::new(Skewed { id, slot, target })))
    }
}

impl Fault for Skewed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        ctx.cluster.unskew_client(&self.slot);
        ctx.stopped(
            self.id,
            "skew",
            std::slice::from_ref(&self.target),
            json!({ "offset_ms": 0 }),
        )
    }
}
