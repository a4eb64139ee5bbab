//! One PostgreSQL server (Debian's postgresql), its data in memory: the database the
//! `postgres-advisory` and `postgres-lease` locks run on.
//!
//! PostgreSQL refuses to run as root, so `initdb` and the server run as Debian's `postgres`
//! user (through `setpriv`, which execs the server in place: the pid the run signals is the
//! postmaster's). Its backends are its children, each leading a process group of its own, which
//! is why pauses and kills of a server reach its descendants (see `freezer`). TCP keepalives of
//! 1 s, 2 probes let the server end the session of a client that is gone in seconds rather than
//! hours (a cut-off client's advisory lock ends with it), though measured here an idle session
//! sometimes outlived a 6 s partition.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use lockpick_workloads::postgres_session::PostgresSession;

use super::ServiceSetup;
use super::{program_output, Launch, LockService, Requirement, ServerBinForm, ServiceEntry};
use crate::runtime::{Node, Runtime};
use crate::service::support::Support;

pub const PORT: u16 = 5432;
/// The user PostgreSQL runs as (made by Debian's postgresql-common).
const USER: &str = "postgres";
/// Debian's servers, one folder per major version.
const INSTALLS: &str = "/usr/lib/postgresql";

pub static SERVICE: ServiceEntry = ServiceEntry {
    name: "postgres",
    about: "Debian's postgresql, one server, data in memory",
    // --server-bin names a bin/ folder: the server needs its initdb beside it.
    server_bin: ServerBinForm::Folder {
        unusable: |folder| {
            let missing: Vec<&str> = ["postgres", "initdb"]
                .into_iter()
                .filter(|p| !folder.join(p).is_file())
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "{} has no {} (name a PostgreSQL bin/ folder)",
                    folder.display(),
                    missing.join(" nor ")
                )
            })
        },
    },
    // A C program reading the time through libc: it runs under libfaketime, as redis-server
    // does, and its backends (forked, not exec'd) share the postmaster's clock file.
    server_bin_example: "/usr/lib/postgresql/16/bin",
    server_clock: Support::Yes,
    clock_mover: super::entry::ClockMover::Faketime,
    leader: Support::No("one PostgreSQL server stands alone: there is no leader to aim at"),
    persistence: Support::No(
        "PostgreSQL writes every change to its own log before it answers, whatever the knob says",
    ),
    connection: "the address is the server (port 5432): log in as user `postgres` to database \
                 `postgres`, no password (trust), no TLS; the table `lockpick_leases (name text \
                 PRIMARY KEY, holder text, expires_at timestamptz NOT NULL DEFAULT '-infinity', \
                 token bigint NOT NULL DEFAULT 0)` is there, empty, for a lease lock's rows",
    // Start-up: initdb, then one server.
    cost: super::entry::CellCost {
        startup_cores: 1.0,
        contention_cores: 0.3,
        memory_mb: 250,
    },
    stop_grace: std::time::Duration::from_millis(3000),
};

/// The newest installed server's bin/ folder.
fn installed_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(INSTALLS)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

#[derive(Default)]
pub struct PostgresService {
    endpoints: Vec<String>,
    /// The bin/ folder the server runs from, once started.
    bin: Option<PathBuf>,
}

impl PostgresService {
    pub fn new() -> PostgresService {
        PostgresService::default()
    }
}

