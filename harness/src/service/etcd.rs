//! A 3-member etcd cluster (Debian's etcd-server), data directories in memory.
//!
//! Heartbeat 50 ms and election timeout 500 ms make etcd's shortest lease 1 s (it is 1.5 × the
//! election timeout), so a 1 s TTL is honoured rather than silently raised to 2 s.

use std::time::Duration;

use anyhow::{bail, Result};
use lockpick_workloads::etcd_gateway::{member_names, EtcdGateway};
use lockpick_workloads::Outcome;
use serde_json::json;

use super::ServiceSetup;
use super::{
    program_output, Launch, Leadership, LockService, Requirement, ServerBinForm, ServiceEntry,
};
use crate::runtime::{Node, Runtime};
use crate::service::support::Support;

pub const CLIENT_PORT: u16 = 2379;
pub const PEER_PORT: u16 = 2380;

pub static SERVICE: ServiceEntry = ServiceEntry {
    name: "etcd",
    about: "Debian's etcd-server, a 3-member cluster, data in memory",
    server_bin: ServerBinForm::Executable,
    // A Go program calls the vDSO itself, without libc: libfaketime cannot reach it, a
    // patched vDSO can.
    server_bin_example: "/opt/etcd-v3.5.17/etcd",
    server_clock: Support::Yes,
    clock_mover: super::entry::ClockMover::Vdso,
    leader: Support::Yes,
    persistence: Support::No(
        "etcd writes every change to its own log before it answers, whatever the knob says",
    ),
    connection: "each address is one member's client URL without its scheme (`http://` + \
                 address, port 2379): gRPC and the JSON gateway (`/v3/...`), no TLS, no \
                 authentication; the lock's name (`LOCKPICK_KEY`) is the program's prefix",
    // Start-up: three Go servers electing a leader.
    cost: super::entry::CellCost {
        startup_cores: 1.0,
        contention_cores: 0.15,
        memory_mb: 260,
    },
    // etcd's SIGTERM spends seconds handing its leadership over, which a run's end does not
    // need: nothing is read from the servers after the final read, and the data goes with them.
    stop_grace: std::time::Duration::from_millis(500),
};

pub struct EtcdService {
    endpoints: Vec<String>,
    /// The etcd the members run, once started.
    program: Option<std::path::PathBuf>,
}

impl Default for EtcdService {
    fn default() -> EtcdService {
        EtcdService::new()
    }
}

impl EtcdService {
    pub fn new() -> EtcdService {
        EtcdService {
            endpoints: Vec::new(),
            program: None,
        }
    }
}

impl LockService for EtcdService {
    fn name(&self) -> &'static str {
        SERVICE.name
    }

    /// `etcd --version`: `etcd Version: 3.4.23` on its first line.
    fn server_version(&self, runtime: &dyn Runtime, node: &Node) -> Option<String> {
        let text = program_output(runtime, node, self.program.as_ref()?, &["--version"])?;
        text.lines()
            .find_map(|line| line.strip_prefix("etcd Version:"))
            .map(|v| v.trim().to_string())
    }

    fn server_bin(&self) -> Option<std::path::PathBuf> {
        self.program.clone()
    }

    fn server_requirement(&self) -> &'static str {
        "etcd"
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement {
            program: "etcd",
            package: "etcd-server",
        }]
    }

    fn node_count(&self) -> usize {
        3
    }

    fn start(&mut self, setup: &mut ServiceSetup) -> Result<()> {
        let program = setup.server_program("etcd")?;
        self.program = Some(program.clone());
        let cluster: Vec<String> = setup
            .nodes
            .iter()
            .map(|n| format!("{}=http://{}:{PEER_PORT}", n.name, n.ip))
            .collect();
        let token = setup
            .scratch
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        for node in setup.nodes {
            let log = setup.logs.join(format!("etcd-{}.log", node.name));
            let client_url = format!("http://{}:{CLIENT_PORT}", node.ip);
            let peer_url = format!("http://{}:{PEER_PORT}", node.ip);
            let mut launch = Launch::new(node, program.clone(), log);
            launch
                .args(["--name", &node.name])
                .arg("--data-dir")
                .arg(setup.scratch.join(format!("etcd-{}", node.name)))
                .args(["--listen-client-urls", &client_url])
                .args(["--advertise-client-urls", &client_url])
                .args(["--listen-peer-urls", &peer_url])
                .args(["--initial-advertise-peer-urls", &peer_url])
                .args(["--initial-cluster", &cluster.join(",")])
                .args(["--initial-cluster-state", "new"])
                .args(["--initial-cluster-token", &token])
                .args(["--heartbeat-interval", "50", "--election-timeout", "500"]);
            setup.launch(launch, false)?;
            self.endpoints.push(format!("{}:{CLIENT_PORT}", node.ip));
        }
        let members = setup.nodes.len();
        for (node, endpoint) in setup.nodes.iter().zip(&self.endpoints) {
            let log = setup.logs.join(format!("etcd-{}.log", node.name));
            let endpoint = endpoint.clone();
            setup.wait_for("etcd", node, &log, move || healthy(&endpoint, members))?;
        }
        Ok(())
    }

    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    /// The `Date` header of the member's own `/version`, against the true time.
    fn clock_offset_ms(&self, runtime: &dyn Runtime, node: &Node) -> Option<i64> {
        let address = std::net::SocketAddr::from((node.ip, CLIENT_PORT));
        super::http_date::clock_offset_ms(runtime, node, address, "/version")
    }

    fn clock_resolution_ms(&self) -> i64 {
        super::http_date::RESOLUTION_MS
    }

    /// Each member's own `maintenance/status`, asked inside its node: the member that names
    /// itself as leader, with its raft term. A member cut off from the others may still believe
    /// it leads for a moment, so of two claims the later term wins.
    fn leader(&self, runtime: &dyn Runtime, servers: &[Node]) -> Option<Leadership> {
        servers
            .iter()
            .filter_map(|node| {
                let endpoint = format!("{}:{CLIENT_PORT}", node.ip);
                let (sender, answer) = std::sync::mpsc::channel();
                let asked = runtime.probe(
                    node,
                    Box::new(move || {
                        let _ = sender.send(status(&endpoint)?);
                        Ok(())
                    }),
                );
                let status = asked.ok().and_then(|()| answer.try_recv().ok())?;
                status.leads().then(|| Leadership {
                    node: node.name.clone(),
                    term: Some(status.raft_term),
                })
            })
            .max_by_key(|leadership| leadership.term)
    }
}

