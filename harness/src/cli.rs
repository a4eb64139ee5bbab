//! The command line, as plain data. Validation into the objects that run lives in `config`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    Run(RunArgs),
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LockKind {
    /// One redis-server; SET NX PX to acquire, Lua compare-and-delete to release; no token.
    Redis,
    /// Our faithful Redlock over 5 independent redis-servers; no token.
    Redlock,
    /// The published rslock crate (a Redlock client) over the same 5 redis-servers; no token.
    Rslock,
    /// A 3-member etcd cluster: lease + keep-alive and etcd's Lock API; token = create revision.
    Etcd,
    /// A 3-server ZooKeeper ensemble: the ephemeral-sequential recipe; token = sequence number.
    Zookeeper,
}

impl LockKind {
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Redis => "redis",
            LockKind::Redlock => "redlock",
            LockKind::Rslock => "rslock",
            LockKind::Etcd => "etcd",
            LockKind::Zookeeper => "zookeeper",
        }
    }
}

#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum NemesisKind {
    /// No faults.
    None,
    /// Lock-aware: right after a client acquires, freeze it (SIGSTOP), then resume it.
    PauseHolder,
    /// Freeze a random lock-service server (SIGSTOP), then resume it.
    PauseNode,
    /// Cut one random server off from every other node.
    PartitionNode,
    /// Split the servers into a minority and a majority that cannot talk.
    PartitionHalves,
    /// Each server sees a majority, but no two see the same one (5 servers or more).
    PartitionRing,
    /// Two halves joined only through one bridge server.
    PartitionBridge,
    /// Cut one random client off from some of the servers.
    PartitionClient,
    /// Lock-aware: right after a client acquires, cut it off from every server.
    PartitionHolder,
    /// One random server stops receiving from every other node, but can still send.
    PartitionOneWay,
    /// Jump a random server's clock forward by --clock-jump (libfaketime; redis-based locks only).
    ClockForward,
    /// Jump a random server's clock backward by --clock-jump (libfaketime; redis-based locks only).
    ClockBackward,
    /// Flip a random server's clock between +--clock-jump and true time every 100ms.
    ClockStrobe,
    /// Lock-aware: jump forward the clocks of the servers that granted the holder's lock.
    ClockHolder,
    /// Skew a random client's own clock by --clock-jump (our Redlock client).
    SkewClients,
    /// Kill a random server (SIGKILL), restart it after the fault duration.
    KillNode,
    /// Kill a random client (SIGKILL), start a fresh one in its place after the fault duration.
    KillClient,
    /// Lock-aware: once the holder has read the resource, hold its traffic to the resource for
    /// --delay, so its write lands late.
    DelayHolderWrite,
    /// Hold everything a random client sends to the lock servers and the resource for --delay
    /// (a userspace proxy on each of its links).
    DelayClient,
    /// Drop --loss percent of a random server's packets, both ways.
    Loss,
}

impl NemesisKind {
    pub fn name(self) -> String {
        let value = self.to_possible_value().expect("every nemesis has a name");
        value.get_name().to_string()
    }

    pub fn is_partition(self) -> bool {
        matches!(
            self,
            NemesisKind::PartitionNode
                | NemesisKind::PartitionHalves
                | NemesisKind::PartitionRing
                | NemesisKind::PartitionBridge
                | NemesisKind::PartitionClient
                | NemesisKind::PartitionHolder
                | NemesisKind::PartitionOneWay
                | NemesisKind::Loss
        )
    }

    /// Faults that move a server's clock (through libfaketime).
    pub fn is_server_clock(self) -> bool {
        matches!(
            self,
            NemesisKind::ClockForward
                | NemesisKind::ClockBackward
                | NemesisKind::ClockStrobe
                | NemesisKind::ClockHolder
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionMode {
    /// Drop the packets: the other side sees timeouts.
    Drop,
    /// Reject them (TCP reset): the other side fails at once.
    Reject,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fencing {
    /// The resource accepts every access.
    Off,
    /// The resource rejects any access whose token is lower than the highest it has seen.
    On,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Which lock to test.
    #[arg(long, value_enum, default_value = "redis")]
    pub lock: LockKind,
    /// Faults to inject, comma-separated (e.g. `pause-holder,pause-node`).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "none")]
    pub nemesis: Vec<NemesisKind>,
    /// Number of client processes contending for the lock.
    #[arg(long, default_value_t = 5)]
    pub clients: u32,
    /// Lease time of the lock (e.g. `1s`, `500ms`).
    #[arg(long, default_value = "1s")]
    pub ttl: String,
    /// How long clients contend for the lock before the heal phase (e.g. `30s`, `2m`).
    #[arg(long, default_value = "30s")]
    pub time_limit: String,
    /// Whether the protected resource checks fencing tokens.
    #[arg(long, value_enum, default_value = "off")]
    pub fencing: Fencing,
    /// Seed for every random choice of the run (fault timing, targets); random if not given.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Time a client spends between its read and its write of the resource.
    #[arg(long, default_value = "100ms")]
    pub work: String,
    /// How long each fault lasts: a pause, a partition, a kill's downtime, a clock jump
    /// [default: twice the TTL].
    #[arg(long, alias = "pause")]
    pub fault_duration: Option<String>,
    /// Mean quiet time between two faults of a nemesis (each is drawn from 0.5x to 1.5x this).
    #[arg(long, default_value = "1s")]
    pub fault_interval: String,
    /// Time at the end of the run with every fault healed, while clients go on.
    #[arg(long, default_value = "1s")]
    pub quiet: String,
    /// Partitions drop packets, or reject them with a TCP reset.
    #[arg(long, value_enum, default_value = "drop")]
    pub partition_mode: PartitionMode,
    /// How far clock nemeses move a clock [default: twice the TTL].
    #[arg(long)]
    pub clock_jump: Option<String>,
    /// How long delay-holder-write holds the holder's traffic [default: twice the TTL].
    #[arg(long)]
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
    #[arg(long)]
    pub op_timeout: Option<String>,
    /// Folder that keeps every run (`<store>/<lock>-<nemesis>/<time>/`).
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
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
    #[arg(long, default_value = "10s")]
    pub time_limit: String,
    #[arg(long, default_value_t = 5)]
    pub clients: u32,
    #[arg(long, default_value = "1s")]
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
