//! The flags of `lockpick compare`, and the run knobs a comparison passes to each cell.

use std::path::PathBuf;

use clap::Args;

use super::{FaultFlags, RunKnobs};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// A matrix file (`lockpick.toml`): locks, nemeses, fencing modes, knobs and the expected
    /// outcome of each cell. Flags given here override the file's.
    #[arg(long)]
    pub matrix: Option<PathBuf>,
    // Its help names the default locks, read from the catalogue (`compare_locks_help`), so
    // that a lock added to the default comparison changes no line here.
    #[arg(long, help = super::values::compare_locks_help())]
    pub locks: Option<String>,
    /// Nemeses, comma-separated; join several in one cell with `+` (`pause-holder+kill-node`)
    /// [default: none,pause-holder,kill-leader,pause-leader,partition-leader].
    #[arg(long)]
    pub nemeses: Option<String>,
    /// Fencing modes, comma-separated (`off`, `on`, or `off,on`) [default: on].
    #[arg(long)]
    pub fencing: Option<String>,
    /// One seed for every cell; random if not given.
    #[arg(long)]
    pub seed: Option<u64>,
    /// How many cells run at once (each on its own nodes and subnet) [default: decided from
    /// what the cells use: the cores over what a cell keeps busy while it contends, within
    /// memory, lowered when cells' start-ups slow down; the first line says the choice and why].
    #[arg(long)]
    pub parallel: Option<usize>,
    /// Runs every cell this many times, each repeat with its own seed derived from the
    /// comparison's (the first repeat uses the seed itself); expectations are judged over the
    /// repeats [default: 1].
    #[arg(long)]
    pub repeat: Option<usize>,
    /// The most cells the plan may hold: a larger one (a matrix of 10 000 cells runs for
    /// hours) is refused unless this is raised [default: 100].
    #[arg(long, default_value_t = 100)]
    pub max_cells: usize,
    /// When a cell expected `invalid` ends: at its first proven violation (`decided`: the
    /// verdict cannot change after it), or at the time limit; other cells always run their full
    /// time [default: decided with --matrix, else time-limit].
    #[arg(long, value_enum)]
    pub until: Option<super::Until>,
    #[command(flatten)]
    pub knobs: CellKnobs,
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
    /// The URL at which the store is published (CI artifacts, pages): `summary.md` links each
    /// report there. Without it, the GitLab job's artifacts when `$CI_JOB_URL` is set, else no
    /// links (a path relative to the store is dead in a pull-request comment).
    #[arg(long, value_name = "URL")]
    pub link_base: Option<String>,
    /// Also write `summary.md` and `junit.xml` into this folder (a fixed place for a CI job);
    /// when the comparison fails before any cell runs (bad input: exit 254), they say why.
    #[arg(long, value_name = "DIR")]
    pub report_to: Option<PathBuf>,
    /// Run only shard K of N of the matrix's cells (`2/4`): a stable split, balanced by each
    /// cell's expected time, for a CI job matrix; needs a seed (`--seed` or the matrix file's).
    /// Its `compare.json` carries what `lockpick merge` needs to join the shards.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<super::shard::Shard>,
    /// Check the matrix (file and flags) and list its cells without running anything; the
    /// machine (root, servers, the store) is not checked.
    #[arg(long)]
    pub check: bool,
    /// List the cells without running anything (as `--check`, the cells only).
    #[arg(long)]
    pub list: bool,
    /// After the matrix, shrink each broken cell whose run is invalid to the smallest schedule
    /// that still fails, as `lockpick shrink` does (`<store>/shrink/<time>/`); summary.md and
    /// the terminal tell each shrunk replay command. The gate's verdicts and exit code stay the
    /// matrix's: a shrink only adds what it found.
    #[arg(long)]
    pub shrink: bool,
    /// What all the shrinks together may spend, as `runs=N,time=D`; a cell whose turn comes
    /// when it is spent is not shrunk.
    #[arg(long, default_value = "runs=60,time=30m", requires = "shrink")]
    pub shrink_budget: String,
    /// How many times each candidate schedule is replayed (k, as `lockpick shrink --replays`).
    #[arg(long, default_value_t = 3, requires = "shrink")]
    pub shrink_replays: u32,
    /// How many of those replays must fail (m, as `lockpick shrink --min-failures`).
    #[arg(long, default_value_t = 2, requires = "shrink")]
    pub shrink_min_failures: u32,
    /// With `--list`: the runnable cells as JSON for a CI job matrix (`{"include": [...]}`).
    #[arg(long, requires = "list")]
    pub json: bool,
}

