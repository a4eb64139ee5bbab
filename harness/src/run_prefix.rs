//! The run's prefix: every namespace, process and file a run creates carries it, so
//! `lockpick clean` can find the leftovers of any crashed run, and never touches anything else.
//!
//! A live run holds an exclusive `flock` on `/run/lockpick/<prefix>.lock`. The kernel drops the
//! lock when the controller dies, however it dies, so `clean` can tell a crashed run's leftovers
//! from a run still in progress (tests run in parallel; cleaning must not kill a neighbour).

use std::fs::{self, File, OpenOptions};
use std::path::PathBuf;

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use rand::Rng;

/// Where live runs keep their lock files.
pub const RUN_DIR: &str = "/run/lockpick";

/// The textual prefix: `lkp` and six hex digits.
pub fn is_prefix(text: &str) -> bool {
    text.len() == 9
        && text.starts_with("lkp")
        && text[3..]
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

/// The prefix of a name the harness made (`lkp1a2b3c-n1` → `lkp1a2b3c`).
pub fn prefix_of(name: &str) -> Option<&str> {
    let prefix = name.get(..9)?;
    (is_prefix(prefix) && name[9..].starts_with('-')).then_some(prefix)
}

/// A prefix this process owns for as long as it lives.
pub struct RunPrefix {
    pub name: String,
    lock_path: PathBuf,
    _lock: Flock<File>,
}

impl RunPrefix {
    /// Draws a fresh random prefix (never from the run's seed: two runs with the same seed may
    /// run side by side) and takes its lock.
    pub fn claim() -> Result<RunPrefix> {
        fs::create_dir_all(RUN_DIR).with_context(|| format!("cannot create {RUN_DIR}"))?;
        loop {
            let name = format!("lkp{:06x}", rand::thread_rng().gen_range(0..0x100_0000u32));
            let lock_path = lock_path(&name);
            let file = match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock_path)
            {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot create {lock_path:?}")),
            };
            let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock)
                .map_err(|(_, e)| e)
                .with_context(|| format!("cannot lock {lock_path:?}"))?;
            return Ok(RunPrefix {
                name,
                lock_path,
                _lock: lock,
            });
        }
    }

    /// A private /24 for this run, `10.x.y.0/24`, drawn from the prefix. It exists only inside
    /// the run's own namespaces, so it can never clash with the host's routes.
    pub fn subnet(&self) -> [u8; 3] {
        let bits = u32::from_str_radix(&self.name[3..], 16).expect("a prefix is hex");
        [10, 100 + (bits >> 16) as u8 % 100, (bits >> 8) as u8]
    }
}

impl Drop for RunPrefix {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.lock_path);
    }
}

pub fn lock_path(prefix: &str) -> PathBuf {
    PathBuf::from(RUN_DIR).join(format!("{prefix}.lock"))
}

/// Whether a run with this prefix is still alive (its controller holds the lock).
pub fn is_alive(prefix: &str) -> bool {
    let Ok(file) = File::open(lock_path(prefix)) else {
        return false;
    };
    Flock::lock(file, FlockArg::LockExclusiveNonblock).is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_with_a_whole_prefix_are_ours() {
        assert_eq!(prefix_of("lkp1a2b3c-n1"), Some("lkp1a2b3c"));
        assert_eq!(prefix_of("lkp1a2b3c-switch"), Some("lkp1a2b3c"));
        for other in [
            "lkp1a2b3c",
            "lkp1a2b3-n1",
            "lkpXa2b3c-n1",
            "lkp1A2B3C-n1",
            "docker0",
            "",
        ] {
            assert_eq!(prefix_of(other), None, "{other}");
        }
    }
}
