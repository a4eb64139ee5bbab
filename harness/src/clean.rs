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
use std::path::{Path, PathBuf};

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
            .or_else(|| name.strip_suffix(".controller"))
            .or_else(|| name.strip_suffix(".made"));
        if let Some(prefix) = prefix.filter(|p| run_prefix::is_prefix(p)) {
            runs.entry(prefix.to_string()).or_default();
        }
    }
    runs
}

/// The containers of each run, by the prefix in their label. A label is whatever the
/// container's creator wrote: only a run prefix that the container's name carries too counts;
/// any other container is named and left alone.
fn container_runs(listed: Vec<(String, String)>) -> BTreeMap<String, Vec<String>> {
    let mut runs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (label, name) in listed {
        if run_prefix::is_prefix(&label) && prefix_of(&name) == Some(label.as_str()) {
            runs.entry(label).or_default().push(name);
        } else {
            complain(format_args!(
                "container {name:?}: its label {}={label:?} is not the run prefix in its name, left alone",
                crate::runtime::docker::PREFIX_LABEL
            ));
        }
    }
    runs
}

/// `<root>/<prefix><suffix>`, only for a real run prefix and a suffix without a `/`: no
/// prefix, wherever it came from, names a path outside `root`.
fn leftover_path(root: &Path, prefix: &str, suffix: &str) -> Option<PathBuf> {
    if !run_prefix::is_prefix(prefix) || suffix.contains('/') {
        return None;
    }
    let path = root.join(format!("{prefix}{suffix}"));
    (path.parent() == Some(root)).then_some(path)
}

#[derive(Debug, PartialEq, Eq)]
enum Ownership {
    Missing,
    /// A folder (or file) of this user's, not a link.
    Ours,
    /// Why it is not: a link, another kind of file, another user's.
    Foreign(String),
}

/// Whether `path` is what a run of this user would have made there: a folder (`folder`) or a
/// regular file, not a link, owned by this user. `/dev/shm` is anyone's to write in.
fn ours(path: &Path, folder: bool) -> Ownership {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ownership::Missing;
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Ownership::Foreign("is a link".into());
    }
    if (folder && !kind.is_dir()) || (!folder && !kind.is_file()) {
        return Ownership::Foreign(format!(
            "is not a {}",
            if folder { "folder" } else { "regular file" }
        ));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Ownership::Foreign(format!("belongs to uid {}, not {me}", meta.uid()));
    }
    Ownership::Ours
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
    let containers = container_runs(crate::runtime::docker::leftover_containers());
    for prefix in containers.keys() {
        runs.entry(prefix.clone()).or_default();
    }
    if let Some(only) = &args.prefix {
        runs.retain(|prefix, _| prefix == only);
    }
    let mut removed = 0;
    for (prefix, named) in &runs {
        // Only what the run recorded making is its own: a namespace or container that merely
        // carries its prefix may be anyone's.
        let made = run_prefix::made(prefix);
        let (namespaces, unrecorded): (Vec<&String>, Vec<&String>) = named
            .iter()
            .partition(|ns| made.contains(&format!("namespace {ns}")));
        let pids: BTreeMap<&String, Vec<nix::unistd::Pid>> =
            named.iter().map(|ns| (ns, pids_in(ns))).collect();
        let all_pids: Vec<nix::unistd::Pid> = pids.values().flatten().copied().collect();
        if !args.force {
            if let Some(why) = liveness(prefix, &all_pids) {
                say(format_args!(
                    "{prefix}: still running ({why}), left alone (use --force to remove it anyway)"
                ));
                continue;
            }
        }
        for ns in unrecorded {
            say(format_args!(
                "{prefix}: namespace {ns} is not in the record of what its run made, left alone"
            ));
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
        let (names, unrecorded): (Vec<String>, Vec<String>) = containers
            .get(prefix)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .partition(|name| made.contains(&format!("container {name}")));
        for name in unrecorded {
            say(format_args!(
                "{prefix}: container {name} is not in the record of what its run made, left alone"
            ));
        }
        if args.dry_run && !names.is_empty() {
            say(format_args!(
                "{prefix}: would remove containers {}",
                names.join(" ")
            ));
        } else if !names.is_empty() {
            match crate::runtime::docker::remove_containers(&names) {
                Ok(()) => say(format_args!(
                    "{prefix}: removed containers {}",
                    names.join(" ")
                )),
                Err(e) => complain(format_args!("{prefix}: {e:#}")),
            }
        }
        // Whatever of the run still runs, wherever it went: its cgroup, by its record.
        for cgroup in made
            .iter()
            .filter_map(|l| crate::run_cgroup::recorded(prefix, l))
        {
            if !cgroup.exists() {
                continue;
            }
            if args.dry_run {
                say(format_args!(
                    "{prefix}: would kill and remove {}",
                    cgroup.display()
                ));
            } else {
                let deadline = std::time::Instant::now() + crate::run_cgroup::TEARDOWN_WAIT;
                match crate::run_cgroup::kill_and_remove(&cgroup, deadline) {
                    Ok(()) => say(format_args!(
                        "{prefix}: killed and removed {}",
                        cgroup.display()
                    )),
                    Err(e) => complain(format_args!("{prefix}: {e:#}")),
                }
            }
        }
        let scratch = leftover_path(Path::new(crate::run::SCRATCH_ROOT), prefix, "")
            .filter(|_| made.contains("scratch"));
        match scratch.as_deref().map(|path| (path, ours(path, true))) {
            None | Some((_, Ownership::Missing)) => {}
            Some((path, Ownership::Foreign(why))) => say(format_args!(
                "{prefix}: {} {why}, left alone",
                path.display()
            )),
            Some((path, Ownership::Ours)) if args.dry_run => {
                say(format_args!("{prefix}: would remove {}", path.display()))
            }
            Some((path, Ownership::Ours)) => {
                crate::faketime::forget_all(path);
                match fs::remove_dir_all(path) {
                    Ok(()) => say(format_args!("{prefix}: removed {}", path.display())),
                    Err(e) => complain(format_args!(
                        "{prefix}: cannot remove {}: {e}",
                        path.display()
                    )),
                }
            }
        }
        if !args.dry_run {
            for suffix in [".lock", ".controller", ".made"] {
                let record = leftover_path(Path::new(run_prefix::RUN_DIR), prefix, suffix);
                if let Some(record) = record.filter(|r| ours(r, false) == Ownership::Ours) {
                    let _ = fs::remove_file(record);
                }
            }
        }
    }
    if runs.is_empty() {
        say(format_args!("nothing to clean"));
    } else if !args.dry_run {
        say(format_args!("removed {removed} namespace(s)"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "clean_tests.rs"]
mod tests;
