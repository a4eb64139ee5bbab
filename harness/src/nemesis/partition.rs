//! Partitions drawn by the schedule: `partition-node`, `-halves`, `-ring`, `-bridge`, `-client`
//! and `-one-way` differ only in the cuts the schedule drew (pairs of nodes that cannot talk).
//! Each is checked by a connection attempt across one cut, which must fail, and its stop
//! records how many packets the rules dropped.

use anyhow::Result;
use serde_json::json;

use super::{Context, Fault, Holder, Nemesis};
use crate::schedule::Window;

pub struct Partition;

impl Nemesis for Partition {
    fn begin(
        &mut self,
        window: &Window,
        _holder: Option<&Holder>,
        ctx: &mut Context,
    ) -> Result<Option<Box<dyn Fault>>> {
        let fault = window.nemesis.name();
        let cut = Cut::begin(ctx, &fault, window.cuts.clone(), window.one_way, json!({}))?;
        Ok(Some(Box::new(cut)))
    }
}

/// Cuts in force, and the nodes whose rules hold them.
pub struct Cut {
    id: u64,
    fault: String,
    cuts: Vec<(String, String)>,
    one_way: bool,
    nodes: Vec<String>,
    dropped_before: u64,
}

impl Cut {
    /// Applies `cuts`, checks one of them, and records the start.
    pub fn begin(
        ctx: &mut Context,
        fault: &str,
        cuts: Vec<(String, String)>,
        one_way: bool,
        mut details: serde_json::Value,
    ) -> Result<Cut> {
        let mut nodes: Vec<String> = cuts
            .iter()
            .flat_map(|(a, b)| [a.clone(), b.clone()])
            .collect();
        nodes.sort();
        nodes.dedup();
        let dropped_before = ctx.cluster.dropped_packets(&nodes);
        ctx.cluster.cut(&cuts, one_way)?;
        let effective = cuts
            .iter()
            .find_map(|(from, to)| ctx.cluster.cannot_reach(from, to));
        details["cuts"] = json!(cuts);
        details["one_way"] = json!(one_way);
        details["mode"] = json!(ctx.config.partition_mode);
        if let Some(effective) = effective {
            details["effective"] = json!(effective);
        }
        let id = ctx.started(fault, &nodes, details)?;
        Ok(Cut {
            id,
            fault: fault.to_string(),
            cuts,
            one_way,
            nodes,
            dropped_before,
        })
    }
}

impl Fault for Cut {
    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        let dropped = ctx
            .cluster
            .dropped_packets(&self.nodes)
            .saturating_sub(self.dropped_before);
        ctx.cluster.uncut(&self.cuts, self.one_way)?;
        ctx.stopped(
            self.id,
            &self.fault,
            &self.nodes,
            json!({ "dropped_packets": dropped }),
        )
    }
}
