//! `partition-holder`: right after a client acquires, cut it off from every server for the
//! fault's duration. Its lease runs out where it cannot renew it; the resource stays reachable,
//! so a holder that does not notice goes on writing.

use std::time::Duration;

use lockpick_checkers::fault::FaultKind;

use super::aim::{Aim, Begun, OnHolder};
use super::partition::Cut;
use super::window::Window;
use super::{Context, Holder, Needs, Nemesis, Trigger};

pub struct PartitionHolder;

impl Nemesis for PartitionHolder {
    fn name(&self) -> &'static str {
        "partition-holder"
    }

    fn about(&self) -> &'static str {
        "Lock-aware: right after a client acquires, cut it off from every server."
    }

    fn needs(&self) -> Needs {
        Needs {
            firewall: true,
            ..Needs::default()
        }
    }

    /// The classic failure: the holder, cut off, cannot renew its lease and goes on working past
    /// it while another client takes the lock. So its critical section outlasts the lease.
    fn default_work(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl * 3 / 2)
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Holder(Trigger::Acquired, self)
    }
}

impl OnHolder for PartitionHolder {
    fn begin(&self, holder: &Holder, _window: &Window, ctx: &mut Context) -> Begun {
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
            FaultKind::Partition(self.name().to_string()),
            cuts,
            false,
            details,
        )?)))
    }
}
