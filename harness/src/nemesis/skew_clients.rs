//! `skew-clients`: skew one client's own clock by --clock-jump for the fault's duration: our
//! Redlock's (which measures its validity on it), through its skew file, or an `exec:` client's
//! program's wall clock, through its vDSO, read back from the program's own word. Locks whose
//! clients do not reason with a clock of their own are refused through their capabilities.

use anyhow::Result;
use lockpick_checkers::fault::{FaultKind, Target};
use serde_json::json;

use super::aim::{Aim, Begun, Client, OnClient};
use super::{Context, Fault, Needs, Nemesis};

pub struct SkewClients;

struct Skewed {
    id: u64,
    slot: String,
    target: Target,
}

impl Nemesis for SkewClients {
    fn name(&self) -> &'static str {
        "skew-clients"
    }

    fn about(&self) -> &'static str {
        "Skew a random client's own clock by --clock-jump (a lock whose client reasons with its \
         own clock, or an exec: client's program)."
    }

    fn needs(&self) -> Needs {
        Needs {
            client_clock: true,
            ..Needs::default()
        }
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Client(self)
    }
}

impl OnClient for SkewClients {
    fn begin(&self, Client { slot, process }: Client, ctx: &mut Context) -> Begun {
        let offset = ctx.knobs.clock_jump.as_millis() as i64;
        let evidence = ctx.cluster.skew_client(&slot, offset)?;
        let target = Target::Client(process);
        let mut details = json!({ "offset_ms": offset });
        evidence.describe_start(&mut details);
        let id = ctx.started(FaultKind::Skew, std::slice::from_ref(&target), details)?;
        Ok(Some(Box::new(Skewed { id, slot, target })))
    }
}

impl Fault for Skewed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let evidence = ctx.cluster.unskew_client(&self.slot)?;
        let mut details = json!({ "offset_ms": 0 });
        evidence.describe(&mut details);
        let target = std::slice::from_ref(&self.target);
        ctx.stopped(self.id, FaultKind::Skew, target, details)
    }
}
