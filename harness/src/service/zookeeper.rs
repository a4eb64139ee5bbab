//! A 3-server ZooKeeper ensemble (Debian's zookeeper, `QuorumPeerMain` on a small heap), data in
//! memory. tickTime 500 ms makes the shortest session 1 s (2 ticks).

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::{
    Launch, Leadership, LockService, Requirement, ServerBinForm, ServiceEntry, ServiceSetup,
};
use crate::runtime::{Node, Runtime};
use crate::service::support::Support;

pub const CLIENT_PORT: u16 = 2181;
/// Debian's install folder: its `zookeeper.jar` names the jars it needs.
const JARS: &str = "/usr/share/java";
const JAR: &str = "/usr/share/java/zookeeper.jar";
pub const TICK_MS: u64 = 500;
/// The AdminServer's port, opened only when a clock nemesis runs: its `Date` header is the
/// server's clock read back.
pub const ADMIN_PORT: u16 = 8080;
/// Jetty's servlet API, which Debian's `zookeeper.jar` does not name (the AdminServer needs it).
const SERVLET_API: &str = "servlet-api.jar";

pub static SERVICE: ServiceEntry = ServiceEntry {
    name: "zookeeper",
    about: "Debian's zookeeper, a 3-server ensemble on a small heap, data in memory",
    // A Java program: --server-bin names the folder of its jars.
    server_bin: ServerBinForm::Folder {
        unusable: |folder| match class_path(folder) {
            Some(_) => None,
            None => Some(format!(
                "{} holds no zookeeper*.jar (name the folder of ZooKeeper's jars, or an install \
                 folder with lib/)",
                folder.display()
            )),
        },
    },
    // Its JVM ran 7 times slower under libfaketime (3.4 s instead of 0.5 s to start one
    // server; three lost their elections): its running vDSO is patched instead, which costs
    // nothing until a clock moves.
    server_bin_example: "/opt/apache-zookeeper-3.9.2-bin",
    server_clock: Support::Yes,
    clock_mover: super::entry::ClockMover::Vdso,
    leader: Support::Yes,
    persistence: Support::No(
        "ZooKeeper writes every change to its own log before it answers, whatever the knob says",
    ),
    connection: "each address is one server's client port (2181); a connect string is them \
                 joined by commas; no authentication, no chroot; the lock's path is the \
                 program's to choose (`/` + `LOCKPICK_KEY`, say)",
    // Start-up: three JVMs loading classes keep both cores busy for ~1.5 s.
    cost: super::entry::CellCost {
        startup_cores: 2.0,
        contention_cores: 0.2,
        memory_mb: 330,
    },
    stop_grace: std::time::Duration::from_millis(3000),
};

pub struct ZookeeperService {
    endpoints: Vec<String>,
    /// The folder of jars the servers run, once started.
    jars: Option<PathBuf>,
}

impl Default for ZookeeperService {
    fn default() -> ZookeeperService {
        ZookeeperService::new()
    }
}

impl ZookeeperService {
    pub fn new() -> ZookeeperService {
        ZookeeperService {
            endpoints: Vec::new(),
            jars: None,
        }
    }

    /// Waits for every server only once all are launched: an ensemble serves no one until a
    /// quorum has started.
    fn wait_until_serving(&self, setup: &mut ServiceSetup) -> Result<()> {
        for (node, endpoint) in setup.nodes.iter().zip(&self.endpoints) {
            let log = setup.logs.join(format!("zookeeper-{}.log", node.name));
            let address: SocketAddr = endpoint.parse()?;
            setup.wait_for("ZooKeeper", node, &log, move || serving(address))?;
            if setup.server_clock {
                let admin = SocketAddr::from((node.ip, ADMIN_PORT));
                setup.wait_for("ZooKeeper's AdminServer", node, &log, move || {
                    super::http_date::dated(admin, "/commands/ruok")
                })?;
            }
        }
        Ok(())
    }
}

