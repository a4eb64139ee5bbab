//! A replicated Redis watched by Sentinels: three nodes, each running Debian's redis-server (the
//! first the primary, the others `replicaof` it) and a Sentinel (the same binary with
//! `--sentinel`, quorum 2), data in memory. The down-after and failover timeouts are short so
//! a failover happens within a run's few seconds; they are the setup line's `service_facts`.
//!
//! Each node runs its two processes as a machine would: one launch, `sh` starting the Sentinel
//! in the background and then exec'ing into the data server, so that the node's registered
//! server process is redis-server itself (its pid is the one the run signals and reads) and
//! the Sentinel is its child in the same process group. A node fault then hits both: a pause
//! stops the group and the tree, a kill takes the tree, a partition is the node's own network,
//! and a restart runs the launch again, both processes with it. The Sentinel is started
//! under `setpriv --pdeathsig KILL`, so it never outlives its node's server, even when the
//! controller is killed and only its direct children get the kernel's signal.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use lockpick_workloads::redis_sentinel_lock::{MASTER_NAME, SENTINEL_PORT};
use serde_json::{json, Value};

use super::{program_output, Launch, Leadership, LockService, Requirement, ServiceSetup};
use super::{ServerBinForm, ServiceEntry};
use crate::runtime::{Node, Runtime};
use crate::service::redis_sentinel_queries::{self, SentinelView};
use crate::service::support::Support;

pub const PORT: u16 = 6379;
pub const NODES: usize = 3;
/// How long a Sentinel waits for an unanswering primary before it calls it down.
pub const DOWN_AFTER_MS: u64 = 1000;
/// How long a failover may take before another is tried (and twice it between two tries).
pub const FAILOVER_TIMEOUT_MS: u64 = 3000;
/// How many Sentinels must agree the primary is down.
pub const QUORUM: usize = 2;

pub static SERVICE: ServiceEntry = ServiceEntry {
    name: "redis-sentinel",
    about: "Debian's redis-server, a primary and 2 replicas, a Sentinel on each node, in memory",
    server_bin: ServerBinForm::Executable,
    server_bin_example: "/opt/redis-7.4/redis-server",
    server_clock: Support::No(
        "each node runs two processes (redis-server and its Sentinel) and the clock nemeses \
         move one server process per node",
    ),
    clock_mover: super::entry::ClockMover::Faketime,
    leader: Support::Yes,
    persistence: Support::Yes,
    connection: "each address is one redis-server (port 6379) of a primary and its replicas, \
                 no password; a Sentinel on each node names the primary (its lock lends no \
                 servers to client programs)",
    // Start-up: six redis-server processes, three of them Sentinels.
    cost: super::entry::CellCost {
        startup_cores: 0.5,
        contention_cores: 0.3,
        memory_mb: 200,
    },
    stop_grace: std::time::Duration::from_millis(3000),
};

/// Starts the node's Sentinel in the background, then becomes its redis-server: `$1` is the
/// program, `$2` the Sentinel's configuration, the rest the data server's arguments.
const NODE_SCRIPT: &str = r#"program=$1; conf=$2; shift 2
setpriv --pdeathsig KILL -- "$program" "$conf" --sentinel &
exec "$program" "$@""#;

pub struct SentinelService {
    endpoints: Vec<String>,
    /// The redis-server the nodes run, once started.
    program: Option<PathBuf>,
}

impl Default for SentinelService {
    fn default() -> SentinelService {
        SentinelService::new()
    }
}

impl SentinelService {
    pub fn new() -> SentinelService {
        SentinelService {
            endpoints: Vec::new(),
            program: None,
        }
    }
}

