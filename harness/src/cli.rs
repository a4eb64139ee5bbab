//! The command line, as plain data. Validation into the objects that run lives in `config`.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
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
    /// Benchmarks: checker, report, controller, service start-up, time to first violation.
    Bench(BenchArgs),
    /// (internal) One client process: the worker loop against one lock.
    #[command(hide = true)]
    Client(ClientArgs),
    /// (internal) The protected resource server.
    #[command(hide = true)]
    Resource(ResourceArgs),
}

/// The `--lock` values: every lock in the catalogue, with its one-line description, and
/// `exec:<service>:<command>`, the user's own client program over a built-in lock's servers.
fn lock_values() -> LockValues {
    LockValues
}

#[derive(Clone)]
struct LockValues;

impl LockValues {
    fn built_in() -> PossibleValuesParser {
        PossibleValuesParser::new(
            crate::locks::LOCKS
                .iter()
                .map(|l| PossibleValue::new(l.name()).help(l.about())),
        )
    }
}

impl TypedValueParser for LockValues {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let text = value.to_string_lossy();
        if !text.starts_with(crate::locks::exec::PREFIX) {
            return Self::built_in().parse_ref(cmd, arg, value);
        }
        match crate::locks::exec::find(&text) {
            Ok(_) => Ok(text.into_owned()),
            Err(why) => Err(clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value '{text}' for '--lock <LOCK>': {why}\n"),
            )
            .with_cmd(cmd)),
        }
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let exec = PossibleValue::new("exec:<service>:<command>").help(
            "Your own client program (workloads/PROTOCOL.md) over the servers of redis, \
             redlock, etcd or zookeeper.",
        );
        let built_in: Vec<PossibleValue> = Self::built_in()
            .possible_values()
            .map(|values| values.collect())
            .unwrap_or_default();
        Some(Box::new(built_in.into_iter().chain(std::iter::once(exec))))
    }
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
    /// Time a client spends between its read and its write of the resource [default: 100ms,
    /// or longer where a nemesis needs a long critical section to show its classic failure,
    /// e.g. 1.5 x the TTL for partition-holder].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub work: Option<String>,
    /// How long each fault lasts: a pause, a partition, a kill's downtime, a clock jump
    /// [default: each nemesis's own, twice the TTL for most; kill-node restarts within the
    /// lease, after a quarter of the TTL].
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
    /// A matrix file (`lockpick.toml`): locks, nemeses, fencing modes, knobs and the expected
    /// outcome of each cell. Flags given here override the file's.
    #[arg(long)]
    pub matrix: Option<PathBuf>,
    /// Locks, comma-separated [default: redis,redlock,etcd,zookeeper].
    #[arg(long)]
    pub locks: Option<String>,
    /// Nemeses, comma-separated; join several in one cell with `+` (`pause-holder+kill-node`)
    /// [default: none,pause-holder].
    #[arg(long)]
    pub nemeses: Option<String>,
    /// Fencing modes, comma-separated (`off`, `on`, or `off,on`) [default: on].
    #[arg(long)]
    pub fencing: Option<String>,
    /// One seed for every cell; random if not given.
    #[arg(long)]
    pub seed: Option<u64>,
    /// How many cells run at once (each on its own nodes and subnet) [default: 1].
    #[arg(long)]
    pub parallel: Option<usize>,
    #[command(flatten)]
    pub knobs: CellKnobs,
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
}

