//! The run's files in memory (`/dev/shm/<prefix>`): server data, configuration, clock files and
//! clock skews. Removed with the run (and by `lockpick clean` after a crash).

use std::fs;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::runtime::faketime;

/// Where runs keep their in-memory files, each under its prefix.
pub const SCRATCH_ROOT: &str = "/dev/shm";

pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn create(prefix: &str) -> Result<Scratch> {
        let path = PathBuf::from(SCRATCH_ROOT).join(prefix);
        fs::create_dir(&path).with_context(|| format!("cannot create {path:?}"))?;
        Ok(Scratch { path })
    }

    pub fn remove(&self) {
        faketime::forget_all(&self.path);
        if let Err(e) = fs::remove_dir_all(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                crate::tell!("lockpick: teardown: cannot remove {:?}: {e}", self.path);
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.remove();
    }
}
