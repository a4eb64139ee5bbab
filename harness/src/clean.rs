//! `lockpick clean`: removes what crashed runs left behind. It finds them by their prefix, skips
//! runs whose controller is still alive (their lock file is held), resumes and kills their
//! processes, and deletes their namespaces.

use std::collections::BTreeMap;
use std::fs;

use anyhow::Result;

use crate::cli::CleanArgs;
use crate::config::bad;
use crate::run_prefix::{self, is_alive, prefix_of};
use crate::runtime::netns::{ip, kill_everything_in, list_namespaces, pids_in};

pub fn clean(args: &CleanArgs) -> Result<()> {
    let mut runs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for ns in list_namespaces() {
        if let Some(prefix) = prefix_of(&ns) {
            runs.entry(prefix.to_string()).or_default().push(ns);
        }
    }
    // In-memory files and lock files of runs that died before creating any namespace.
    if let Ok(entries) = fs::read_dir(crate::run::SCRATCH_ROOT) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if run_prefix::is_prefix(&name) {
                runs.entry(name).or_default();
            }
        }
    }
    if let Ok(entries) = fs::read_dir(run_prefix::RUN_DIR) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if let Some(prefix) = name.strip_suffix(".lock") {
                if run_prefix::is_prefix(prefix) {
                    runs.entry(prefix.to_string()).or_default();
                }
            }
        }
    }
    if let Some(only) = &args.prefix {
        if !run_prefix::is_prefix(only) {
            return Err(bad(format!(
                "--prefix {only:?} is not a run prefix (they look like lkp1a2b3c)"
            )));
        }
        runs.retain(|prefix, _| prefix == only);
    }
    let mut removed = 0;
    for (prefix, namespaces) in &runs {
        if !args.force && is_alive(prefix) {
            println!("{prefix}: still running, left alone (use --force to remove it anyway)");
            continue;
        }
        for ns in namespaces {
            let pids = pids_in(ns);
            if args.dry_run {
                println!(
                    "{prefix}: would remove namespace {ns} and {} process(es) in it",
                    pids.len()
                );
                continue;
            }
            kill_everything_in(ns);
            match ip(&["netns", "del", ns]) {
                Ok(()) => {
                    println!(
                        "{prefix}: removed namespace {ns} ({} process(es) killed)",
                        pids.len()
                    );
                    removed += 1;
                }
                Err(e) => eprintln!("{prefix}: {e:#}"),
            }
        }
        let scratch = std::path::Path::new(crate::run::SCRATCH_ROOT).join(prefix);
        if scratch.exists() && !args.dry_run {
            crate::faketime::forget_all(&scratch);
        }
        if scratch.exists() {
            if args.dry_run {
                println!("{prefix}: would remove {}", scratch.display());
            } else if let Err(e) = fs::remove_dir_all(&scratch) {
                eprintln!("{prefix}: cannot remove {}: {e}", scratch.display());
            } else {
                println!("{prefix}: removed {}", scratch.display());
            }
        }
        if !args.dry_run {
            let _ = fs::remove_file(run_prefix::lock_path(prefix));
        }
    }
    if runs.is_empty() {
        println!("nothing to clean");
    } else if !args.dry_run {
        println!("removed {removed} namespace(s)");
    }
    Ok(())
}
