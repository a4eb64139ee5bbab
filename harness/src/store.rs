//! The store of runs: `<store>/<lock>-<nemesis>/<time>/` holds one run's history, results,
//! service logs and the exact command, with `latest` links to the newest run.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub const HISTORY: &str = "history.jsonl";
pub const RESULTS: &str = "results.json";
pub const CONFIG: &str = "config.json";
pub const COMMAND: &str = "command.txt";
pub const SCHEDULE: &str = "schedule.json";
pub const LOGS: &str = "logs";

/// Creates a fresh run folder (and its `logs/`) and points the `latest` links at it.
pub fn create_run_dir(store: &Path, name: &str) -> Result<PathBuf> {
    let group = store.join(name);
    fs::create_dir_all(&group).with_context(|| format!("cannot create {group:?}"))?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let mut attempt = 0;
    let dir = loop {
        let leaf = if attempt == 0 {
            stamp.clone()
        } else {
            format!("{stamp}-{attempt}")
        };
        let dir = group.join(&leaf);
        match fs::create_dir(&dir) {
            Ok(()) => break dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => attempt += 1,
            Err(e) => return Err(e).with_context(|| format!("cannot create {dir:?}")),
        }
    };
    fs::create_dir(dir.join(LOGS))?;
    let leaf = dir.file_name().expect("has a name");
    point_latest(&group.join("latest"), Path::new(leaf))?;
    point_latest(&store.join("latest"), &Path::new(name).join(leaf))?;
    Ok(dir)
}

/// Replaces a `latest` link atomically (a new link, renamed over the old one).
fn point_latest(link: &Path, target: &Path) -> Result<()> {
    // Unique per process and call: runs of one `compare` update the same links at once.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temporary = link.with_extension(format!("new-{}-{n}", std::process::id()));
    let _ = fs::remove_file(&temporary);
    symlink(target, &temporary).with_context(|| format!("cannot create {temporary:?}"))?;
    fs::rename(&temporary, link).with_context(|| format!("cannot update {link:?}"))?;
    Ok(())
}
