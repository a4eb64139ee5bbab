//! A three-server NATS JetStream cluster (Debian's nats-server), its stores in memory: the
//! servers the `nats-kv` lock's bucket is replicated on (Raft, three replicas).
//!
//! Each server listens for clients on 4222, for its peers on 6222 (every server routes to every
//! other) and answers HTTP monitoring on 8222: readiness (`/jsz` names a metadata leader of a
//! three-server cluster) and the clock read-back (the `Date` header) go through it. The bucket
//! itself is made by the first client, since its `max_age` is the run's TTL.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};

use super::ServiceSetup;
use super::{program_output, Launch, LockService, Requirement, ServerBinForm, ServiceEntry};
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
    leader: Support::No(
        "JetStream's monitoring names each stream's leader but no term to tell a moved \
         leadership from a kept one; lockpick does not aim at it yet",
    ),
    persistence: Support::No(
        "JetStream writes every message to its replicas' stores before it acknowledges it, \
         whatever the knob says",
    ),
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
}

/// Ready: the server's `/jsz` names the JetStream metadata leader of a cluster of `servers`
/// (before that, a bucket cannot be made).
fn meta_leader_known(monitor: SocketAddr, servers: usize) -> Result<()> {
    let body = get_body(monitor, "/jsz")?;
    let jsz: serde_json::Value = serde_json::from_str(&body)?;
    let meta = &jsz["meta_cluster"];
    let leader = meta["leader"].as_str().unwrap_or_default();
    if leader.is_empty() || meta["cluster_size"].as_u64() != Some(servers as u64) {
        bail!("no JetStream metadata leader yet: {meta}");
    }
    Ok(())
}

/// The body of the answer to `GET path` (HTTP/1.0: the server closes when done).
fn get_body(address: SocketAddr, path: &str) -> Result<String> {
    let timeout = Duration::from_millis(500);
    let mut stream = TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n")?;
    let mut reply = Vec::new();
    stream.take(256 * 1024).read_to_end(&mut reply)?;
    let reply = String::from_utf8_lossy(&reply);
    match reply.split_once("\r\n\r\n") {
        Some((head, body))
            if head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200") =>
        {
            Ok(body.to_string())
        }
        _ => bail!("{address}{path} did not answer 200"),
    }
}
