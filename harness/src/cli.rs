//! The command line, as plain data. Validation into the objects that run lives in `config`.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::firewall::PartitionMode;

#[derive(Parser, Debug)]
#[command(
    name = "lockpick",
    version,
    about = "Fault-injection harness for distributed locks: runs real lock services, freezes and \
             cuts their clients and nodes, and checks whether two clients ever held the lock at \
             once or the protected resource accepted a stale write.",
    after_help = "Exit codes: 0 valid, 1 invalid (a violation was found), 2 unknown, \
                  254 bad arguments or environment, 255 the harness itself failed."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Start the lock service, run contending clients under faults, record and check the history.
    Run(Box<RunArgs>),
    /// Run a matrix of locks × nemeses × fencing modes and write the comparison table.
    Compare(CompareArgs),
    /// Re-check a stored history offline.
    Check(CheckArgs),
    /// Remove everything an earlier, crashed run left behind (namespaces, processes, files).
    Clean(CleanArgs),
    /// Write a stored run's report.html and junit.xml again.
    Report(ReportArgs),
    /// Benchmarks: `lockpick bench startup` times each lock service's start on fresh nodes.
    Bench(BenchArgs),
    /// (internal) One client process: the worker loop against one lock.
    #[command(hide = true)]
    Client(ClientArgs),
    /// (internal) The protected resource server.
    #[command(hide = true)]
    Resource(ResourceArgs),
}

/// The `--lock` values: every lock in the catalogue, with its one-line description.
fn lock_values() -> PossibleValuesParser {
    PossibleValuesParser::new(
        crate::locks::LOCKS
            .iter()
            .map(|l| PossibleValue::new(l.name()).help(l.about())),
    )
}

/// The `--runtime` values: every runtime in the catalogue.
fn runtime_values() -> PossibleValuesParser {
    PossibleValuesParser::new(
        crate::runtime::RUNTIMES
            .iter()
            .map(|r| PossibleValue::new(r.name()).help(r.about())),
    )
}

