//! Debian's redis-server, one per node, without persistence: the setup of a typical Redis lease.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::{find_program, wait_until_ready, LockService, Requirement};
use crate::children::{Children, Role};
use crate::runtime::{Node, Runtime};

pub const PORT: u16 = 6379;

pub struct RedisService {
    nodes: usize,
    endpoints: Vec<String>,
}

impl RedisService {
    pub fn new(nodes: usize) -> RedisService {
        RedisService {
            nodes,
            endpoints: Vec::new(),
        }
    }
}

impl LockService for RedisService {
    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement {
            program: "redis-server",
            package: "redis-server",
        }]
    }

    fn node_count(&self) -> usize {
        self.nodes
    }

    fn start(
        &mut self,
        runtime: &dyn Runtime,
        nodes: &[Node],
        logs: &Path,
        children: &mut Children,
    ) -> Result<()> {
        let program = find_program("redis-server").context("redis-server is not installed")?;
        for node in nodes {
            let log = logs.join(format!("redis-{}.log", node.name));
            let child = runtime
                .command(node, &program)?
                .args(["--bind", &node.ip.to_string()])
                .args(["--port", &PORT.to_string()])
                .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
                .args(["--daemonize", "no"])
                .arg("--dir")
                .arg(logs)
                .arg("--logfile")
                .arg(&log)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("cannot start redis-server")?;
            children.add(Role::Server(node.name.clone()), child);
            self.endpoints.push(format!("{}:{PORT}", node.ip));
        }
        for (node, endpoint) in nodes.iter().zip(&self.endpoints) {
            let log = logs.join(format!("redis-{}.log", node.name));
            let url = format!("redis://{endpoint}/");
            wait_until_ready(
                &format!("redis-server on {}", node.name),
                &log,
                Duration::from_secs(10),
                || {
                    if children.has_exited(&Role::Server(node.name.clone())) {
                        bail!("redis-server exited");
                    }
                    let url = url.clone();
                    runtime.probe(node, Box::new(move || ping(&url)))
                },
            )?;
        }
        Ok(())
    }

    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    fn token(&self) -> &'static str {
        "none"
    }
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
