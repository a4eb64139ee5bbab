//! `lockpick clean`: removes what crashed runs left behind. It finds them by their prefix, skips
//! runs whose controller is still alive (see `run_prefix::liveness`), and has each runtime of
//! the catalogue remove what it made for them (`RuntimeKind::leftovers`, `remove`: namespaces
//! with the processes in them, containers); then the run's cgroup, scratch and records.
//!
//! Its report goes to standard output line by line, and a reader that goes away
//! (`lockpick clean | head -1`) must not stop the cleaning half-way: write errors are ignored.

use std::collections::BTreeSet;
use std::fmt::Arguments;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bad_input::bad;
use crate::cli::CleanArgs;
use crate::run_prefix::{self, liveness};
use crate::runtime::leftovers::Leftover;
use crate::runtime::{RuntimeKind, RUNTIMES};

/// One line of the report on standard output; a closed pipe is not an error of the cleaning.
fn say(line: Arguments) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// One line on standard error, likewise.
fn complain(line: Arguments) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Every run prefix whose in-memory files or records are on this machine (a run that died
/// before its runtime made anything leaves these only).
fn recorded_runs() -> BTreeSet<String> {
    let mut runs = BTreeSet::new();
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
            runs.insert(name);
        }
    }
    for name in named_files(run_prefix::RUN_DIR) {
        let prefix = name
            .strip_suffix(".lock")
            .or_else(|| name.strip_suffix(".controller"))
            .or_else(|| name.strip_suffix(".made"));
        if let Some(prefix) = prefix.filter(|p| run_prefix::is_prefix(p)) {
            runs.insert(prefix.to_string());
        }
    }
    runs
}

