//! `kill-client`: SIGKILL a client process; when the fault ends, start a fresh client in its
//! node under a new process number (as Jepsen retires a crashed process). The killed client's
//! open operation stays incomplete, and a lock it held is released only by its lease.

use anyhow::Result;
use serde_json::json;

use super::{Context, Fault, Holder, Nemesis};
use crate::children::Role;
use crate::schedule::Window;

pub struct KillClient;

struct Killed {
    id: u64,
    slot: String,
    target: String,
}

impl Nemesis for KillClient {
    fn begin(
        &mut self,
        window: &Window,
        _holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let Some((slot, process)) = ctx.window_client(window) else {
            return Ok(None);
        };
        let Some(pid) = ctx.cluster.children.kill(&Role::Client(process)) else {
            return Ok(None);
        };
        let gone = !std::path::Path::new(&format!("/proc/{pid}")).exists();
        let target = format!("client {process}");
        let id = ctx.started(
            "kill",
            std::slice::from_ref(&target),
            json!({ "node": slot, "effective": gone }),
        )?;
        Ok(Some(Box::new(Killed {
            id,
            slot: slot.clone(),
            target,
        })))
    }
}

impl Fault for Killed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let deadline = ctx.config.time_limit.as_nanos() as u64;
        let replacement = ctx.cluster.spawn_client(&self.slot, deadline)?;
        ctx.stopped(
            self.id,
            "kill",
            std::slice::from_ref(&self.target),
            json!({ "replacement": format!("client {replacement}") }),
        )
    }
}
