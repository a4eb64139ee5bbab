//! The store of runs: `<store>/<lock>-<nemesis>/<time>/` holds one run's history, results,
//! service logs and the exact command, with `latest` links to the newest run.
//!
//! A store that cannot be written is bad input (exit 254, naming the path), found before anything
//! is made; and a run folder that cannot be filled is removed again, so no empty run and no
//! `latest` link pointing at one is left behind.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use anyhow::Result;
use nix::unistd::{access, AccessFlags};

use crate::bad_input::bad;

pub const HISTORY: &str = "history.jsonl";
pub const RESULTS: &str = "results.json";
pub const CONFIG: &str = "config.json";
pub const COMMAND: &str = "command.txt";
pub const SCHEDULE: &str = "schedule.json";
pub const LOGS: &str = "logs";
/// A comparison's files, in `<store>/compare/<time>/`.
pub const COMPARE_TABLE: &str = "compare.md";
pub const COMPARE_GRID: &str = "compare.html";
pub const COMPARE_JSON: &str = "compare.json";

/// Less free space than this and a run could not even write its history.
const MIN_FREE_BYTES: u64 = 1 << 20;

/// Checks, without creating anything, that a run named `name` can be stored under `store`: no
/// file in the way of a folder or a `latest` link, a writable folder to create it in, and room
/// on its file system.
pub fn check_writable(store: &Path, name: &str) -> Result<()> {
    let shown = store.display();
    let group = store.join(name);
    for folder in [store, group.as_path()] {
        if folder.symlink_metadata().is_ok() && !folder.is_dir() {
            return Err(bad(format!(
                "--store {shown}: {} is in the way (it is not a folder)",
                folder.display()
            )));
        }
    }
    if group
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(bad(format!(
            "--store {shown}: {} is a link, and lockpick follows no link inside its store",
            group.display()
        )));
    }
    if let Some(why) = crate::files::folder_trust::changeable_by_others(&group) {
        return Err(bad(format!("--store {shown}: {why}")));
    }
    for link in [store.join("latest"), group.join("latest")] {
        if link
            .symlink_metadata()
            .is_ok_and(|m| !m.file_type().is_symlink())
        {
            return Err(bad(format!(
                "--store {shown}: {} is in the way of the `latest` link (it is not a link)",
                link.display()
            )));
        }
    }
    // The deepest folder that exists: the run's folders are created in it.
    let mut existing = group.as_path();
    while existing.symlink_metadata().is_err() {
        existing = match existing.parent() {
            Some(parent) => parent,
            None => return Err(bad(format!("--store {shown}: no folder of it exists"))),
        };
    }
    if !existing.is_dir() {
        return Err(bad(format!(
            "--store {shown}: {} is in the way (it is not a folder)",
            existing.display()
        )));
    }
    if let Err(e) = access(existing, AccessFlags::W_OK | AccessFlags::X_OK) {
        return Err(bad(format!(
            "--store {shown}: cannot write in {}: {}",
            existing.display(),
            e.desc()
        )));
    }
    if let Ok(stats) = nix::sys::statvfs::statvfs(existing) {
        let free = stats.blocks_available() * stats.fragment_size();
        if free < MIN_FREE_BYTES {
            return Err(bad(format!(
                "--store {shown}: the file system of {} is full ({} KiB free)",
                existing.display(),
                free / 1024
            )));
        }
    }
    Ok(())
}

/// Creates a fresh run folder (and its `logs/`), writes `files` (name, contents) into it, and
/// only then points the `latest` links at it. If any step fails, whatever it created is removed
/// and the error, naming the path, is bad input.
pub fn create_run_dir(store: &Path, name: &str, files: &[(&str, String)]) -> Result<PathBuf> {
    let group = store.join(name);
    let made = missing_folders(&group);
    fs::create_dir_all(&group).map_err(|e| {
        remove_empty(&made);
        bad(format!(
            "--store {}: cannot create {}: {e}",
            store.display(),
            group.display()
        ))
    })?;
    // Made a link since it was checked: nothing is created through it.
    if !group.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Err(bad(format!(
            "--store {}: {} is a link or not a folder",
            store.display(),
            group.display()
        )));
    }
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
            Err(e) => {
                remove_empty(&made);
                return Err(bad(format!(
                    "--store {}: cannot create {}: {e}",
                    store.display(),
                    dir.display()
                )));
            }
        }
    };
    if let Err(e) = fill(store, name, &dir, files) {
        let _ = fs::remove_dir_all(&dir);
        remove_empty(&made);
        return Err(e);
    }
    Ok(dir)
}

/// Writes the run's first files and its `latest` links.
fn fill(store: &Path, name: &str, dir: &Path, files: &[(&str, String)]) -> Result<()> {
    let failed = |path: &Path, e: std::io::Error| {
        bad(format!(
            "--store {}: cannot write {}: {e}",
            store.display(),
            path.display()
        ))
    };
    let logs = dir.join(LOGS);
    fs::create_dir(&logs).map_err(|e| failed(&logs, e))?;
    for (file, contents) in files {
        let path = dir.join(file);
        crate::files::safe_write::write_new(&path, contents).map_err(|e| failed(&path, e))?;
    }
    let leaf = dir.file_name().expect("has a name");
    point_latest(&store.join(name).join("latest"), Path::new(leaf)).map_err(bad)?;
    point_latest(&store.join("latest"), &Path::new(name).join(leaf)).map_err(bad)?;
    Ok(())
}

/// The folders `create_dir_all(path)` would create, deepest first.
fn missing_folders(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .take_while(|p| !p.as_os_str().is_empty() && p.symlink_metadata().is_err())
        .map(Path::to_path_buf)
        .collect()
}

/// Removes folders this run created, deepest first, as long as they are empty.
fn remove_empty(folders: &[PathBuf]) {
    for folder in folders {
        if fs::remove_dir(folder).is_err() {
            return;
        }
    }
}

/// Replaces a `latest` link atomically (a new link, renamed over the old one). The error is one
/// line naming the link.
fn point_latest(link: &Path, target: &Path) -> std::result::Result<(), String> {
    // A random name, made exclusively (a link is never created over anything): runs of one
    // `compare` update the same links at once, and nothing planted there is removed.
    let temporary = loop {
        let suffix: u64 = rand::random();
        let temporary = link.with_extension(format!("new-{suffix:016x}"));
        match symlink(target, &temporary) {
            Ok(()) => break temporary,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot create the link {}: {e}",
                    temporary.display()
                ))
            }
        }
    };
    fs::rename(&temporary, link).map_err(|e| {
        let _ = fs::remove_file(&temporary);
        format!("cannot update the link {}: {e}", link.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_in_the_way_of_the_store_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        fs::write(&file, "").unwrap();
        let refused = check_writable(&file.join("store"), "redis-none").unwrap_err();
        assert!(refused.to_string().contains("a-file"), "{refused}");
        let refused = check_writable(&file, "redis-none").unwrap_err();
        assert!(refused.to_string().contains("is in the way"), "{refused}");
    }

    #[test]
    fn a_run_folder_that_cannot_be_filled_is_removed_with_the_folders_it_made() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        // A folder where a file must go: the write fails after the run folder exists.
        let refused = create_run_dir(&store, "redis-none", &[("logs", String::new())]);
        assert!(refused.is_err());
        assert!(!store.exists(), "the store was left behind");
        let made = create_run_dir(&store, "redis-none", &[(COMMAND, "x".into())]).unwrap();
        assert_eq!(fs::read_to_string(made.join(COMMAND)).unwrap(), "x");
        assert!(store.join("latest").join(COMMAND).exists());
    }
}