/// The run knobs `compare` hands to every cell, as typed: on the command line or under
/// `[knobs]` in a matrix file. Each is passed to the cell's `lockpick run` parser as whole
/// words, so each is checked there exactly as a run checks it; unset ones take the run's
/// defaults (the time limit is 10s in a comparison).
#[derive(Args, Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CellKnobs {
    /// Time limit of each cell [default: 10s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub time_limit: Option<String>,
    /// Client processes per cell [default: 5].
    #[arg(long)]
    pub clients: Option<u32>,
    /// Lease time of the lock [default: 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub ttl: Option<String>,
    /// Time a client spends between its read and its write [default: 100ms].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub work: Option<String>,
    /// How long each fault lasts [default: twice the TTL].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub fault_duration: Option<String>,
    /// Mean quiet time between two faults of a nemesis [default: 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub fault_interval: Option<String>,
    /// Healed time at the end of each cell [default: 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub quiet: Option<String>,
    /// How far clock nemeses move a clock [default: twice the TTL].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub clock_jump: Option<String>,
    /// How long delay-holder-write holds the holder's traffic [default: twice the TTL].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub delay: Option<String>,
    /// Percent of packets the loss nemesis drops [default: 30].
    #[arg(long)]
    pub loss: Option<u8>,
    /// Client-side timeout of each request [default: half the TTL, at most 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub op_timeout: Option<String>,
    /// Partitions drop packets, or reject them with a TCP reset [default: drop].
    #[arg(long)]
    pub partition_mode: Option<String>,
}

impl CellKnobs {
    /// These knobs, each unset one taken from `fallback`.
    pub fn or(&self, fallback: &CellKnobs) -> CellKnobs {
        let pick = |a: &Option<String>, b: &Option<String>| a.clone().or_else(|| b.clone());
        CellKnobs {
            time_limit: pick(&self.time_limit, &fallback.time_limit),
            clients: self.clients.or(fallback.clients),
            ttl: pick(&self.ttl, &fallback.ttl),
            work: pick(&self.work, &fallback.work),
            fault_duration: pick(&self.fault_duration, &fallback.fault_duration),
            fault_interval: pick(&self.fault_interval, &fallback.fault_interval),
            quiet: pick(&self.quiet, &fallback.quiet),
            clock_jump: pick(&self.clock_jump, &fallback.clock_jump),
            delay: pick(&self.delay, &fallback.delay),
            loss: self.loss.or(fallback.loss),
            op_timeout: pick(&self.op_timeout, &fallback.op_timeout),
            partition_mode: pick(&self.partition_mode, &fallback.partition_mode),
        }
    }

    /// The set knobs as `lockpick run` flags, each value one whole word.
    pub fn words(&self) -> Vec<String> {
        let set = [
            ("--time-limit", self.time_limit.clone()),
            ("--clients", self.clients.map(|c| c.to_string())),
            ("--ttl", self.ttl.clone()),
            ("--work", self.work.clone()),
            ("--fault-duration", self.fault_duration.clone()),
            ("--fault-interval", self.fault_interval.clone()),
            ("--quiet", self.quiet.clone()),
            ("--clock-jump", self.clock_jump.clone()),
            ("--delay", self.delay.clone()),
            ("--loss", self.loss.map(|l| l.to_string())),
            ("--op-timeout", self.op_timeout.clone()),
            ("--partition-mode", self.partition_mode.clone()),
        ];
        set.into_iter()
            .filter_map(|(flag, value)| Some([flag.to_string(), value?]))
            .flatten()
            .collect()
    }
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run folder (as `store/<lock>-<nemesis>/<time>`).
    pub run: PathBuf,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// What to measure [default: everything].
    #[arg(value_enum)]
    pub what: Option<BenchKind>,
    /// Small sizes, one round, two seeds and short runs: under a minute.
    #[arg(long)]
    pub quick: bool,
    /// How many times to start each service [default: 3; 1 with --quick].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Seeds per lock and nemesis for time to first violation [default: 10; 2 with --quick].
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Also write the figures as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// (internal) The history a measuring child reads.
    #[arg(long, hide = true)]
    pub history: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchKind {
    /// Checker throughput and peak memory, against the parsing limit, 10^4 to 10^7 lines.
    Checker,
    /// Report size and time.
    Report,
    /// The controller's CPU per recorded line.
    Controller,
    /// Time until 5 Redis, 3 etcd and 3 ZooKeeper nodes are ready.
    Startup,
    /// Time to first violation, pause-holder against pause-node, on Redis and Redlock.
    Violations,
    /// (internal) Check one history and report time and peak memory.
    #[value(hide = true)]
    MeasureCheck,
    /// (internal) Only parse one history, the parsing limit.
    #[value(hide = true)]
    MeasureParse,
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
