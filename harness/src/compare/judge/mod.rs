//! Judging: each cell's run against what the cell was expected to show (`cell`), from the
//! figures measured off its history (`judgement`), over its repeats (`repeats`), and where the
//! cell stands, in the words every output shares (`state`).

pub mod cell;
pub(crate) mod judgement;
pub(crate) mod repeats;
pub mod state;
