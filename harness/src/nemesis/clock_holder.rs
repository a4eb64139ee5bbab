//! `clock-holder`: right after a client acquires, jump forward the clocks of the servers that
//! granted its lock, so its keys expire early on exactly the servers that matter (Redlock's
//! majority): the textbook clock argument against Redlock.

use lockpick_checkers::fault::FaultKind;

use super::aim::{Aim, Begun, OnHolder};
use super::clock_jump::{clock_needs, Jump};
use super::window::Window;
use super::{Context, Holder, Needs, Nemesis, Trigger};

pub struct ClockHolder;

impl Nemesis for ClockHolder {
    fn name(&self) -> &'static str {
        "clock-holder"
    }

    fn about(&self) -> &'static str {
        "Lock-aware: jump forward the clocks of the servers that granted the holder's lock."
    }

    fn needs(&self) -> Needs {
        Needs {
            granting_servers: true,
            ..clock_needs()
        }
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Holder(Trigger::Acquired, self)
    }
}

impl OnHolder for ClockHolder {
    fn begin(&self, holder: &Holder, _window: &Window, ctx: &mut Context) -> Begun {
        let nodes: Vec<String> = holder
            .granted_by
            .iter()
            .filter_map(|address| ctx.cluster.server_at(address))
            .collect();
        if nodes.is_empty() {
            return Ok(None);
        }
        let offset = ctx.knobs.clock_jump.as_millis() as i64;
        let details = holder.trigger();
        Ok(Some(Box::new(Jump::begin(
            ctx,
            FaultKind::Clock(self.name().to_string()),
            nodes,
            offset,
            false,
            details,
        )?)))
    }
}
