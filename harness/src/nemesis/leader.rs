//! The leader nemeses: `kill-leader`, `pause-leader` and `partition-leader` hit the server the
//! service names as leader when the fault opens (etcd's endpoint status, ZooKeeper's `srvr`),
//! the one a consensus service's claims rest on. Killing and pausing are `kill-node`'s and
//! `pause-node`'s own faults; the partition cuts the leader off from the other servers only,
//! so clients keep whatever links they have. A lock whose service has no leader refuses them.

use std::time::Duration;

use lockpick_checkers::fault::FaultKind;
use serde_json::json;

use super::aim::{Aim, Begun, OnServer};
use super::partition::Cut;
use super::window::Window;
use super::{kill_node, pause_node, Context, Needs, Nemesis};

pub struct LeaderNemesis {
    name: &'static str,
    about: &'static str,
    fault: &'static (dyn OnServer + Sync),
    firewall: bool,
}

pub const KILL_LEADER: LeaderNemesis = LeaderNemesis {
    name: "kill-leader",
    about: "Kill the server that leads (SIGKILL), restart it after the fault duration.",
    fault: &kill_node::KillNode,
    firewall: false,
};
pub const PAUSE_LEADER: LeaderNemesis = LeaderNemesis {
    name: "pause-leader",
    about: "Freeze the server that leads (SIGSTOP), then resume it.",
    fault: &pause_node::PauseNode,
    firewall: false,
};
pub const PARTITION_LEADER: LeaderNemesis = LeaderNemesis {
    name: "partition-leader",
    about: "Cut the server that leads off from the other servers (clients keep their links).",
    fault: &CutFromServers,
    firewall: true,
};

/// A fault long enough for the others to notice their leader is gone and elect another:
/// ZooKeeper's followers give a silent leader syncLimit × tickTime (5 s), then elect; cut off
/// by dropped packets, 3 of 10 ensembles had no leader yet at 6 s, all did at 7 s. It still
/// fits a comparison's 10 s cells (first fault by 1.5 s, heal at 9 s).
const FAILOVER: Duration = Duration::from_secs(7);

impl Nemesis for LeaderNemesis {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn needs(&self) -> Needs {
        Needs {
            firewall: self.firewall,
            leader: true,
            ..Needs::default()
        }
    }

    fn default_duration(&self, ttl: Duration) -> Duration {
        (ttl * 2).max(FAILOVER)
    }

    fn aim(&self) -> Aim<'_> {
        Aim::Leader(self.fault)
    }
}

/// Cuts one server off from every other server, both ways.
struct CutFromServers;

impl OnServer for CutFromServers {
    fn begin(&self, node: &str, _window: &Window, ctx: &mut Context) -> Begun {
        let cuts: Vec<(String, String)> = (ctx.cluster.servers())
            .filter(|other| *other != node)
            .map(|other| (node.to_string(), other.clone()))
            .collect();
        if cuts.is_empty() {
            return Ok(None);
        }
        let fault = FaultKind::Partition(PARTITION_LEADER.name.to_string());
        let cut = Cut::begin(ctx, fault, cuts, false, json!({}))?;
        Ok(Some(Box::new(cut)))
    }
}
