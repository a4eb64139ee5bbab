//! One MariaDB server (Debian's mariadb-server), its data in memory: the server the `mariadb`
//! lock (`GET_LOCK`) runs on.
//!
//! Each node gets a data folder of its own in the run's scratch folder, made by
//! `mariadb-install-db` on the node as its server will run; the server's Unix socket and pid file
//! live there too, and so do its temporary tables, so nothing is written to the machine's own
//! `/run/mysqld`, `/var/lib/mysql` or `/tmp`.
//! The server listens on the node's address only. Its `--init-file` lets the `lockpick` user in
//! from anywhere on the run's private network (it has no route out), without a password, at
//! every start, restarts included. TCP keepalives of 1 s, 2 probes (MariaDB's own
//! `tcp_keepalive_*` variables) let the server end the session of a client that is gone in
//! seconds rather than hours, and a named lock ends with its session.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use lockpick_workloads::mariadb_session::{MariadbSession, USER};
use lockpick_workloads::Outcome;

use super::ServiceSetup;
use super::{program_output, Launch, LockService, Requirement, ServerBinForm, ServiceEntry};
use crate::runtime::{Node, Runtime};
use crate::service::support::Support;

pub const PORT: u16 = 3306;
/// Debian's install: its server is `sbin/mariadbd` and its data-folder maker
/// `bin/mariadb-install-db` below it.
const BASEDIR: &str = "/usr";
const SERVER: &str = "sbin/mariadbd";
const INSTALL_DB: &str = "bin/mariadb-install-db";
/// What `--server-bin` stands in for, and what preflight looks for.
const SERVER_PATH: &str = "/usr/sbin/mariadbd";

pub static SERVICE: ServiceEntry = ServiceEntry {
    name: "mariadb",
    about: "Debian's mariadb-server, one server, data in memory",
    // --server-bin names an install's base folder: the server needs its install-db beside it.
    server_bin: ServerBinForm::Folder {
        unusable: |folder| {
            let missing: Vec<&str> = [SERVER, INSTALL_DB]
                .into_iter()
                .filter(|p| !folder.join(p).is_file())
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "{} has no {} (name a MariaDB install's base folder, as /usr)",
                    folder.display(),
                    missing.join(" nor ")
                )
            })
        },
    },
    server_bin_example: "/opt/mariadb-11.4",
    // A C++ program reading the time through libc: it runs under libfaketime (measured: a
    // `+30` in its clock file moved `NOW(6)` by 30 s at once, and back).
    server_clock: Support::Yes,
    clock_mover: super::entry::ClockMover::Faketime,
    leader: Support::No("one MariaDB server stands alone: there is no leader to aim at"),
    persistence: Support::No(
        "a named lock lives in the server's memory only, whatever the knob says: a restarted \
         server holds none",
    ),
    connection: "the address is the server (port 3306), the MySQL protocol over plain TCP: log \
                 in as user `lockpick`, no password, no TLS, no database needed; `GET_LOCK`, \
                 `RELEASE_LOCK` and `IS_USED_LOCK` are the named lock's calls, held by the \
                 connection's session",
    // Estimated, not measured (as Sentinel's and PostgreSQL's): `mariadb-install-db` and the
    // server's InnoDB start are CPU-bound for a second or two.
    cost: super::entry::CellCost {
        startup_cores: 1.0,
        contention_cores: 0.3,
        memory_mb: 300,
    },
    stop_grace: std::time::Duration::from_millis(3000),
};

#[derive(Default)]
pub struct MariadbService {
    endpoints: Vec<String>,
    /// The install's base folder the server runs from, once started.
    basedir: Option<PathBuf>,
}

impl MariadbService {
    pub fn new() -> MariadbService {
        MariadbService::default()
    }
}

