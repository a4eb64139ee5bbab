//! `clock-holder`: right after a client acquires, jump forward the clocks of the servers that
//! granted its lock (for Redlock, its majority) by --clock-jump. Their keys expire at once, so
//! another client can take a majority while the holder still works: a clock jump breaks a lock
//! whose safety rests on time.

use anyhow::Result;

use super::clock_jump::Jump;
use super::{Context, Fault, Holder, Nemesis, Trigger};
use crate::schedule::Window;

pub struct ClockHolder;

impl Nemesis for ClockHolder {
    fn trigger(&self) -> Trigger {
        Trigger::Acquired
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
        let nodes: Vec<String> = holder
            .granted_by
            .iter()
            .filter_map(|address| ctx.cluster.server_at(address))
            .collect();
        if nodes.is_empty() {
            return Ok(None);
        }
        let offset = ctx.config.clock_jump.as_millis() as i64;
        let details = holder.trigger();
        Ok(Some(Box::new(Jump::begin(
            ctx,
            "clock-holder",
            nodes,
            offset,
            false,
            details,
        )?)))
    }
}