/// What each runtime of the catalogue left, in the catalogue's order.
fn runtime_leftovers() -> Vec<(&'static dyn RuntimeKind, Vec<Leftover>)> {
    RUNTIMES
        .iter()
        .map(|&kind| {
            let found = kind.leftovers(&mut |line| complain(format_args!("{line}")));
            (kind, found)
        })
        .collect()
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

/// Cleans what every dead run left (only `--prefix`'s when named); a live run is left alone
/// unless `--force`.
pub fn clean(args: &CleanArgs) -> Result<()> {
    if let Some(only) = &args.prefix {
        if !run_prefix::is_prefix(only) {
            return Err(bad(format!(
                "--prefix {only:?} is not a run prefix (they look like lkp1a2b3c)"
            )));
        }
    }
    let found = runtime_leftovers();
    let runs = runs_to_clean(args, &found);
    let mut removed = 0;
    for prefix in &runs {
        removed += clean_run(args, prefix, &found);
    }
    if runs.is_empty() {
        say(format_args!("nothing to clean"));
    } else if !args.dry_run {
        say(format_args!("removed {removed} namespace(s)"));
    }
    Ok(())
}

/// Every run that left something, recorded or found by a runtime, narrowed to `--prefix`: the
/// whole list is known before the first removal.
fn runs_to_clean(
    args: &CleanArgs,
    found: &[(&dyn RuntimeKind, Vec<Leftover>)],
) -> BTreeSet<String> {
    let mut runs = recorded_runs();
    runs.extend(
        found
            .iter()
            .flat_map(|(_, l)| l.iter().map(|l| l.prefix.clone())),
    );
    if let Some(only) = &args.prefix {
        runs.retain(|prefix| prefix == only);
    }
    runs
}

/// One run, unless it is still alive: its runtimes' leftovers, cgroups, scratch and records,
/// in that order. Returns how many namespaces went.
fn clean_run(args: &CleanArgs, prefix: &str, found: &[(&dyn RuntimeKind, Vec<Leftover>)]) -> usize {
    let of_run: Vec<(&dyn RuntimeKind, Vec<&Leftover>)> = found
        .iter()
        .map(|(kind, all)| (*kind, all.iter().filter(|l| l.prefix == prefix).collect()))
        .collect();
    let all_pids: Vec<nix::unistd::Pid> = of_run
        .iter()
        .flat_map(|(_, leftovers)| leftovers.iter().flat_map(|l| l.pids.iter().copied()))
        .collect();
    if !args.force {
        if let Some(why) = liveness(prefix, &all_pids) {
            say(format_args!(
                "{prefix}: still running ({why}), left alone (use --force to remove it anyway)"
            ));
            return 0;
        }
    }
    // Only what the run recorded making is its own: a namespace or container that merely
    // carries its prefix may be anyone's.
    let made = run_prefix::made(prefix);
    let mut removed = 0;
    for (kind, leftovers) in of_run {
        removed += remove_runtime_leftovers(prefix, kind, leftovers, &made, args.dry_run);
    }
    remove_cgroups(prefix, &made, args.dry_run);
    remove_scratch(prefix, &made, args.dry_run);
    if !args.dry_run {
        for suffix in [".lock", ".controller", ".made"] {
            let record = leftover_path(Path::new(run_prefix::RUN_DIR), prefix, suffix);
            if let Some(record) = record.filter(|r| ours(r, false) == Ownership::Ours) {
                let _ = fs::remove_file(record);
            }
        }
    }
    removed
}

/// What one runtime found of the run, removed by that runtime, but only what the run recorded
/// making. Returns how many namespaces went.
fn remove_runtime_leftovers(
    prefix: &str,
    kind: &dyn RuntimeKind,
    leftovers: Vec<&Leftover>,
    made: &BTreeSet<String>,
    dry_run: bool,
) -> usize {
    let (recorded, unrecorded): (Vec<&Leftover>, Vec<&Leftover>) = leftovers
        .into_iter()
        .partition(|l| made.contains(&l.record));
    for leftover in unrecorded {
        say(format_args!(
            "{prefix}: {} is not in the record of what its run made, left alone",
            leftover.record
        ));
    }
    let recorded: Vec<Leftover> = recorded.into_iter().cloned().collect();
    let removal = kind.remove(&recorded, dry_run);
    for line in removal.said {
        say(format_args!("{prefix}: {line}"));
    }
    for line in removal.failed {
        complain(format_args!("{prefix}: {line}"));
    }
    removal.namespaces
}

/// Whatever of the run still runs, wherever it went: its cgroup, by its record. Apart from the
/// runtimes' leftovers because a process may have left its namespace.
fn remove_cgroups(prefix: &str, made: &BTreeSet<String>, dry_run: bool) {
    for cgroup in made
        .iter()
        .filter_map(|l| crate::processes::cgroup::recorded(prefix, l))
    {
        if !cgroup.exists() {
            continue;
        }
        if dry_run {
            say(format_args!(
                "{prefix}: would kill and remove {}",
                cgroup.display()
            ));
        } else {
            let deadline = std::time::Instant::now() + crate::processes::cgroup::TEARDOWN_WAIT;
            match crate::processes::cgroup::kill_and_remove(&cgroup, deadline) {
                Ok(()) => say(format_args!(
                    "{prefix}: killed and removed {}",
                    cgroup.display()
                )),
                Err(e) => complain(format_args!("{prefix}: {e:#}")),
            }
        }
    }
}

/// The run's scratch folder, only when the run recorded making it and it is still ours: after
/// the processes, which may have had files open in it.
fn remove_scratch(prefix: &str, made: &BTreeSet<String>, dry_run: bool) {
    let scratch = leftover_path(Path::new(crate::run::SCRATCH_ROOT), prefix, "")
        .filter(|_| made.contains("scratch"));
    match scratch.as_deref().map(|path| (path, ours(path, true))) {
        None | Some((_, Ownership::Missing)) => {}
        Some((path, Ownership::Foreign(why))) => say(format_args!(
            "{prefix}: {} {why}, left alone",
            path.display()
        )),
        Some((path, Ownership::Ours)) if dry_run => {
            say(format_args!("{prefix}: would remove {}", path.display()))
        }
        Some((path, Ownership::Ours)) => {
            crate::runtime::faketime::forget_all(path);
            match fs::remove_dir_all(path) {
                Ok(()) => say(format_args!("{prefix}: removed {}", path.display())),
                Err(e) => complain(format_args!(
                    "{prefix}: cannot remove {}: {e}",
                    path.display()
                )),
            }
        }
    }
}

#[cfg(test)]
#[path = "clean_tests.rs"]
mod tests;
