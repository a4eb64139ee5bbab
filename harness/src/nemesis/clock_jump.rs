//! Server clock jumps drawn by the schedule: `clock-forward` and `clock-backward` move a
//! server's clock by --clock-jump for the fault's duration; `clock-strobe` flips it between that
//! offset and true time every 100 ms. Redis and ZooKeeper servers run under libfaketime when a
//! clock nemesis is configured; etcd and ZooKeeper are refused by the configuration.
//!
//! Evidence: the server's `TIME` is read back and must show the offset.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use serde_json::json;

use super::{Context, Fault, Holder, Nemesis};
use crate::cli::NemesisKind;
use crate::faketime;
use crate::runtime::Runtime;
use crate::schedule::Window;

const STROBE_PERIOD_NS: u64 = 100_000_000;

pub struct ClockJump;

impl Nemesis for ClockJump {
    fn begin(
        &mut self,
        window: &Window,
        _holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let jump = ctx.config.clock_jump.as_millis() as i64;
        let offset = match window.nemesis {
            NemesisKind::ClockBackward => -jump,
            _ => jump,
        };
        let strobe = window.nemesis == NemesisKind::ClockStrobe;
        let fault = Jump::begin(
            ctx,
            &window.nemesis.name(),
            window.targets.clone(),
            offset,
            strobe,
            json!({}),
        )?;
        Ok(Some(Box::new(fault)))
    }
}

/// Servers whose clocks are moved.
pub struct Jump {
    id: u64,
    fault: String,
    nodes: Vec<String>,
    offset_ms: i64,
    strobe: bool,
    shifted: bool,
    last_flip: u64,
}

impl Jump {
    pub fn begin(
        ctx: &mut Context,
        fault: &str,
        nodes: Vec<String>,
        offset_ms: i64,
        strobe: bool,
        mut details: serde_json::Value,
    ) -> Result<Jump> {
        for node in &nodes {
            faketime::set_offset(&faketime::file(&ctx.cluster.scratch.path, node), offset_ms)?;
        }
        details["offset_ms"] = json!(offset_ms);
        details["strobe"] = json!(strobe);
        if let Some(node) = nodes.first() {
            if let Some(measured) = measure_offset(ctx, node) {
                details["measured_offset_ms"] = json!(measured);
                // A jump shows within half a second (the read itself takes a little).
                details["effective"] = json!((measured - offset_ms).abs() < 500);
            }
        }
        let id = ctx.started(fault, &nodes, details)?;
        Ok(Jump {
            id,
            fault: fault.to_string(),
            nodes,
            offset_ms,
            strobe,
            shifted: true,
            last_flip: ctx.now,
        })
    }

    fn set_all(&self, ctx: &Context, offset_ms: i64) -> Result<()> {
        for node in &self.nodes {
            faketime::set_offset(&faketime::file(&ctx.cluster.scratch.path, node), offset_ms)?;
        }
        Ok(())
    }
}

impl Fault for Jump {
    fn tick(&mut self, ctx: &mut Context) -> Result<()> {
        if self.strobe && ctx.now >= self.last_flip + STROBE_PERIOD_NS {
            self.shifted = !self.shifted;
            self.last_flip = ctx.now;
            self.set_all(ctx, if self.shifted { self.offset_ms } else { 0 })?;
        }
        Ok(())
    }

    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        self.set_all(ctx, 0)?;
        ctx.stopped(self.id, &self.fault, &self.nodes, json!({ "offset_ms": 0 }))
    }
}

/// How far the server's clock now is from true time, in ms.
fn measure_offset(ctx: &Context, node: &str) -> Option<i64> {
    let endpoint = *ctx.cluster.endpoints.get(node)?;
    let server = ctx.cluster.nodes.get(node)?;
    let url = format!("redis://{endpoint}/");
    let (sender, answer) = std::sync::mpsc::channel();
    ctx.cluster
        .runtime
        .probe(
            server,
            Box::new(move || {
                let timeout = Duration::from_millis(500);
                let mut c = redis::Client::open(url)?.get_connection_with_timeout(timeout)?;
                c.set_read_timeout(Some(timeout))?;
                let (seconds, micros): (i64, i64) = redis::cmd("TIME").query(&mut c)?;
                let _ = sender.send(seconds * 1000 + micros / 1000 - now_ms());
                Ok(())
            }),
        )
        .ok()?;
    answer.try_recv().ok()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