/// The folder of jars the servers run and their class path, the servlet API added when the
/// AdminServer opens: chosen once, before any server is configured.
fn server_class_path(setup: &ServiceSetup) -> Result<(PathBuf, String)> {
    // Without --server-bin, Debian's layout, as the node sees it (in a container, the
    // image's files, which the host cannot look into).
    let (jars, class_path) = match setup.server_bin {
        Some(folder) => (
            folder.to_path_buf(),
            class_path(folder)
                .with_context(|| format!("{} holds no ZooKeeper jars", folder.display()))?,
        ),
        None => (PathBuf::from(JARS), class_path_debian(Path::new(JARS))),
    };
    let servlet_api = jars.join(SERVLET_API);
    let class_path = if setup.server_clock && servlet_api.is_file() {
        format!("{class_path}:{}", servlet_api.display())
    } else {
        class_path
    };
    Ok((jars, class_path))
}

/// Server `i`'s folder, `myid` and `zoo.cfg` (`servers` lists the whole ensemble); returns the
/// config's path. Its own step: the file is the server's whole configuration.
fn write_config(setup: &ServiceSetup, i: usize, node: &Node, servers: &str) -> Result<PathBuf> {
    let admin = if setup.server_clock {
        format!("admin.enableServer=true\nadmin.serverPort={ADMIN_PORT}\n")
    } else {
        "admin.enableServer=false\n".to_string()
    };
    let dir = setup.scratch.join(format!("zookeeper-{}", node.name));
    fs::create_dir_all(dir.join("data"))?;
    crate::files::safe_write::write_new(&dir.join("data/myid"), format!("{}\n", i + 1))?;
    let config = dir.join("zoo.cfg");
    crate::files::safe_write::write_new(
        &config,
        format!(
            "tickTime={TICK_MS}\ninitLimit=20\nsyncLimit=10\ndataDir={}\n\
             clientPort={CLIENT_PORT}\nclientPortAddress={}\n{servers}\
             4lw.commands.whitelist=ruok,srvr,stat,mntr,conf,cons\n\
             {admin}admin.serverAddress={}\n",
            dir.join("data").display(),
            node.ip,
            node.ip
        ),
    )?;
    Ok(config)
}

impl LockService for ZookeeperService {
    fn name(&self) -> &'static str {
        SERVICE.name
    }

    /// `srvr`'s first line: `Zookeeper version: 3.8.0-debian--1, built on ...`.
    fn server_version(&self, runtime: &dyn Runtime, node: &Node) -> Option<String> {
        let address = SocketAddr::from((node.ip, CLIENT_PORT));
        let (sender, answer) = std::sync::mpsc::channel();
        runtime
            .probe(
                node,
                Box::new(move || {
                    let _ = sender.send(srvr(address)?);
                    Ok(())
                }),
            )
            .ok()?;
        let text = answer.try_recv().ok()?;
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("Zookeeper version:"))?;
        let version = line.split(',').next()?.trim();
        // Debian's build leaves its commit placeholder unfilled: `3.8.0-${mvngit.commit.id}`.
        Some(version.split("-${").next()?.to_string())
    }

    fn server_bin(&self) -> Option<PathBuf> {
        self.jars.clone()
    }

    fn server_requirement(&self) -> &'static str {
        JAR
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![
            Requirement {
                program: "java",
                package: "default-jre-headless",
            },
            Requirement {
                program: JAR,
                package: "zookeeper",
            },
        ]
    }

    fn node_count(&self) -> usize {
        3
    }

    fn start(&mut self, setup: &mut ServiceSetup) -> Result<()> {
        let first = setup.nodes.first().context("no node for ZooKeeper")?;
        let java = setup
            .runtime
            .find_program(first, "java")
            .context("java is not installed")?;
        let (jars, class_path) = server_class_path(setup)?;
        self.jars = Some(jars);
        let servers: String = setup
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| format!("server.{}={}:2888:3888\n", i + 1, n.ip))
            .collect();
        for (i, node) in setup.nodes.iter().enumerate() {
            let config = write_config(setup, i, node, &servers)?;
            let log = setup.logs.join(format!("zookeeper-{}.log", node.name));
            let mut launch = Launch::new(node, java.clone(), log);
            launch
                .args([
                    "-Xms32m",
                    "-Xmx128m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    // In a container the server keeps the controller's cgroup, which the
                    // container's /sys/fs/cgroup does not hold: the JVM's container probe
                    // would fail on it. The heap is sized above anyway.
                    "-XX:-UseContainerSupport",
                ])
                .arg("-Djava.net.preferIPv4Stack=true")
                .args(["-cp", &class_path])
                .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
                .arg(&config);
            setup.launch(launch, false)?;
            self.endpoints.push(format!("{}:{CLIENT_PORT}", node.ip));
        }
        self.wait_until_serving(setup)
    }

    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    /// The `Date` header of the AdminServer's `ruok` (open when a clock nemesis runs),
    /// against the true time.
    fn clock_offset_ms(&self, runtime: &dyn Runtime, node: &Node) -> Option<i64> {
        let address = SocketAddr::from((node.ip, ADMIN_PORT));
        super::http_date::clock_offset_ms(runtime, node, address, "/commands/ruok")
    }

    fn clock_resolution_ms(&self) -> i64 {
        super::http_date::RESOLUTION_MS
    }

    /// Each server's own `srvr`, asked inside its node: the one whose mode is `leader`, with
    /// its epoch (the high 32 bits of its last zxid). A leader cut off from its followers
    /// answers so until it gives up, so of two claims the later epoch wins.
    fn leader(&self, runtime: &dyn Runtime, servers: &[Node]) -> Option<Leadership> {
        servers
            .iter()
            .filter_map(|node| {
                let address = SocketAddr::from((node.ip, CLIENT_PORT));
                let (sender, answer) = std::sync::mpsc::channel();
                let asked = runtime.probe(
                    node,
                    Box::new(move || {
                        let _ = sender.send(srvr(address)?);
                        Ok(())
                    }),
                );
                let text = asked.ok().and_then(|()| answer.try_recv().ok())?;
                let term = leader_epoch(&text)?;
                Some(Leadership {
                    node: node.name.clone(),
                    term: Some(term),
                })
            })
            .max_by_key(|leadership| leadership.term)
    }
}

