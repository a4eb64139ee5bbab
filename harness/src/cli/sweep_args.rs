//! The flags of `lockpick sweep`: one knob varied over a range, for a few locks and fencing
//! modes, with the run knobs every point shares.

use std::path::PathBuf;

use clap::Args;

use super::CellKnobs;

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The knob to vary and its range, both ends included: `KNOB=FROM..TO` (with `--points`),
    /// or a list `KNOB=A,B,C`. Knobs: fault-duration, ttl, clock-jump, delay, work, clients. A
    /// duration ending in `x` is a multiple of the TTL (`fault-duration=0.2x..3x`).
    #[arg(long, value_name = "KNOB=FROM..TO")]
    pub vary: String,
    /// How many evenly spaced points a `FROM..TO` range holds [default: 5].
    #[arg(long)]
    pub points: Option<usize>,
    /// Locks, comma-separated (by default, the first lock of the catalogue, as `run --lock`).
    #[arg(long, default_value = crate::locks::default_name())]
    pub locks: String,
    /// The nemesis of every run; join several with `+` [default: pause-holder].
    #[arg(long, default_value = "pause-holder")]
    pub nemesis: String,
    /// Fencing modes, comma-separated [default: off,on].
    #[arg(long, default_value = "off,on")]
    pub fencing: String,
    /// Runs per point, lock and fencing mode, each with its own seed (k) [default: 3].
    #[arg(long, default_value_t = 3)]
    pub seeds: usize,
    /// The first seed; the others derive from it as a comparison's repeats do [default:
    /// random].
    #[arg(long)]
    pub seed: Option<u64>,
    /// How many runs at once (each on its own nodes and subnet) [default: the number of cores].
    #[arg(long)]
    pub parallel: Option<usize>,
    /// The most runs the grid may hold; a larger grid is refused before anything starts
    /// [default: 200].
    #[arg(long, default_value_t = 200)]
    pub max_runs: usize,
    /// Every run's knobs (the swept one excepted); the time limit is 10s unless given.
    #[command(flatten)]
    pub knobs: CellKnobs,
    /// Folder that keeps every run, and the sweep's outputs under `<store>/sweep/<time>/`.
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
}
