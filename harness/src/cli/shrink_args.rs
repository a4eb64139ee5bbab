//! `lockpick shrink` flags, as plain data: the run to shrink, how sure a candidate must be
//! (m of k replays), and what the search may spend.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Args, Debug)]
pub struct ShrinkArgs {
    /// A violating run's folder (as `store/redis-pause-holder/<time>`): its schedule.json and
    /// command.txt are where the search starts.
    pub run: PathBuf,
    /// How many times each candidate schedule is replayed (k); the servers are real and timing
    /// varies, so one replay proves little.
    #[arg(long, default_value_t = 3)]
    pub replays: u32,
    /// How many of those replays must show the same kind of violation (m) for the candidate to
    /// count as failing.
    #[arg(long, default_value_t = 2)]
    pub min_failures: u32,
    /// The most the search may spend, as `runs=N,time=D` (either may be left out): it stops
    /// starting replays once either is used up and keeps the smallest failing schedule found.
    #[arg(long, default_value = "runs=60,time=30m")]
    pub budget: String,
    /// The kind of violation a candidate must show [default: the run's first, in the order
    /// stale-write, token, overlap, jam].
    #[arg(long, value_enum)]
    pub kind: Option<ViolationKind>,
    /// Folder under which the shrink keeps its replays and its result
    /// (`<store>/shrink/<time>/`).
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
    /// The run's exec lock (`exec:<service>:<program>`) named again, exactly as in its
    /// command.txt: a run folder may have been forged, and its replays run as root, so a shrink
    /// starts a program the folder names only when the person names it too (or passes
    /// --trust-folder-programs).
    #[arg(long, value_name = "LOCK")]
    pub lock: Option<String>,
    /// One of the run's `--server-bin SERVICE=PATH`, named again (as --lock); repeat for each.
    #[arg(long = "server-bin", value_name = "SERVICE=PATH")]
    pub server_bins: Vec<String>,
    /// One of the run's `--image SERVICE=IMAGE`, named again (as --lock); repeat for each.
    #[arg(long = "image", value_name = "SERVICE=IMAGE")]
    pub images: Vec<String>,
    /// Run the programs the run's command names (exec lock, --server-bin, --image) without
    /// naming each again; they are printed before the first replay.
    #[arg(long)]
    pub trust_folder_programs: bool,
}

/// The kinds of violation a history can prove, as the checkers tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViolationKind {
    /// A stale write the resource accepted.
    StaleWrite,
    /// A fencing token that broke its promise (reused, or gone backwards).
    Token,
    /// Two clients that both believed they held the lock at once.
    Overlap,
    /// A certainly free lock refused to everyone for longer than the jam bound.
    Jam,
}

impl ViolationKind {
    pub const ALL: [ViolationKind; 4] = [
        ViolationKind::StaleWrite,
        ViolationKind::Token,
        ViolationKind::Overlap,
        ViolationKind::Jam,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ViolationKind::StaleWrite => "stale-write",
            ViolationKind::Token => "token",
            ViolationKind::Overlap => "overlap",
            ViolationKind::Jam => "jam",
        }
    }
}