/// The `--nemesis` values: `none` and every nemesis in the catalogue.
fn nemesis_values() -> PossibleValuesParser {
    let none = PossibleValue::new(crate::nemesis::NONE).help("No faults.");
    PossibleValuesParser::new(
        std::iter::once(none).chain(
            crate::nemesis::NEMESES
                .iter()
                .map(|n| PossibleValue::new(n.name()).help(n.about())),
        ),
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fencing {
    /// The resource accepts every access.
    Off,
    /// The resource rejects any access whose token is lower than the highest it has seen.
    On,
}

impl Fencing {
    pub fn name(self) -> &'static str {
        match self {
            Fencing::On => "on",
            Fencing::Off => "off",
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Which lock to test.
    #[arg(long, value_parser = lock_values(), default_value = "redis")]
    pub lock: String,
    /// Faults to inject, comma-separated (e.g. `pause-holder,pause-node`).
    #[arg(long, value_parser = nemesis_values(), value_delimiter = ',', default_value = "none")]
    pub nemesis: Vec<String>,
    /// Number of client processes contending for the lock.
    #[arg(long, default_value_t = 5)]
    pub clients: u32,
    /// Lease time of the lock (e.g. `1s`, `500ms`).
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = duration_word)]
    pub ttl: String,
    /// How long clients contend for the lock before the heal phase (e.g. `30s`, `2m`).
    #[arg(long, default_value = "30s", allow_hyphen_values = true, value_parser = duration_word)]
    pub time_limit: String,
    /// Whether the protected resource checks fencing tokens.
    #[arg(long, value_enum, default_value = "off")]
    pub fencing: Fencing,
    /// Seed for every random choice of the run (fault timing, targets); random if not given.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Time a client spends between its read and its write of the resource.
    #[arg(long, default_value = "100ms", allow_hyphen_values = true, value_parser = duration_word)]
    pub work: String,
    /// How long each fault lasts: a pause, a partition, a kill's downtime, a clock jump
    /// [default: twice the TTL].
    #[arg(long, alias = "pause", allow_hyphen_values = true, value_parser = duration_word)]
    pub fault_duration: Option<String>,
    /// Mean quiet time between two faults of a nemesis (each is drawn from 0.5x to 1.5x this).
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = duration_word)]
    pub fault_interval: String,
    /// Time at the end of the run with every fault healed, while clients go on.
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = duration_word)]
    pub quiet: String,
    /// Partitions drop packets, or reject them with a TCP reset.
    #[arg(long, value_enum, default_value = "drop")]
    pub partition_mode: PartitionMode,
    /// How far clock nemeses move a clock [default: twice the TTL].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub clock_jump: Option<String>,
    /// How long delay-holder-write holds the holder's traffic [default: twice the TTL].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub delay: Option<String>,
    /// Percent of packets the loss nemesis drops.
    #[arg(long, default_value_t = 30)]
    pub loss: u8,
    /// Replay the fault schedule stored by an earlier run (its schedule.json) instead of
    /// drawing one from the seed.
    #[arg(long)]
    pub schedule: Option<PathBuf>,
    /// Client-side timeout of each request to a lock service or the resource; must be shorter
    /// than the TTL [default: half the TTL, at most 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub op_timeout: Option<String>,
    /// Folder that keeps every run (`<store>/<lock>-<nemesis>/<time>/`).
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
    /// Where the nodes live.
    #[arg(long, value_parser = runtime_values(), default_value = "netns")]
    pub runtime: String,
    /// The server image of a service under `--runtime docker`, as `service=image`
    /// (e.g. `redis=redis:7.4`); repeat for several services.
    #[arg(long = "image", value_name = "SERVICE=IMAGE")]
    pub images: Vec<String>,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// A history file (history.jsonl) or a run folder that holds one.
    pub history: PathBuf,
    /// Print the full results as JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CleanArgs {
    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,
    /// Also remove the leftovers of runs whose controller is still alive.
    #[arg(long)]
    pub force: bool,
    /// Only this run (its prefix, as in `lkp1a2b3c`), instead of every run's leftovers.
    #[arg(long)]
    pub prefix: Option<String>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Locks, comma-separated.
    #[arg(long, default_value = "redis,redlock,etcd,zookeeper")]
    pub locks: String,
    /// Nemeses, comma-separated; join several in one cell with `+` (`pause-holder+kill-node`).
    #[arg(long, default_value = "none,pause-holder")]
    pub nemeses: String,
    /// Fencing modes, comma-separated (`off`, `on`, or `off,on`).
    #[arg(long, default_value = "on")]
    pub fencing: String,
    /// Time limit of each cell.
    #[arg(long, default_value = "10s", allow_hyphen_values = true, value_parser = duration_word)]
    pub time_limit: String,
    #[arg(long, default_value_t = 5)]
    pub clients: u32,
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = duration_word)]
    pub ttl: String,
    /// One seed for every cell; random if not given.
    #[arg(long)]
    pub seed: Option<u64>,
    /// How many cells run at once (each on its own nodes and subnet).
    #[arg(long, default_value_t = 1)]
    pub parallel: usize,
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run folder (as `store/<lock>-<nemesis>/<time>`).
    pub run: PathBuf,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// What to measure.
    #[arg(value_enum)]
    pub what: BenchKind,
    /// How many times to start each service.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchKind {
    /// Time until 5 Redis, 3 etcd and 3 ZooKeeper nodes are ready.
    Startup,
}

#[derive(Args, Debug)]
pub struct ClientArgs {
    /// Everything the client is to do, as JSON (`lockpick_workloads::client_spec::ClientSpec`).
    #[arg(long)]
    pub spec: String,
}

#[derive(Args, Debug)]
pub struct ResourceArgs {
    #[arg(long)]
    pub listen: std::net::SocketAddr,
    #[arg(long, value_enum)]
    pub fencing: Fencing,
    #[arg(long)]
    pub origin_ns: u64,
}

/// A duration flag's word, as typed. Duration flags take words that start with `-`, so that
/// `--ttl -1s` is refused by the duration parser under the flag's own name; a following flag
/// (`--ttl --store x`) is still a missing value, not a duration.
fn duration_word(text: &str) -> Result<String, String> {
    if text.starts_with("--") {
        return Err(format!("a duration is needed here, not the flag {text}"));
    }
    Ok(text.to_string())
}
