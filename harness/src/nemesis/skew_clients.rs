//! `skew-clients`: move a client's own clock (the one our Redlock client measures elapsed time
//! and validity with) by --clock-jump, through its skew file. The host's clock and the history's
//! timestamps are untouched.

use anyhow::{Context as _, Result};
use serde_json::json;

use super::{Context, Fault, Holder, Nemesis};
use crate::schedule::Window;

pub struct SkewClients;

struct Skewed {
    id: u64,
    target: String,
    file: std::path::PathBuf,
}

impl Nemesis for SkewClients {
    fn begin(
        &mut self,
        window: &Window,
        _holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let Some((slot, process)) = ctx.window_client(window) else {
            return Ok(None);
        };
        let offset = ctx.config.clock_jump.as_millis() as i64;
        let file = ctx.cluster.skew_file(&slot);
        let temporary = file.with_extension("new");
        std::fs::write(&temporary, format!("{offset}\n")).context("cannot write a skew file")?;
        std::fs::rename(&temporary, &file).context("cannot write a skew file")?;
        let effective =
            std::fs::read_to_string(&file).is_ok_and(|t| t.trim() == offset.to_string());
        let target = format!("client {process}");
        let id = ctx.started(
            "skew",
            std::slice::from_ref(&target),
            json!({ "offset_ms": offset, "effective": effective }),
        )?;
        Ok(Some(Box::new(Skewed { id, target, file })))
    }
}

impl Fault for Skewed {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let _ = std::fs::remove_file(&self.file);
        ctx.stopped(
            self.id,
            "skew",
            std::slice::from_ref(&self.target),
            json!({ "offset_ms": 0 }),
        )
    }
}
