//! `partition-holder`: right after a client acquires, cut its node off from every lock-service
//! server. It can still reach the resource: it goes on working, while its lease (or session)
//! runs out where it cannot renew it, and another client takes the lock.

use anyhow::Result;

use super::partition::Cut;
use super::{Context, Fault, Holder, Nemesis, Trigger};
use crate::schedule::Window;

pub struct PartitionHolder;

impl Nemesis for PartitionHolder {
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
        let Some(slot) = ctx.cluster.slot_of(holder.process) else {
            return Ok(None);
        };
        let cuts: Vec<(String, String)> = ctx
            .cluster
            .servers()
            .map(|server| (slot.clone(), server.clone()))
            .collect();
        let details = holder.trigger();
        Ok(Some(Box::new(Cut::begin(
            ctx,
            "partition-holder",
            cuts,
            false,
            details,
        )?)))
    }
}
