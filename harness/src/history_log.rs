//! The history as it grows on disk: each operation gets the next index and is written with one
//! `write` call as it arrives, so a controller that dies loses nothing already recorded.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use lockpick_checkers::Op;

pub struct HistoryLog {
    file: File,
    next_index: u64,
}

impl HistoryLog {
    pub fn create(path: &Path) -> Result<HistoryLog> {
        let file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot create {path:?}"))?;
        Ok(HistoryLog {
            file,
            next_index: 0,
        })
    }

    /// Appends `op` with the next index and returns it as written.
    pub fn append(&mut self, mut op: Op) -> Result<Op> {
        op.index = self.next_index;
        let mut line = op.to_json_line();
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .context("cannot write the history")?;
        self.next_index += 1;
        Ok(op)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len(&self) -> u64 {
        self.next_index
    }
}
