//! `kill-client`: SIGKILL a random client process, and start a fresh one in its node when the
//! fault ends. The killed process's open operation is completed as `info` by the run.

use anyhow::Result;
use lockpick_checkers::fault::{FaultKind, Target};
use serde_json::json;

use super::aim::{Aim, Begun, Client, OnClient};
use super::{Context, Fault, Nemesis};

pub struct KillClient;

struct Killed {
    id: u64,
    slot: String,
    target: Target,
}

impl Nemesis for KillClient {
    fn name(&self) -> &'static str {
        "kill-client"
    }

    fn about(&self) -> &'static str {
        "Kill a random client (SIGKILL), start a fresh one in its place after the fault duration."
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Client(self)
    }
}

impl OnClient for KillClient {
    fn begin(&self, Client { slot, process }: Client, ctx: &mut Context) -> Begun {
        let Some(gone) = ctx.cluster.kill_client(process, ctx.now) else {
            return Ok(None);
        };
        let target = Target::Client(process);
        let id = ctx.started(
            FaultKind::Kill,
            std::slice::from_ref(&target),
            json!({ "node": slot, "effective": gone }),
        )?;
        Ok(Some(Box::new(Killed { id, slot, target })))
    }
}

impl Fault for Killed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let deadline = ctx.knobs.client_deadline_ns;
        let replacement = ctx.cluster.spawn_client(&self.slot, deadline)?;
        ctx.stopped(
            self.id,
            FaultKind::Kill,
            std::slice::from_ref(&self.target),
            json!({ "replacement": Target::Client(replacement) }),
        )
    }
}
