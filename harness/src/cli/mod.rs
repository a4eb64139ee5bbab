//! The command line, as plain data. Validation into the objects that run lives in `config`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod compare_args;
mod fault_flags;
mod flag_words;
mod knob_table;
mod protocol_check_args;
mod run_knobs;
pub mod shard;
mod shrink_args;
mod sweep_args;
mod values;

pub use crate::runtime::firewall::PartitionMode;
pub use compare_args::{CellKnobs, CompareArgs, MergeArgs};
pub use fault_flags::{FaultFlags, DEFAULT_FAULT_INTERVAL, DEFAULT_LOSS};
pub use protocol_check_args::ProtocolCheckArgs;
pub use run_knobs::RunKnobs;
pub use shrink_args::{ShrinkArgs, ViolationKind};
pub use sweep_args::SweepArgs;
use values::{lock_values, nemesis_values};

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
    Compare(Box<CompareArgs>),
    /// Vary one knob over a range, for a few locks and both fencing modes, and plot safety
    /// (overlaps, stale writes) and availability (time to the next grant) against it.
    Sweep(Box<SweepArgs>),
    /// Join the shards of a `compare --shard K/N` into the outputs and exit code one compare of
    /// the whole matrix would have written.
    Merge(MergeArgs),
    /// Re-check a stored history offline.
    Check(CheckArgs),
    /// Shrink a violating run to the smallest schedule that still fails, and a command that
    /// replays it.
    Shrink(Box<ShrinkArgs>),
    /// Check a client program for `--lock exec:<service>:<command>` against the protocol, in
    /// seconds, on a real server.
    ///
    /// Two instances of the program, on the service's real servers: its hello, an acquire
    /// granted within its bound, a contender refused with `fail` while the lock is held, a
    /// release, and `unknown` within the bound for an acquire and a release while every server
    /// is stopped (SIGSTOP) past the op timeout (see workloads/PROTOCOL.md).
    #[command(
        after_help = "Exit codes: 0 every check passed, 1 a check failed, 2 interrupted before \
                      every check ran, 254 bad arguments or environment, 255 the harness itself \
                      failed."
    )]
    ProtocolCheck(ProtocolCheckArgs),
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
    #[arg(long, value_parser = lock_values(), default_value = crate::locks::default_name())]
    pub lock: String,
    /// A short name for an exec lock (`--lock exec:…`), shown instead of its whole command in
    /// the store folder, the report, JUnit and a comparison: 1 to 32 letters, digits, `-`, `_`
    /// or `.` [default: the whole exec string].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Faults to inject, comma-separated (e.g. `pause-holder,pause-node`).
    #[arg(long, value_parser = nemesis_values(), value_delimiter = ',', default_value = "none")]
    pub nemesis: Vec<String>,
    /// Whether the protected resource checks fencing tokens.
    #[arg(long, value_enum, default_value = "off")]
    pub fencing: Fencing,
    /// Seed for every random choice of the run (fault timing, targets); random if not given.
    #[arg(long)]
    pub seed: Option<u64>,
    // The flags that shape the run and those that tune its faults: declared once, for
    // `compare` too.
    #[command(flatten)]
    pub knobs: RunKnobs,
    #[command(flatten)]
    pub faults: FaultFlags,
    /// Replay the fault schedule stored by an earlier run (its schedule.json) instead of
    /// drawing one from the seed.
    #[arg(long)]
    pub schedule: Option<PathBuf>,
    /// Folder that keeps every run (`<store>/<lock>-<nemesis>/<time>/`).
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
    /// When the workload ends: at the time limit, or at the first violation the history
    /// proves (`decided`: the verdict is invalid then whatever follows; faults are healed and
    /// the final read taken as at the time limit).
    #[arg(long, value_enum, default_value = "time-limit")]
    pub until: Until,
}

/// When a run's workload ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Until {
    /// At `--time-limit`.
    #[default]
    TimeLimit,
    /// At the first violation the history proves, or at the time limit if none.
    Decided,
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
    /// How many times to start each service [default: 3; 1 with --quick]; rounds of the example
    /// gate [default: 1].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Seeds per lock and nemesis for time to first violation [default: 10; 2 with --quick]
    /// and for stability [default: 5; 2 with --quick].
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
    /// Every built-in lock without faults and under pause-holder over several seeds: how many
    /// runs were off their expectation, and why (exits 1 unless none). Only when asked for.
    Stability,
    /// The example CI gate's wall time, to the time limit and decided (only when asked for).
    Gate,
    /// What moving a process's clock through its vDSO costs: a clock read, and redis-server's
    /// SET throughput, without and with the replacements in place.
    ClockShift,
    /// (internal) Check one history and report time and peak memory.
    #[value(hide = true)]
    MeasureCheck,
    /// (internal) Read clocks in a loop when told, for `clock-shift`.
    #[value(hide = true)]
    MeasureClock,
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