/// The epoch of a server whose `srvr` says `Mode: leader`; `None` for any other mode.
fn leader_epoch(srvr: &str) -> Option<u64> {
    let field = |name: &str| {
        srvr.lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
    };
    if field("Mode:")? != "leader" {
        return None;
    }
    let zxid = field("Zxid:")?;
    let zxid = u64::from_str_radix(zxid.trim_start_matches("0x"), 16).ok()?;
    Some(zxid >> 32)
}

/// Ready: `srvr` reports a mode (leader or follower); `ruok` answers too early.
fn serving(address: SocketAddr) -> Result<()> {
    let answer = srvr(address)?;
    if !answer.contains("Mode:") {
        bail!("srvr answered {answer:?}");
    }
    Ok(())
}

/// The four-letter word `srvr`'s answer.
fn srvr(address: SocketAddr) -> Result<String> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_millis(500))?;
    stream.set_read_timeout(Some(Duration::from_millis(500)))?;
    stream.write_all(b"srvr")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The Java class path of the ZooKeeper install in `folder`: Debian's layout
/// (`/usr/share/java`, where `zookeeper.jar` names its own dependencies and a logger jar is
/// added) or Apache's binary release (its `lib/` holds every jar, the logger included).
pub fn class_path(folder: &Path) -> Option<String> {
    if folder.join("zookeeper.jar").is_file() {
        return Some(class_path_debian(folder));
    }
    [folder.join("lib"), folder.to_path_buf()]
        .into_iter()
        .find(|dir| holds_zookeeper_jar(dir))
        .map(|dir| format!("{}/*", dir.display()))
}

/// Debian's class path in `folder`: `zookeeper.jar` (whose manifest names its dependencies)
/// and a logger.
pub fn class_path_debian(folder: &Path) -> String {
    let jar = folder.join("zookeeper.jar");
    let logger = folder.join("slf4j-simple.jar");
    format!("{}:{}", jar.display(), logger.display())
}

fn holds_zookeeper_jar(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        name.starts_with("zookeeper-3") && name.ends_with(".jar")
    })
}

#[cfg(test)]
mod tests {
    use super::leader_epoch;

    #[test]
    fn the_leader_s_epoch_is_the_high_half_of_its_zxid() {
        let leader = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nZxid: 0x300000002\n\
                      Mode: leader\nNode count: 5\n";
        assert_eq!(leader_epoch(leader), Some(3));
        let follower = leader.replace("Mode: leader", "Mode: follower");
        assert_eq!(leader_epoch(&follower), None);
        assert_eq!(
            leader_epoch("This ZooKeeper instance is not currently serving"),
            None
        );
    }
}
