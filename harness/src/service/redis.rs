//! Debian's redis-server, one per node, without persistence unless `--persistence` asks: the
//! setup of a typical Redis lease (one node) or of Redlock (five independent nodes that never
//! talk to each other).

use std::time::Duration;

use std::ffi::OsString;

use anyhow::{bail, Context, Result};

use super::persistence::Persistence;
use super::ServiceSetup;
use super::{program_output, Launch, LockService, Requirement, ServerBinForm, ServiceEntry};
use crate::runtime::{Node, Runtime};
use crate::service::support::Support;

pub const PORT: u16 = 6379;

pub static SERVICE: ServiceEntry = ServiceEntry {
    name: "redis",
    about: "Debian's redis-server, one per node, without persistence unless --persistence asks",
    server_bin: ServerBinForm::Executable,
    // redis-server reads the time through libc: it runs under libfaketime.
    server_bin_example: "/opt/redis-7.4/redis-server",
    server_clock: Support::Yes,
    clock_mover: super::entry::ClockMover::Faketime,
    leader: Support::No(
        "its servers lead nothing: each redis-server stands alone, with no replica",
    ),
    persistence: Support::Yes,
    connection: "each address is one redis-server (port 6379), RESP over plain TCP, no \
                 password, no TLS, database 0; nothing is made ready: the lock's key \
                 (`LOCKPICK_KEY`) is the program's to set",
    // Start-up: five redis-servers answer PING ~0.07 s after launch: nothing to gate.
    cost: super::entry::CellCost {
        startup_cores: 0.0,
        contention_cores: 0.4,
        memory_mb: 170,
    },
    stop_grace: std::time::Duration::from_millis(3000),
};

pub struct RedisService {
    nodes: usize,
    endpoints: Vec<String>,
    /// The redis-server the nodes run, once started.
    program: Option<std::path::PathBuf>,
}

impl RedisService {
    pub fn new(nodes: usize) -> RedisService {
        RedisService {
            nodes,
            endpoints: Vec::new(),
            program: None,
        }
    }
}

impl LockService for RedisService {
    fn name(&self) -> &'static str {
        SERVICE.name
    }

    /// `redis-server --version`: `Redis server v=7.0.15 sha=...`.
    fn server_version(&self, runtime: &dyn Runtime, node: &Node) -> Option<String> {
        let text = program_output(runtime, node, self.program.as_ref()?, &["--version"])?;
        parse_version(&text)
    }

    fn server_bin(&self) -> Option<std::path::PathBuf> {
        self.program.clone()
    }

    fn server_requirement(&self) -> &'static str {
        "redis-server"
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement {
            program: "redis-server",
            package: "redis-server",
        }]
    }

    fn node_count(&self) -> usize {
        self.nodes
    }

    fn start(&mut self, setup: &mut ServiceSetup) -> Result<()> {
        let program = setup.server_program("redis-server")?;
        self.program = Some(program.clone());
        for node in setup.nodes {
            let log = setup.logs.join(format!("redis-{}.log", node.name));
            let mut launch = Launch::new(node, program.clone(), log.clone());
            launch
                .args(["--bind", &node.ip.to_string()])
                .args(["--port", &PORT.to_string()])
                .args(persistence_args(setup, node)?)
                .args(["--protected-mode", "no", "--daemonize", "no"])
                .arg("--logfile")
                .arg(&log);
            if setup.faketime {
                // jemalloc's background thread calls the clock before libfaketime is ready.
                launch.args(["--jemalloc-bg-thread", "no"]);
            }
            setup.launch(launch, true)?;
            self.endpoints.push(format!("{}:{PORT}", node.ip));
        }
        for (node, endpoint) in setup.nodes.iter().zip(&self.endpoints) {
            let log = setup.logs.join(format!("redis-{}.log", node.name));
            let url = format!("redis://{endpoint}/");
            setup.wait_for("redis-server", node, &log, move || ping(&url))?;
        }
        Ok(())
    }

    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    /// Redis's `TIME`, read inside the server's node, against the true time.
    fn clock_offset_ms(&self, runtime: &dyn Runtime, node: &Node) -> Option<i64> {
        let endpoint = format!("{}:{PORT}", node.ip);
        let url = format!("redis://{endpoint}/");
        let (sender, answer) = std::sync::mpsc::channel();
        runtime
            .probe(
                node,
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
}

/// The words that make the redis-server on `node` keep its data, or not, as `--persistence`
/// asks. An append-only file lives in a folder of the server's own under the run's scratch
/// (`redis-<node>`, made here and removed with the run; the Docker runtime mounts the scratch
/// at the same path), so a restart with the same words reads back what it wrote.
/// RDB snapshots stay off either way: a snapshot taken between a grant and a kill would be one
/// more, untimed, way to keep a key.
pub fn persistence_args(setup: &ServiceSetup, node: &Node) -> Result<Vec<OsString>> {
    let fsync = match setup.persistence {
        Persistence::None => None,
        Persistence::AofEverysec => Some("everysec"),
        Persistence::AofAlways => Some("always"),
    };
    let mut args: Vec<OsString> = ["--save", ""].map(OsString::from).to_vec();
    let dir = match fsync {
        // Nothing is written: every server may share the scratch as its working folder.
        None => {
            args.extend(["--appendonly", "no"].map(OsString::from));
            setup.scratch.to_path_buf()
        }
        Some(fsync) => {
            args.extend(["--appendonly", "yes", "--appendfsync", fsync].map(OsString::from));
            // Its own folder: two servers appending to one file would corrupt it.
            let dir = setup.scratch.join(format!("redis-{}", node.name));
            std::fs::create_dir(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            dir
        }
    };
    args.extend([OsString::from("--dir"), dir.into_os_string()]);
    Ok(args)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn ping(url: &str) -> Result<()> {
    let timeout = Duration::from_millis(500);
    let mut connection = redis::Client::open(url)?.get_connection_with_timeout(timeout)?;
    connection.set_read_timeout(Some(timeout))?;
    let reply: String = redis::cmd("PING").query(&mut connection)?;
    if reply != "PONG" {
        bail!("PING answered {reply:?}");
    }
    Ok(())
}

/// The `v=` word of `redis-server --version`.
fn parse_version(text: &str) -> Option<String> {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix("v="))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn the_version_is_the_v_word() {
        let text = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=1\n";
        assert_eq!(parse_version(text).as_deref(), Some("7.0.15"));
        assert_eq!(parse_version("no version here"), None);
    }
}