impl LockService for MariadbService {
    fn name(&self) -> &'static str {
        SERVICE.name
    }

    /// `mariadbd --version`: `mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu …`.
    fn server_version(&self, runtime: &dyn Runtime, node: &Node) -> Option<String> {
        let program = self.basedir.as_ref()?.join(SERVER);
        let text = program_output(runtime, node, &program, &["--version"])?;
        let rest = text.split(" Ver ").nth(1)?;
        let full = rest.split_whitespace().next()?;
        Some(full.split("-MariaDB").next().unwrap_or(full).to_string())
    }

    fn server_bin(&self) -> Option<PathBuf> {
        self.basedir.clone()
    }

    fn server_requirement(&self) -> &'static str {
        SERVER_PATH
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement {
            program: SERVER_PATH,
            package: "mariadb-server",
        }]
    }

    fn node_count(&self) -> usize {
        1
    }

    fn start(&mut self, setup: &mut ServiceSetup) -> Result<()> {
        let basedir = setup
            .server_bin
            .map_or_else(|| PathBuf::from(BASEDIR), Path::to_path_buf);
        self.basedir = Some(basedir.clone());
        for node in setup.nodes {
            let dir = setup.scratch.join(format!("mariadb-{}", node.name));
            std::fs::create_dir(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
            let log = setup.logs.join(format!("mariadb-{}.log", node.name));
            let data = dir.join("data");
            // Temporary tables of its own: in the shared /tmp, servers of runs at once (their
            // pids alike in their pid namespaces) name theirs alike and remove each other's.
            let tmp = dir.join("tmp");
            std::fs::create_dir(&tmp)
                .with_context(|| format!("cannot create {}", tmp.display()))?;
            make_data_folder(setup.runtime, node, &basedir, &data, &tmp, &log)?;
            let init = dir.join("init.sql");
            crate::files::safe_write::write_new(
                &init,
                format!(
                    "CREATE USER IF NOT EXISTS '{USER}'@'%';\n\
                     GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'%';\n"
                ),
            )?;
            let mut launch = Launch::new(node, basedir.join(SERVER), log.clone());
            launch
                .arg("--no-defaults")
                .arg(format!("--basedir={}", basedir.display()))
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--tmpdir={}", tmp.display()))
                .arg(format!("--socket={}", dir.join("mariadbd.sock").display()))
                .arg(format!("--pid-file={}", dir.join("mariadbd.pid").display()))
                .arg(format!("--init-file={}", init.display()))
                .arg(format!("--bind-address={}", node.ip))
                .arg(format!("--port={PORT}"));
            launch.args(SETTINGS.iter().chain(STORAGE));
            setup.launch(launch, true)?;
            self.endpoints.push(format!("{}:{PORT}", node.ip));
        }
        for (node, endpoint) in setup.nodes.iter().zip(&self.endpoints) {
            let log = setup.logs.join(format!("mariadb-{}.log", node.name));
            let endpoint = endpoint.clone();
            setup.wait_for("mariadb", node, &log, move || ready(&endpoint))?;
        }
        Ok(())
    }

    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    /// The server's `SYSDATE(6)` (its wall clock when the statement runs), read inside the
    /// server's node, against the true time.
    fn clock_offset_ms(&self, runtime: &dyn Runtime, node: &Node) -> Option<i64> {
        let endpoint = format!("{}:{PORT}", node.ip);
        let (sender, answer) = std::sync::mpsc::channel();
        runtime
            .probe(
                node,
                Box::new(move || {
                    let mut session = MariadbSession::new(&endpoint, Duration::from_millis(500))?;
                    // Connected first, then the read itself, dated at the middle of its round
                    // trip.
                    let _ = session.first::<(i64,)>("SELECT 1", ());
                    let sql = "SELECT CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000 AS SIGNED)";
                    let sent = now_ms();
                    if let Outcome::Ok(Some((ms,))) = session.first::<(i64,)>(sql, ()) {
                        let _ = sender.send(ms - (sent + now_ms()) / 2);
                    }
                    Ok(())
                }),
            )
            .ok()?;
        answer.try_recv().ok()
    }
}

/// The server's settings beyond its files and address: no name lookups (the run's network has
/// no DNS), quick to end the sessions of clients that are gone, and patient with a port a
/// killed server left behind.
const SETTINGS: &[&str] = &[
    "--user=root",
    "--skip-name-resolve",
    "--skip-log-bin",
    "--performance-schema=off",
    "--max-connections=200",
    "--tcp-keepalive-time=1",
    "--tcp-keepalive-interval=1",
    "--tcp-keepalive-probes=2",
    "--port-open-timeout=10",
];

/// Small InnoDB files (the defaults would put 200 MB in memory per run); the same at install
/// and at every start, since the server checks them against the data folder.
const STORAGE: &[&str] = &[
    "--innodb-log-file-size=4M",
    "--innodb-data-file-path=ibdata1:4M:autoextend",
    "--innodb-buffer-pool-size=16M",
    "--innodb-flush-log-at-trx-commit=0",
];

/// How long `mariadb-install-db` may take on a busy machine.
const DATA_FOLDER_WITHIN: Duration = Duration::from_secs(120);

/// Makes the server's system tables in the new folder `data`, on the node as its server will
/// run: through the runtime, so that the folder is made by the node's own install.
fn make_data_folder(
    runtime: &dyn Runtime,
    node: &Node,
    basedir: &Path,
    data: &Path,
    tmp: &Path,
    log: &Path,
) -> Result<()> {
    let mut install = Launch::new(node, basedir.join(INSTALL_DB), log.to_path_buf());
    install
        .arg("--no-defaults")
        .arg(format!("--basedir={}", basedir.display()))
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--tmpdir={}", tmp.display()))
        .args([
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            "--skip-log-bin",
        ])
        .args(STORAGE);
    install.run_to_end(runtime, DATA_FOLDER_WITHIN)
}

fn ready(endpoint: &str) -> Result<()> {
    let mut session = MariadbSession::new(endpoint, Duration::from_millis(500))?;
    match session.first::<(i64,)>("SELECT 1", ()) {
        Outcome::Ok(_) => Ok(()),
        Outcome::Fail(e) | Outcome::Info(e) => bail!(e),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
