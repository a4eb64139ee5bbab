//! Each run's processes in a cgroup (v2) of their own, `<the controller's cgroup>/<prefix>`:
//! every process lockpick starts enters it between fork and exec, and whatever it starts in
//! turn stays in it, wherever it goes (another process group, session or namespace, even the
//! host's network namespace through `/proc/<pid>/ns/net`). At teardown, `cgroup.kill` ends
//! them all at once, so no descendant outlives the run; `clean` does the same for a crashed
//! run, by the path its record names.
//!
//! SIGKILL is not instant: a process dies when it next runs in the kernel, which on a loaded
//! machine (or for one stuck in an uninterruptible wait) can take seconds. Teardown therefore
//! waits until the cgroup is empty, under a bound, and says which processes outlived the bound
//! rather than letting lockpick exit quietly beside them.

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// How long teardown waits, in all, for a run's killed processes to be gone.
pub const TEARDOWN_WAIT: Duration = Duration::from_secs(30);

/// A run's cgroup, removed (its processes killed) by [`RunCgroup::remove`], else on drop.
pub struct RunCgroup {
    path: PathBuf,
    /// Its `cgroup.procs`, open before any fork: a child writes itself there.
    procs: File,
    /// `remove` ran (whatever it found): dropping does not try again.
    removed: bool,
}

impl RunCgroup {
    /// Creates the cgroup of the run `prefix`, recording it first. `None` where the machine has
    /// no cgroup v2 this process may write (then only process groups and namespaces bound what
    /// a run leaves).
    pub fn create(prefix: &str) -> Result<Option<RunCgroup>> {
        let Some(parent) = own_cgroup() else {
            return Ok(None);
        };
        let path = parent.join(prefix);
        crate::run_prefix::record_made(prefix, &format!("cgroup {}", path.display()))?;
        if std::fs::create_dir(&path).is_err() {
            return Ok(None);
        }
        let procs = OpenOptions::new()
            .write(true)
            .open(path.join("cgroup.procs"))
            .with_context(|| format!("cannot open {}/cgroup.procs", path.display()))?;
        Ok(Some(RunCgroup {
            path,
            procs,
            removed: false,
        }))
    }

    /// Kills every process of the run and removes the cgroup once they are all gone; an error
    /// names those still alive at `deadline` (the cgroup is left for `clean`).
    pub fn remove(&mut self, deadline: Instant) -> Result<()> {
        self.removed = true;
        kill_and_remove(&self.path, deadline)
    }

    /// Whether `pid` is in the cgroup now.
    pub fn holds(&self, pid: nix::unistd::Pid) -> bool {
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .is_ok_and(|procs| procs.split_whitespace().any(|p| p == pid.to_string()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The descriptor a child writes itself into (see [`enter`]).
    pub fn procs(&self) -> RawFd {
        self.procs.as_raw_fd()
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        if let Err(e) = kill_and_remove(&self.path, Instant::now() + TEARDOWN_WAIT) {
            eprintln!("lockpick: teardown: {e:#}");
        }
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is open as `procs`. Only a
/// `write` system call: safe between fork and exec.
pub fn enter(procs: RawFd) -> std::io::Result<()> {
    // SAFETY: the descriptor belongs to a RunCgroup that outlives every command it is given to.
    let fd = unsafe { BorrowedFd::borrow_raw(procs) };
    nix::unistd::write(fd, b"0")?;
    Ok(())
}

/// Kills every process in the cgroup at `path`, waits until it is empty (up to `deadline`),
/// and removes it. The kill is repeated every second meanwhile: the kernel kills what forks
/// during a kill, but a repeat costs nothing and ends whatever a race let through.
pub fn kill_and_remove(path: &Path, deadline: Instant) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    loop {
        std::fs::write(path.join("cgroup.kill"), "1")
            .with_context(|| format!("cannot kill {}", path.display()))?;
        let round = deadline.min(Instant::now() + Duration::from_secs(1));
        while populated(path) && Instant::now() < round {
            std::thread::sleep(Duration::from_millis(10));
        }
        if !populated(path) {
            break;
        }
        if Instant::now() >= deadline {
            bail!(
                "processes of the run still alive after SIGKILL, in {}: {}",
                path.display(),
                survivors(path).join(", ")
            );
        }
    }
    std::fs::remove_dir(path).with_context(|| format!("cannot remove {}", path.display()))
}

/// The processes still in the cgroup, as `pid (name, state X)`.
fn survivors(path: &Path) -> Vec<String> {
    let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
    procs
        .split_whitespace()
        .map(|pid| {
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let state = pid
                .parse()
                .ok()
                .and_then(|p| crate::processes::freezer::state(nix::unistd::Pid::from_raw(p)))
                .unwrap_or('?');
            format!("{pid} ({}, state {state})", name.trim())
        })
        .collect()
}

fn populated(path: &Path) -> bool {
    std::fs::read_to_string(path.join("cgroup.events"))
        .map(|events| events.lines().any(|l| l == "populated 1"))
        .unwrap_or(false)
}

/// The cgroup v2 mount point, from /proc/self/mountinfo.
fn cgroup2_mount() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        fs.starts_with("cgroup2 ")
            .then(|| mount.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

/// The folder of this process's own cgroup v2.
fn own_cgroup() -> Option<PathBuf> {
    let mount = cgroup2_mount()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let relative = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(mount.join(relative.trim_start_matches('/')))
}

/// A cgroup a run's record names, if it is one `clean` may kill: a folder named after the run's
/// prefix, inside the cgroup v2 mount, reached without `..`.
pub fn recorded(prefix: &str, line: &str) -> Option<PathBuf> {
    let path = PathBuf::from(line.strip_prefix("cgroup ")?);
    let mount = cgroup2_mount()?;
    let plain = path.components().all(|c| {
        matches!(
            c,
            std::path::Component::RootDir | std::path::Component::Normal(_)
        )
    });
    (plain && path.starts_with(&mount) && path.file_name()? == prefix).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_cgroup_named_after_its_run_inside_the_mount_may_be_killed() {
        let Some(mount) = cgroup2_mount() else {
            return;
        };
        let m = mount.display();
        assert_eq!(
            recorded("lkp1a2b3c", &format!("cgroup {m}/lkp1a2b3c")),
            Some(mount.join("lkp1a2b3c"))
        );
        for hostile in [
            format!("cgroup {m}/lkp1a2b3c/../system.slice"),
            format!("cgroup {m}/system.slice"),
            "cgroup /tmp/lkp1a2b3c".to_string(),
            format!("cgroup {m}/lkp1a2b3d"),
            format!("namespace {m}/lkp1a2b3c"),
        ] {
            assert_eq!(recorded("lkp1a2b3c", &hostile), None, "{hostile}");
        }
    }
}
