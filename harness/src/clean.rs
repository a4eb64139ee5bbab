//! `lockpick clean`: removes what crashed runs left behind. It finds them by their prefix, skips
//! runs whose controller is still alive (see `run_prefix::liveness`), resumes and kills their
//! processes, and deletes their namespaces and containers.
//!
//! Its report goes to standard output line by line, and a reader that goes away
//! (`lockpick clean | head -1`) must not stop the cleaning half-way: write errors are ignored.

use std::collections::BTreeMap;
use std::fmt::Arguments;
use std::fs;
use std::io::Write;

use anyhow::Result;

use crate::bad_input::bad;
use crate::cli::CleanArgs;
use crate::run_prefix::{self, liveness, prefix_of};
use crate::runtime::netns::{ip, kill_everything_in, list_namespaces, pids_in};

/// One line of the report on standard output; a closed pipe is not an error of the cleaning.
fn say(line: Arguments) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// One line on standard error, likewise.
fn complain(line: Arguments) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Every run prefix that left something on this machine: namespaces, in-memory files, records.
fn leftovers() -> BTreeMap<String, Vec<String>> {
    let mut runs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for ns in list_namespaces() {
        if let Some(prefix) = prefix_of(&ns) {
            runs.entry(prefix.to_string()).or_default().push(ns);
        }
    }
    // In-memory files and records of runs that died before creating any namespace.
    let named_files = |dir: &str| -> Vec<String> {
        fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    for name in named_files(crate::run::SCRATCH_ROOT) {
        if run_prefix::is_prefix(&name) {
            runs.entry(name).or_default();
        }
    }
    for name in named_files(run_prefix::RUN_DIR) {
        let prefix = name
            .strip_suffix(".lock")
            .or_else(|| name.strip_suffix(".controller"));
        if let Some(prefix) = prefix.filter(|p| run_prefix::is_prefix(p)) {
            runs.entry(prefix.to_string()).or_default();
        }
    }
    runs
}

pub fn clean(args: &CleanArgs) -> Result<()> {
    if let Some(only) = &args.prefix {
        if !run_prefix::is_prefix(only) {
            return Err(bad(format!(
                "--prefix {only:?} is not a run prefix (they look like lkp1a2b3c)"
            )));
        }
    }
    let mut runs = leftovers();
    // Containers of the Docker runtime, by their run's prefix.
    let mut containers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (prefix, name) in crate::runtime::docker::leftover_containers() {
        runs.entry(prefix.clone()).or_default();
        containers.entry(prefix).or_default().push(name);
    }
    if let Some(only) = &args.prefix {
        runs.retain(|prefix, _| prefix == only);
    }
    let mut removed = 0;
    for (prefix, namespaces) in &runs {
        let pids: BTreeMap<&String, Vec<nix::unistd::Pid>> =
            namespaces.iter().map(|ns| (ns, pids_in(ns))).collect();
        let all_pids: Vec<nix::unistd::Pid> = pids.values().flatten().copied().collect();
        if !args.force {
            if let Some(why) = liveness(prefix, &all_pids) {
                say(format_args!(
                    "{prefix}: still running ({why}), left alone (use --force to remove it anyway)"
                ));
                continue;
            }
        }
        for ns in namespaces {
            let count = pids[ns].len();
            if args.dry_run {
                say(format_args!(
                    "{prefix}: would remove namespace {ns} and {count} process(es) in it"
                ));
                continue;
            }
            kill_everything_in(ns);
            match ip(&["netns", "del", ns]) {
                Ok(()) => {
                    say(format_args!(
                        "{prefix}: removed namespace {ns} ({count} process(es) killed)"
                    ));
                    removed += 1;
                }
                Err(e) => complain(format_args!("{prefix}: {e:#}")),
            }
        }
        let names = containers
            .get(prefix)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if args.dry_run && !names.is_empty() {
            say(format_args!(
                "{prefix}: would remove containers {}",
                names.join(" ")
            ));
        } else if !names.is_empty() {
            match crate::runtime::docker::remove_containers(names) {
                Ok(()) => say(format_args!(
                    "{prefix}: removed containers {}",
                    names.join(" ")
                )),
                Err(e) => complain(format_args!("{prefix}: {e:#}")),
            }
        }
        let scratch = std::path::Path::new(crate::run::SCRATCH_ROOT).join(prefix);
        if scratch.exists() && !args.dry_run {
            crate::faketime::forget_all(&scratch);
        }
        if scratch.exists() {
            if args.dry_run {
                say(format_args!("{prefix}: would remove {}", scratch.display()));
            } else if let Err(e) = fs::remove_dir_all(&scratch) {
                complain(format_args!(
                    "{prefix}: cannot remove {}: {e}",
                    scratch.display()
                ));
            } else {
                say(format_args!("{prefix}: removed {}", scratch.display()));
            }
        }
        if !args.dry_run {
            let _ = fs::remove_file(run_prefix::lock_path(prefix));
            let _ = fs::remove_file(run_prefix::controller_path(prefix));
        }
    }
    if runs.is_empty() {
        say(format_args!("nothing to clean"));
    } else if !args.dry_run {
        say(format_args!("removed {removed} namespace(s)"));
    }
    Ok(())
}
