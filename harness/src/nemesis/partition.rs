//! Partitions drawn by the schedule: `partition-node`, `-halves`, `-ring`, `-bridge`, `-client`
//! and `-one-way` differ only in the cuts they draw (pairs of nodes that cannot talk). Each is
//! checked by a connection attempt across one cut, which must fail, and its stop records how
//! many packets the rules dropped. Partitions that overlap are counted per blocked address, so
//! one ending never heals another.

use anyhow::Result;
use lockpick_checkers::fault::FaultKind;
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::aim::{Aim, Begun, Draws};
use super::context::node_targets;
use super::window::{Shape, Targets, Window};
use super::{Context, Fault, Needs, Nemesis};

/// How a partition chooses its cuts.
#[derive(Clone, Copy)]
enum Layout {
    /// One server cut off from every other node.
    Node,
    /// The servers split into a minority and a majority.
    Halves,
    /// Each server sees a majority, but no two see the same one.
    Ring,
    /// Two halves joined only through one bridge server.
    Bridge,
    /// One client cut off from some of the servers.
    Client,
    /// One server stops hearing every other node, but can still send.
    OneWay,
}

pub struct Partition {
    name: &'static str,
    about: &'static str,
    layout: Layout,
    min_servers: Option<(usize, &'static str)>,
}

pub const PARTITION_NODE: Partition = Partition {
    name: "partition-node",
    about: "Cut one random server off from every other node.",
    layout: Layout::Node,
    min_servers: None,
};
pub const PARTITION_HALVES: Partition = Partition {
    name: "partition-halves",
    about: "Split the servers into a minority and a majority that cannot talk.",
    layout: Layout::Halves,
    min_servers: Some((
        2,
        "a single server cannot be split: use partition-node or partition-client",
    )),
};
pub const PARTITION_RING: Partition = Partition {
    name: "partition-ring",
    about: "Each server sees a majority, but no two see the same one (5 servers or more).",
    layout: Layout::Ring,
    min_servers: Some((
        5,
        "each server must see a majority that no other server sees",
    )),
};
pub const PARTITION_BRIDGE: Partition = Partition {
    name: "partition-bridge",
    about: "Two halves joined only through one bridge server.",
    layout: Layout::Bridge,
    min_servers: Some((3, "two halves and a bridge between them")),
};
pub const PARTITION_CLIENT: Partition = Partition {
    name: "partition-client",
    about: "Cut one random client off from some of the servers.",
    layout: Layout::Client,
    min_servers: None,
};
pub const PARTITION_ONE_WAY: Partition = Partition {
    name: "partition-one-way",
    about: "One random server stops receiving from every other node, but can still send.",
    layout: Layout::OneWay,
    min_servers: None,
};

fn across(a: &[String], b: &[String]) -> Vec<(String, String)> {
    a.iter()
        .flat_map(|x| b.iter().map(move |y| (x.clone(), y.clone())))
        .collect()
}

impl Nemesis for Partition {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn needs(&self) -> Needs {
        Needs {
            min_servers: self.min_servers,
            firewall: true,
            ..Needs::default()
        }
    }

    fn aim(&self) -> Aim<'_> {
        let targets = match self.layout {
            Layout::Client => Targets::Clients,
            _ => Targets::Servers,
        };
        Aim::Drawn(targets, self)
    }
}

impl Draws for Partition {
    fn draw(&self, window: &mut Window, shape: &Shape, rng: &mut ChaCha8Rng) {
        let mut shuffled = shape.servers.clone();
        shuffled.shuffle(rng);
        let everyone_but = |node: &String| -> Vec<String> {
            shape.everyone().filter(|n| *n != node).cloned().collect()
        };
        match self.layout {
            Layout::Node => {
                let Some(isolated) = shape.servers.choose(rng).cloned() else {
                    return;
                };
                window.cuts = across(std::slice::from_ref(&isolated), &everyone_but(&isolated));
                window.targets = vec![isolated];
            }
            Layout::Halves => {
                let (minority, majority) = shuffled.split_at(shuffled.len() / 2);
                window.targets = minority.to_vec();
                window.cuts = across(minority, majority);
            }
            Layout::Bridge => {
                let k = shuffled.len().saturating_sub(1) / 2;
                let (a, rest) = shuffled.split_at(k);
                let (bridge, b) = rest.split_at(1.min(rest.len()));
                window.targets = bridge.to_vec();
                window.cuts = across(a, b);
            }
            Layout::Ring => {
                // Each server keeps its nearest neighbours on a shuffled ring: a majority, but a
                // different one for each.
                let n = shuffled.len();
                let reach = (n / 2).div_ceil(2);
                for i in 0..n {
                    for j in i + 1..n {
                        let distance = (j - i).min(n - (j - i));
                        if distance > reach {
                            window.cuts.push((shuffled[i].clone(), shuffled[j].clone()));
                        }
                    }
                }
                window.targets = shuffled;
            }
            Layout::Client => {
                let Some(client) = shape.clients.choose(rng).cloned() else {
                    return;
                };
                let some = rng.gen_range(1..=shuffled.len().max(1));
                window.cuts = across(
                    std::slice::from_ref(&client),
                    &shuffled[..some.min(shuffled.len())],
                );
                window.targets = vec![client];
            }
            Layout::OneWay => {
                let Some(deaf) = shape.servers.choose(rng).cloned() else {
                    return;
                };
                window.cuts = across(&everyone_but(&deaf), std::slice::from_ref(&deaf));
                window.targets = vec![deaf];
                window.one_way = true;
            }
        }
    }

    fn begin(&self, window: &Window, ctx: &mut Context) -> Begun {
        let cut = Cut::begin(
            ctx,
            FaultKind::Partition(self.name.to_string()),
            window.cuts.clone(),
            window.one_way,
            json!({}),
        )?;
        Ok(Some(Box::new(cut)))
    }
}

/// Cuts in force, and the nodes whose rules hold them.
pub struct Cut {
    id: u64,
    fault: FaultKind,
    cuts: Vec<(String, String)>,
    one_way: bool,
    nodes: Vec<String>,
    dropped_before: u64,
}

impl Cut {
    /// Applies `cuts`, checks one of them, and records the start.
    pub fn begin(
        ctx: &mut Context,
        fault: FaultKind,
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
        ctx.cluster.partition(&cuts, one_way)?;
        let effective = cuts
            .iter()
            .find_map(|(from, to)| ctx.cluster.cannot_reach(from, to));
        details["cuts"] = json!(cuts);
        details["one_way"] = json!(one_way);
        details["mode"] = json!(ctx.knobs.partition_mode);
        if let Some(effective) = effective {
            details["effective"] = json!(effective);
        }
        let id = ctx.started(fault.clone(), &node_targets(&nodes), details)?;
        Ok(Cut {
            id,
            fault,
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
        ctx.cluster.repair(&self.cuts, self.one_way)?;
        ctx.stopped(
            self.id,
            self.fault,
            &node_targets(&self.nodes),
            json!({ "dropped_packets": dropped }),
        )
    }
}