impl LockService for PostgresService {
    fn name(&self) -> &'static str {
        SERVICE.name
    }

    /// `postgres --version`: `postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)`.
    fn server_version(&self, runtime: &dyn Runtime, node: &Node) -> Option<String> {
        let program = self.bin.as_ref()?.join("postgres");
        let text = program_output(runtime, node, &program, &["--version"])?;
        let rest = text.split("(PostgreSQL)").nth(1)?;
        rest.split_whitespace().next().map(str::to_string)
    }

    fn server_bin(&self) -> Option<PathBuf> {
        self.bin.clone()
    }

    fn server_requirement(&self) -> &'static str {
        INSTALLS
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![
            Requirement {
                program: INSTALLS,
                package: "postgresql",
            },
            Requirement {
                program: "setpriv",
                package: "util-linux",
            },
        ]
    }

    fn node_count(&self) -> usize {
        1
    }

    fn start(&mut self, setup: &mut ServiceSetup) -> Result<()> {
        let bin = match setup.server_bin {
            Some(folder) => folder.to_path_buf(),
            None => installed_bin().context("no PostgreSQL server under /usr/lib/postgresql")?,
        };
        self.bin = Some(bin.clone());
        for node in setup.nodes {
            let dir = setup.scratch.join(format!("postgres-{}", node.name));
            std::fs::create_dir(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
            let log = setup.logs.join(format!("postgres-{}.log", node.name));
            make_data_folder(setup.runtime, node, &bin, &dir, &log)?;
            // Any client of the run's private network may connect: it has no route out.
            let hba = setup.scratch.join(format!("pg_hba-{}.conf", node.name));
            crate::files::safe_write::write_new(
                &hba,
                "local all all trust\nhost all all 0.0.0.0/0 trust\n",
            )?;
            let mut launch = Launch::new(node, bin.join("postgres"), log.clone());
            launch.user = Some(USER);
            launch
                .arg("-D")
                .arg(&dir)
                .arg("-k")
                .arg(&dir)
                .args(["-p", &PORT.to_string()])
                .args(["-c", &format!("listen_addresses={}", node.ip)])
                .arg("-c")
                .arg(format!("hba_file={}", hba.display()));
            for setting in SETTINGS {
                launch.args(["-c", setting]);
            }
            setup.launch(launch, true)?;
            self.endpoints.push(format!("{}:{PORT}", node.ip));
        }
        for (node, endpoint) in setup.nodes.iter().zip(&self.endpoints) {
            let log = setup.logs.join(format!("postgres-{}.log", node.name));
            let endpoint = endpoint.clone();
            setup.wait_for("postgres", node, &log, move || ready(&endpoint))?;
            let endpoint = self.endpoints[0].clone();
            setup
                .runtime
                .probe(node, Box::new(move || make_lease_table(&endpoint)))?;
        }
        Ok(())
    }

    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    /// The database's `clock_timestamp()` (the clock its lease rows expire by), read inside the
    /// server's node, against the true time.
    fn clock_offset_ms(&self, runtime: &dyn Runtime, node: &Node) -> Option<i64> {
        let endpoint = format!("{}:{PORT}", node.ip);
        let (sender, answer) = std::sync::mpsc::channel();
        runtime
            .probe(
                node,
                Box::new(move || {
                    let mut session = PostgresSession::new(&endpoint, Duration::from_millis(500))?;
                    // Connected first (a backend forks per session, slowly on a busy machine),
                    // then the read itself, dated at the middle of its round trip.
                    let _ = session.query("SELECT 1", &[]);
                    let sql = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";
                    let sent = now_ms();
                    if let lockpick_workloads::Outcome::Ok(rows) = session.query(sql, &[]) {
                        if let Some(ms) = rows.first().and_then(|r| r.try_get::<_, i64>(0).ok()) {
                            let _ = sender.send(ms - (sent + now_ms()) / 2);
                        }
                    }
                    Ok(())
                }),
            )
            .ok()?;
        answer.try_recv().ok()
    }
}

/// The server's settings beyond its address: small, fast in memory, and quick to end the
/// sessions of clients that are gone.
const SETTINGS: &[&str] = &[
    "fsync=off",
    "full_page_writes=off",
    "shared_buffers=16MB",
    "max_connections=100",
    "tcp_keepalives_idle=1",
    "tcp_keepalives_interval=1",
    "tcp_keepalives_count=2",
    "logging_collector=off",
    "log_min_messages=warning",
];

/// How long `chown` and `initdb` may take on a busy machine.
const DATA_FOLDER_WITHIN: Duration = Duration::from_secs(120);

/// Hands the run's new, empty `dir` to PostgreSQL's user and makes a database cluster in it,
/// both on the node as its server will run (its user is the node's): through the runtime, so
/// that the folder is made by the node's own `initdb` for the node's own `postgres` user.
fn make_data_folder(
    runtime: &dyn Runtime,
    node: &Node,
    bin: &Path,
    dir: &Path,
    log: &Path,
) -> Result<()> {
    let chown = runtime
        .find_program(node, "chown")
        .context("chown is missing (coreutils)")?;
    let mut owner = Launch::new(node, chown, log.to_path_buf());
    // --no-dereference: the folder itself, never what a link there might name.
    owner
        .arg("--no-dereference")
        .arg(format!("{USER}:{USER}"))
        .arg(dir);
    owner
        .run_to_end(runtime, DATA_FOLDER_WITHIN)
        .with_context(|| {
            format!(
                "cannot hand {} to the {USER} user (Debian's postgresql makes it)",
                dir.display()
            )
        })?;
    let mut initdb = Launch::new(node, bin.join("initdb"), log.to_path_buf());
    initdb.user = Some(USER);
    initdb.arg("-D").arg(dir).args([
        "-U",
        USER,
        "--auth=trust",
        "-E",
        "UTF8",
        "--no-sync",
        "--no-instructions",
    ]);
    initdb.run_to_end(runtime, DATA_FOLDER_WITHIN)
}

fn ready(endpoint: &str) -> Result<()> {
    let mut session = PostgresSession::new(endpoint, Duration::from_millis(500))?;
    match session.query("SELECT 1", &[]) {
        lockpick_workloads::Outcome::Ok(_) => Ok(()),
        lockpick_workloads::Outcome::Fail(e) | lockpick_workloads::Outcome::Info(e) => bail!(e),
    }
}

fn make_lease_table(endpoint: &str) -> Result<()> {
    let mut session = PostgresSession::new(endpoint, Duration::from_secs(5))?;
    let made = session.query(lockpick_workloads::postgres_lock::LEASE_TABLE, &[]);
    match made {
        lockpick_workloads::Outcome::Ok(_) => Ok(()),
        lockpick_workloads::Outcome::Fail(e) | lockpick_workloads::Outcome::Info(e) => {
            bail!("cannot make the lease table: {e}")
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