impl LockService for SentinelService {
    fn name(&self) -> &'static str {
        SERVICE.name
    }

    fn server_version(&self, runtime: &dyn Runtime, node: &Node) -> Option<String> {
        let text = program_output(runtime, node, self.program.as_ref()?, &["--version"])?;
        text.split_whitespace()
            .find_map(|word| word.strip_prefix("v="))
            .map(str::to_string)
    }

    fn server_bin(&self) -> Option<PathBuf> {
        self.program.clone()
    }

    fn server_requirement(&self) -> &'static str {
        "redis-server"
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![
            Requirement {
                program: "redis-server",
                package: "redis-server",
            },
            Requirement {
                program: "setpriv",
                package: "util-linux",
            },
        ]
    }

    fn node_count(&self) -> usize {
        NODES
    }

    fn start(&mut self, setup: &mut ServiceSetup) -> Result<()> {
        let program = setup.server_program("redis-server")?;
        self.program = Some(program.clone());
        let first = setup.nodes.first().context("no node for Redis")?;
        let shell = setup
            .runtime
            .find_program(first, "sh")
            .context("sh is missing on the nodes")?;
        let primary = first.ip;
        for (i, node) in setup.nodes.iter().enumerate() {
            let conf = sentinel_conf(setup, node)?;
            // A folder per server, and replication without files: a server that restarts must
            // find no RDB file of anyone's (it would load it), as a server without persistence;
            // with --persistence, the append-only file Redis's own words set up there.
            let kept = if setup.persistence.keeps_data() {
                super::redis::persistence_args(setup, node)?
            } else {
                let dir = setup.scratch.join(format!("redis-{}", node.name));
                fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
                let mut words: Vec<std::ffi::OsString> =
                    ["--save", "", "--appendonly", "no", "--dir"]
                        .map(Into::into)
                        .to_vec();
                words.push(dir.into_os_string());
                words
            };
            let log = data_log(setup.logs, node);
            let mut launch = Launch::new(node, shell.clone(), log.clone());
            launch
                .args(["-c", NODE_SCRIPT, "sh"])
                .arg(&program)
                .arg(&conf)
                .args(["--bind", &node.ip.to_string()])
                .args(["--port", &PORT.to_string()])
                .args(["--protected-mode", "no"])
                .args(["--daemonize", "no"])
                .args([
                    "--repl-diskless-sync",
                    "yes",
                    "--repl-diskless-sync-delay",
                    "0",
                ])
                .args(["--repl-diskless-load", "swapdb"])
                .args(kept)
                .arg("--logfile")
                .arg(&log);
            if i > 0 {
                launch.args(["--replicaof", &primary.to_string(), &PORT.to_string()]);
            }
            setup.launch(launch, false)?;
            self.endpoints.push(format!("{}:{PORT}", node.ip));
        }
        let want = SentinelView {
            primary: format!("{primary}:{PORT}"),
            sentinels: NODES - 1,
            replicas: NODES - 1,
        };
        for (i, node) in setup.nodes.iter().enumerate() {
            let log = data_log(setup.logs, node);
            let data = format!("{}:{PORT}", node.ip);
            let replica = i > 0;
            setup.wait_for("redis-server", node, &log, move || {
                redis_sentinel_queries::replication_ready(&data, replica)
            })?;
        }
        for node in setup.nodes {
            let log = sentinel_log(setup.logs, node);
            let sentinel = format!("{}:{SENTINEL_PORT}", node.ip);
            let want = want.clone();
            setup.wait_for("the Sentinel", node, &log, move || {
                let view = redis_sentinel_queries::view(&sentinel)?;
                if view != want {
                    bail!("the Sentinel sees {view:?}, not yet {want:?}");
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    /// The primary most of the answering Sentinels name (more than half of them), and the
    /// highest config epoch among those.
    fn leader(&self, runtime: &dyn Runtime, servers: &[Node]) -> Option<Leadership> {
        let answers: Vec<(String, u64)> = servers
            .iter()
            .filter_map(|node| redis_sentinel_queries::ask_in(runtime, node))
            .collect();
        let (address, term) = redis_sentinel_queries::majority(&answers)?;
        let ip = address.rsplit_once(':')?.0;
        let node = servers.iter().find(|n| n.ip.to_string() == ip)?;
        Some(Leadership {
            node: node.name.clone(),
            term: Some(term),
        })
    }

    fn facts(&self) -> Value {
        json!({
            "down_after_ms": DOWN_AFTER_MS,
            "failover_timeout_ms": FAILOVER_TIMEOUT_MS,
            "quorum": QUORUM,
        })
    }
}

fn data_log(logs: &Path, node: &Node) -> PathBuf {
    logs.join(format!("redis-{}.log", node.name))
}

fn sentinel_log(logs: &Path, node: &Node) -> PathBuf {
    logs.join(format!("sentinel-{}.log", node.name))
}

/// The node's Sentinel configuration, in a folder of its own in the run's scratch: Sentinel
/// rewrites the file as it learns (its id, the others, the current primary and epoch), so a
/// restarted Sentinel starts from what it had learnt, as on a machine's disk.
fn sentinel_conf(setup: &ServiceSetup, node: &Node) -> Result<PathBuf> {
    let dir = setup.scratch.join(format!("sentinel-{}", node.name));
    fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let conf = dir.join("sentinel.conf");
    let primary = setup.nodes.first().context("no node for Redis")?.ip;
    // The replicas are named from the start: a Sentinel would otherwise find them only in
    // the primary's INFO, which it reads every 10 s.
    let replicas: String = (setup.nodes.iter().skip(1))
        .map(|n| format!("sentinel known-replica {MASTER_NAME} {} {PORT}\n", n.ip))
        .collect();
    let text = format!(
        "port {SENTINEL_PORT}\nbind {ip}\nprotected-mode no\ndaemonize no\ndir {dir}\n\
         logfile {log}\n\
         sentinel monitor {MASTER_NAME} {primary} {PORT} {QUORUM}\n\
         sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n\
         sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}\n\
         sentinel parallel-syncs {MASTER_NAME} 1\n{replicas}",
        ip = node.ip,
        dir = dir.display(),
        log = sentinel_log(setup.logs, node).display(),
    );
    crate::files::safe_write::write_new(&conf, text)?;
    Ok(conf)
}

/// How long a query of one Sentinel or server may take.
pub const QUERY_TIMEOUT: Duration = Duration::from_millis(500);
