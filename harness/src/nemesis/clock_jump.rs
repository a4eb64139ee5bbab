//! Server clock jumps drawn by the schedule: `clock-forward` and `clock-backward` move a
//! server's clock by --clock-jump for the fault's duration; `clock-strobe` flips it between that
//! offset and true time every 100 ms. Only the wall clock moves, as an NTP step moves it.
//! Servers run under libfaketime when a clock nemesis is configured, or (etcd, ZooKeeper) have
//! their vDSO patched when a shift opens on them; locks whose servers' clocks cannot move are
//! refused through their capabilities.
//!
//! Jumps on one server stack: its clock is off by the sum of the shifts open on it, and each
//! change is measured through the lock service (the server's own clock, read back) and must
//! show the new total within a tolerance relative to the change.

use anyhow::Result;
use lockpick_checkers::fault::FaultKind;
use serde_json::json;

use super::aim::{Aim, Begun, OnServer};
use super::context::node_targets;
use super::window::Window;
use super::{Context, Fault, Needs, Nemesis};
use crate::cluster::ClockShift;

const STROBE_PERIOD_NS: u64 = 100_000_000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
    Strobe,
}

pub struct ClockJump {
    name: &'static str,
    about: &'static str,
    direction: Direction,
}

pub const CLOCK_FORWARD: ClockJump = ClockJump {
    name: "clock-forward",
    about: "Jump a random server's wall clock forward by --clock-jump.",
    direction: Direction::Forward,
};
pub const CLOCK_BACKWARD: ClockJump = ClockJump {
    name: "clock-backward",
    about: "Jump a random server's wall clock backward by --clock-jump.",
    direction: Direction::Backward,
};
pub const CLOCK_STROBE: ClockJump = ClockJump {
    name: "clock-strobe",
    about: "Flip a random server's clock between +--clock-jump and true time every 100ms.",
    direction: Direction::Strobe,
};

/// The clock needs every clock nemesis has.
pub fn clock_needs() -> Needs {
    Needs {
        server_clock: true,
        ..Needs::default()
    }
}

impl Nemesis for ClockJump {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn needs(&self) -> Needs {
        clock_needs()
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Server(self)
    }
}

impl OnServer for ClockJump {
    fn begin(&self, _node: &str, window: &Window, ctx: &mut Context) -> Begun {
        let jump = ctx.knobs.clock_jump.as_millis() as i64;
        let offset = match self.direction {
            Direction::Backward => -jump,
            _ => jump,
        };
        let strobe = self.direction == Direction::Strobe;
        let fault = Jump::begin(
            ctx,
            FaultKind::Clock(self.name.to_string()),
            window.targets.clone(),
            offset,
            strobe,
            json!({}),
        )?;
        Ok(Some(Box::new(fault)))
    }
}

/// Servers whose clocks are shifted.
pub struct Jump {
    id: u64,
    fault: FaultKind,
    nodes: Vec<String>,
    shift: ClockShift,
    offset_ms: i64,
    strobe: bool,
    shifted: bool,
    last_flip: u64,
    flips: u64,
    flips_seen: u64,
}

impl Jump {
    pub fn begin(
        ctx: &mut Context,
        fault: FaultKind,
        nodes: Vec<String>,
        offset_ms: i64,
        strobe: bool,
        mut details: serde_json::Value,
    ) -> Result<Jump> {
        let (shift, evidence) = ctx.cluster.shift_clocks(&nodes, offset_ms)?;
        details["offset_ms"] = json!(offset_ms);
        details["strobe"] = json!(strobe);
        evidence.describe_start(&mut details);
        let id = ctx.started(fault.clone(), &node_targets(&nodes), details)?;
        Ok(Jump {
            id,
            fault,
            nodes,
            shift,
            offset_ms,
            strobe,
            shifted: true,
            last_flip: ctx.now,
            flips: 0,
            flips_seen: 0,
        })
    }
}

impl Fault for Jump {
    fn tick(&mut self, ctx: &mut Context) -> Result<()> {
        if self.strobe && ctx.now >= self.last_flip + STROBE_PERIOD_NS {
            self.shifted = !self.shifted;
            self.last_flip = ctx.now;
            let offset = if self.shifted { self.offset_ms } else { 0 };
            let evidence = ctx.cluster.reshift_clocks(self.shift, offset)?;
            self.flips += 1;
            if evidence.effective == Some(true) {
                self.flips_seen += 1;
            }
        }
        Ok(())
    }

    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let evidence = ctx.cluster.unshift_clocks(self.shift)?;
        let mut details = json!({ "offset_ms": 0 });
        evidence.describe(&mut details);
        if self.strobe {
            details["flips"] = json!(self.flips);
            details["flips_seen"] = json!(self.flips_seen);
        }
        ctx.stopped(self.id, self.fault, &node_targets(&self.nodes), details)
    }
}