/// What one member says of itself in `maintenance/status`.
#[derive(Debug, PartialEq, Eq)]
struct MemberStatus {
    member_id: u64,
    leader: u64,
    raft_term: u64,
}

impl MemberStatus {
    /// The gateway's answer: 64-bit ids and counts come as strings (a member id may exceed
    /// i64), and a field at 0 is left out.
    fn of(answer: &serde_json::Value) -> Option<MemberStatus> {
        let number = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.parse().ok(),
            serde_json::Value::Number(n) => n.as_u64(),
            _ => None,
        };
        Some(MemberStatus {
            member_id: number(&answer["header"]["member_id"])?,
            leader: answer.get("leader").map_or(Some(0), number)?,
            raft_term: answer.get("raftTerm").map_or(Some(0), number)?,
        })
    }

    /// Whether the member names itself leader (0 is "no leader known").
    fn leads(&self) -> bool {
        self.leader != 0 && self.leader == self.member_id
    }
}

fn status(endpoint: &str) -> Result<MemberStatus> {
    let mut gateway = EtcdGateway::new(&[endpoint.to_string()], Duration::from_millis(500))
        .map_err(anyhow::Error::msg)?;
    match gateway.call("maintenance/status", json!({}), None) {
        Outcome::Ok(answer) => MemberStatus::of(&answer)
            .ok_or_else(|| anyhow::anyhow!("{endpoint} status has no member id: {answer}")),
        Outcome::Fail(e) | Outcome::Info(e) => bail!("status failed: {e}"),
    }
}

/// Ready: the member lists every member, and a linearizable read (which needs a leader)
/// succeeds.
fn healthy(endpoint: &str, members: usize) -> Result<()> {
    let mut gateway = EtcdGateway::new(&[endpoint.to_string()], Duration::from_millis(500))
        .map_err(anyhow::Error::msg)?;
    let names = member_names(&mut gateway).map_err(anyhow::Error::msg)?;
    if names.len() != members {
        bail!("member list shows {names:?}");
    }
    match gateway.call("kv/range", json!({ "key": "cmVhZHk=" }), None) {
        Outcome::Ok(_) => Ok(()),
        Outcome::Fail(e) | Outcome::Info(e) => bail!("read failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::MemberStatus;
    use serde_json::json;

    #[test]
    fn a_member_leads_when_it_names_itself_and_ids_beyond_i64_are_read() {
        let answer = json!({"header": {"member_id": "17293822569102704640", "raft_term": "7"},
                            "leader": "17293822569102704640", "raftTerm": "7"});
        let status = MemberStatus::of(&answer).expect("read");
        assert!(status.leads());
        assert_eq!(status.raft_term, 7);
        let follower = json!({"header": {"member_id": "5"}, "leader": "6", "raftTerm": "7"});
        assert!(!MemberStatus::of(&follower).unwrap().leads());
        let leaderless = json!({"header": {"member_id": "5"}, "raftTerm": "8"});
        assert!(!MemberStatus::of(&leaderless).unwrap().leads());
    }
}