/// The knobs `compare` hands to every cell, as typed: on the command line or under `[knobs]`
/// in a matrix file, declared once for `lockpick run` and `compare` ([`RunKnobs`],
/// [`FaultFlags`]). Each is passed to the cell's `lockpick run` parser as whole words, so each
/// is checked there exactly as a run checks it; unset ones take the run's defaults (the time
/// limit is 10s in a comparison). A matrix file's table reads key by key (`knob_table`).
#[derive(Args, Debug, Clone, Default, PartialEq)]
pub struct CellKnobs {
    #[command(flatten)]
    pub run: RunKnobs,
    #[command(flatten)]
    pub faults: FaultFlags,
}

impl CellKnobs {
    /// These knobs, each unset one taken from `fallback`.
    pub fn or(&self, fallback: &CellKnobs) -> CellKnobs {
        CellKnobs {
            run: self.run.or(&fallback.run),
            faults: self.faults.or(&fallback.faults),
        }
    }

    /// The set knobs as `lockpick run` flags, each value one whole word.
    pub fn words(&self) -> Vec<String> {
        let mut words = self.run.words();
        words.extend(self.faults.words());
        words
    }
}

#[cfg(test)]
mod tests {
    use super::{CellKnobs, FaultFlags, RunKnobs};

    #[test]
    fn runtime_images_and_server_bins_reach_each_cell_as_whole_words() {
        let given = CellKnobs {
            run: RunKnobs {
                runtime: Some("docker".to_string()),
                images: vec![
                    "redis=redis:7.4".to_string(),
                    "etcd=quay.io/etcd:v3.5".to_string(),
                ],
                ..RunKnobs::default()
            },
            ..CellKnobs::default()
        };
        let file = CellKnobs {
            run: RunKnobs {
                runtime: Some("netns".to_string()),
                images: vec!["redis=redis:6.2".to_string()],
                server_bins: vec!["redis=/opt/redis-server".to_string()],
                ..RunKnobs::default()
            },
            ..CellKnobs::default()
        };
        assert_eq!(
            given.or(&file).words(),
            [
                "--image",
                "redis=redis:7.4",
                "--image",
                "etcd=quay.io/etcd:v3.5",
                "--runtime",
                "docker",
                "--server-bin",
                "redis=/opt/redis-server",
            ]
        );
        assert!(CellKnobs::default().words().is_empty());
    }

    #[test]
    fn a_matrix_file_names_them_as_the_flags_do() {
        let knobs: CellKnobs = toml::from_str(
            "runtime = \"netns\"\nserver-bin = [\"redis=/opt/redis-server\"]\nimage = []\n",
        )
        .unwrap();
        assert_eq!(knobs.run.runtime.as_deref(), Some("netns"));
        assert_eq!(knobs.run.server_bins, ["redis=/opt/redis-server"]);
        assert!(knobs.run.images.is_empty());
    }
    #[test]
    fn a_matrix_files_fault_knobs_read_into_the_fault_flags_and_errors_keep_their_line() {
        let file: CellKnobs = toml::from_str(
            "clients = 2\nclock-jump = \"3s\"\nloss = 20\npartition-mode = \"reject\"\n",
        )
        .unwrap();
        assert_eq!(file.run.clients, Some(2));
        assert_eq!(file.faults.clock_jump.as_deref(), Some("3s"));
        let given = CellKnobs {
            faults: FaultFlags {
                clock_jump: Some("5s".to_string()),
                ..FaultFlags::default()
            },
            ..CellKnobs::default()
        };
        assert_eq!(
            given.or(&file).words(),
            [
                "--clients",
                "2",
                "--clock-jump",
                "5s",
                "--loss",
                "20",
                "--partition-mode",
                "reject"
            ]
        );
        let error_line = |text: &str| {
            let error = toml::from_str::<CellKnobs>(text).unwrap_err();
            let line = text[..error.span().unwrap().start].lines().count();
            (error.message().to_string(), line)
        };
        let (_, line) = error_line("clients = 2\nloss = \"many\"\n");
        assert_eq!(line, 2);
        let (unknown, line) = error_line("clients = 2\nworkk = 1\n");
        assert!(unknown.contains("unknown field `workk`"), "{unknown}");
        assert!(unknown.contains("`clock-jump`"), "{unknown}");
        assert_eq!(line, 2);
    }
}

/// The flags of `lockpick merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The shards' folders: each a comparison's folder (`<store>/compare/<time>`) or its
    /// `--report-to` folder, holding the `compare.json` of one `compare --shard K/N`.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
    /// As `compare --link-base`.
    #[arg(long, value_name = "URL")]
    pub link_base: Option<String>,
    /// As `compare --report-to`: the merged outputs, also here (real files, no links).
    #[arg(long, value_name = "DIR")]
    pub report_to: Option<PathBuf>,
}
