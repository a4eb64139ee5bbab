//! A three-server NATS JetStream cluster (Debian's nats-server), its stores in memory: the
//! servers the `nats-kv` lock's bucket is replicated on (Raft, three replicas).
//!
//! Each server listens for clients on 4222, for its peers on 6222 (every server routes to every
//! other) and answers HTTP monitoring on 8222: readiness (`/jsz` names a metadata leader of a
//! three-server cluster), the clock read-back (the `Date` header) and the leader the leader
//! nemeses aim at (the bucket's stream's, as `/jsz` names it) go through it. The bucket is made
//! at the start, its `max_age` the run's TTL, and the start returns once its stream has a
//! leader: before that no grant can be made and no leader fault aimed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use lockpick_workloads::nats_kv_session::{NatsKvSession, BUCKET};

use super::ServiceSetup;
use super::{
    program_output, Launch, Leadership, LockService, Requirement, ServerBinForm, ServiceEntry,
};
use crate::runtime::{Node, Runtime};
use crate::service::support::Support;

pub const CLIENT_PORT: u16 = 4222;
pub const ROUTE_PORT: u16 = 6222;
pub const MONITOR_PORT: u16 = 8222;
/// The JetStream cluster's name (every server must give the same).
const CLUSTER: &str = "lockpick";

pub static SERVICE: ServiceEntry = ServiceEntry {
    name: "nats",
    about: "Debian's nats-server, a 3-server JetStream cluster, stores in memory",
    server_bin: ServerBinForm::Executable,
    server_bin_example: "/opt/nats-server-v2.10.24/nats-server",
    // A Go program reads the clock through the vDSO, not libc: a patched vDSO moves it, and
    // with it the age each server removes a key's message at.
    server_clock: Support::Yes,
    clock_mover: super::entry::ClockMover::Vdso,
    // The leader aimed at is the bucket's stream's (the one that orders its writes), as the
    // servers' monitoring names it; JetStream gives no term, so the records carry none.
    leader: Support::Yes,
    persistence: Support::No(
        "JetStream writes every message to its replicas' stores before it acknowledges it, \
         whatever the knob says",
    ),
    connection: "each address is one server's client port (4222), the NATS protocol over plain \
                 TCP, no login, no TLS; a client may connect to all three. JetStream is on, and \
                 the KV bucket `lockpick` (3 replicas, its `max_age` the run's TTL, history 1) \
                 is there, empty: its stream is `KV_lockpick`, a key `k` is the subject \
                 `$KV.lockpick.k`",
    // Estimated, not measured (as Sentinel's and PostgreSQL's): three Go servers forming a
    // JetStream cluster and electing the bucket's stream leader at the start.
    cost: super::entry::CellCost {
        startup_cores: 1.0,
        contention_cores: 0.3,
        memory_mb: 200,
    },
    stop_grace: std::time::Duration::from_millis(3000),
};

#[derive(Default)]
pub struct NatsService {
    endpoints: Vec<String>,
    /// The nats-server the nodes run, once started.
    program: Option<PathBuf>,
}

impl NatsService {
    pub fn new() -> NatsService {
        NatsService::default()
    }
}

impl LockService for NatsService {
    fn name(&self) -> &'static str {
        SERVICE.name
    }

    /// `nats-server --version`: `nats-server: v2.9.10`.
    fn server_version(&self, runtime: &dyn Runtime, node: &Node) -> Option<String> {
        let text = program_output(runtime, node, self.program.as_ref()?, &["--version"])?;
        let version = text.split_whitespace().last()?;
        Some(version.trim_start_matches('v').to_string())
    }

    fn server_bin(&self) -> Option<PathBuf> {
        self.program.clone()
    }

    fn server_requirement(&self) -> &'static str {
        "nats-server"
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement {
            program: "nats-server",
            package: "nats-server",
        }]
    }

    fn node_count(&self) -> usize {
        3
    }

    fn start(&mut self, setup: &mut ServiceSetup) -> Result<()> {
        let program = setup.server_program("nats-server")?;
        self.program = Some(program.clone());
        let routes: Vec<String> = setup
            .nodes
            .iter()
            .map(|n| format!("nats://{}:{ROUTE_PORT}", n.ip))
            .collect();
        for node in setup.nodes {
            let log = setup.logs.join(format!("nats-{}.log", node.name));
            let mut launch = Launch::new(node, program.clone(), log);
            launch
                .args(["--addr", &node.ip.to_string()])
                .args(["--port", &CLIENT_PORT.to_string()])
                .args(["--http_port", &MONITOR_PORT.to_string()])
                .args(["--server_name", &node.name])
                .arg("--jetstream")
                .arg("--store_dir")
                .arg(setup.scratch.join(format!("nats-{}", node.name)))
                .args(["--cluster_name", CLUSTER])
                .args(["--cluster", &format!("nats://{}:{ROUTE_PORT}", node.ip)])
                .args(["--routes", &routes.join(",")]);
            setup.launch(launch, false)?;
            self.endpoints.push(format!("{}:{CLIENT_PORT}", node.ip));
        }
        let servers = setup.nodes.len();
        for node in setup.nodes {
            let log = setup.logs.join(format!("nats-{}.log", node.name));
            let monitor = SocketAddr::from((node.ip, MONITOR_PORT));
            setup.wait_for("nats-server", node, &log, move || {
                meta_leader_known(monitor, servers)
            })?;
        }
        let (endpoints, ttl) = (self.endpoints.clone(), setup.ttl);
        let first = setup.nodes.first().context("no node for the servers")?;
        let log = setup.logs.join(format!("nats-{}.log", first.name));
        setup.wait_for("the bucket", first, &log, move || {
            NatsKvSession::make_bucket(&endpoints, ttl, Duration::from_secs(2))
                .map_err(anyhow::Error::msg)
        })?;
        for node in setup.nodes {
            let log = setup.logs.join(format!("nats-{}.log", node.name));
            let monitor = SocketAddr::from((node.ip, MONITOR_PORT));
            setup.wait_for("the bucket's stream leader", node, &log, move || {
                stream_leader(monitor).map(|_| ())
            })?;
        }
        Ok(())
    }

    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    /// The `Date` header of the server's own monitoring endpoint (Go's net/http stamps it with
    /// time.Now(), the clock its messages age by), against the true time.
    fn clock_offset_ms(&self, runtime: &dyn Runtime, node: &Node) -> Option<i64> {
        let address = SocketAddr::from((node.ip, MONITOR_PORT));
        super::http_date::clock_offset_ms(runtime, node, address, "/varz")
    }

    fn clock_resolution_ms(&self) -> i64 {
        super::http_date::RESOLUTION_MS
    }

    /// The leader of the bucket's stream as most of the answering servers name it in their
    /// `/jsz` (each asked inside its node); `None` before a client has made the bucket, during
    /// an election, or when they disagree. JetStream reports no term.
    fn leader(&self, runtime: &dyn Runtime, servers: &[Node]) -> Option<Leadership> {
        let named: Vec<String> = servers
            .iter()
            .filter_map(|node| {
                let monitor = SocketAddr::from((node.ip, MONITOR_PORT));
                let (sender, answer) = std::sync::mpsc::channel();
                let asked = runtime.probe(
                    node,
                    Box::new(move || {
                        let _ = sender.send(stream_leader(monitor)?);
                        Ok(())
                    }),
                );
                asked.ok().and_then(|()| answer.try_recv().ok())
            })
            .collect();
        let node = most_named(&named)?;
        Some(Leadership { node, term: None })
    }
}

/// The name most of `named` give, if more than half of them give it.
fn most_named(named: &[String]) -> Option<String> {
    named
        .iter()
        .find(|name| named.iter().filter(|n| n == name).count() * 2 > named.len())
        .cloned()
}

/// The leader of the bucket's stream, as the server answering `/jsz` at `monitor` names it.
fn stream_leader(monitor: SocketAddr) -> Result<String> {
    let body = super::http_date::body(monitor, "/jsz?accounts=true&streams=true")?;
    let jsz: serde_json::Value = serde_json::from_str(&body)?;
    let stream = format!("KV_{BUCKET}");
    let leader = jsz["account_details"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|account| account["stream_detail"].as_array())
        .flatten()
        .find(|detail| detail["name"] == stream.as_str())
        .and_then(|detail| detail["cluster"]["leader"].as_str())
        .filter(|leader| !leader.is_empty());
    match leader {
        Some(leader) => Ok(leader.to_string()),
        None => bail!("{monitor} names no leader of {stream}"),
    }
}

/// Ready: the server's `/jsz` names the JetStream metadata leader of a cluster of `servers`
/// (before that, a bucket cannot be made).
fn meta_leader_known(monitor: SocketAddr, servers: usize) -> Result<()> {
    let body = super::http_date::body(monitor, "/jsz")?;
    let jsz: serde_json::Value = serde_json::from_str(&body)?;
    let meta = &jsz["meta_cluster"];
    let leader = meta["leader"].as_str().unwrap_or_default();
    if leader.is_empty() || meta["cluster_size"].as_u64() != Some(servers as u64) {
        bail!("no JetStream metadata leader yet: {meta}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::most_named;

    #[test]
    fn the_leader_is_the_one_most_servers_name() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(most_named(&names(&["n2", "n2", "n1"])), Some("n2".into()));
        assert_eq!(most_named(&names(&["n2", "n1"])), None);
        assert_eq!(most_named(&names(&["n3"])), Some("n3".into()));
        assert_eq!(most_named(&[]), None);
    }
}
