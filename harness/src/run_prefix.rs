//! The run's prefix: every namespace, process and file a run creates carries it, so
//! `lockpick clean` can find the leftovers of any crashed run, and never touches anything else.
//!
//! A live run holds an exclusive `flock` on `/run/lockpick/<prefix>.lock`. The kernel drops the
//! lock when the controller dies, however it dies, so `clean` can tell a crashed run's leftovers
//! from a run still in progress (tests run in parallel; cleaning must not kill a neighbour).
//!
//! Liveness does not rest on that one file: the lock file and a second one,
//! `/run/lockpick/<prefix>.controller`, both record the controller's pid and its start time
//! (field 22 of `/proc/<pid>/stat`, so a reused pid does not count), and the processes in the
//! run's namespaces name their parent, the controller. A run is live if any of these says so.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use nix::unistd::Pid;
use rand::Rng;

/// Where live runs keep their lock files.
pub const RUN_DIR: &str = "/run/lockpick";

/// How many runs can live at once: one /24 each, `10.100.0.0` to `10.199.255.0`.
const SUBNETS: u32 = 100 * 256;

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
    lock: Flock<File>,
    /// Teardown left part of the run behind: its record of what it made stays, for `clean`.
    keep_record: bool,
}

/// A process, told apart from a later one that reuses its pid by its start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Controller {
    pub pid: i32,
    /// Clock ticks after boot at which it started (`/proc/<pid>/stat` field 22).
    pub start: u64,
}

impl Controller {
    pub fn current() -> Option<Controller> {
        let pid = std::process::id() as i32;
        Some(Controller {
            pid,
            start: stat_field(pid, 22)?,
        })
    }

    /// Whether this very process (not another one with its pid) still runs.
    pub fn is_running(&self) -> bool {
        stat_field(self.pid, 22) == Some(self.start)
    }

    fn record(&self) -> String {
        format!("{} {}\n", self.pid, self.start)
    }

    fn parse(text: &str) -> Option<Controller> {
        let mut words = text.split_whitespace();
        let pid = words.next()?.parse().ok()?;
        let start = words.next()?.parse().ok()?;
        Some(Controller { pid, start })
    }
}

/// Field `n` (counted from 1, as proc(5) does) of `/proc/<pid>/stat`, for the numeric fields
/// after the command name. The name is in parentheses and may hold spaces or parentheses
/// itself, so the fields are counted from its last `)`.
pub fn stat_field(pid: i32, n: usize) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name
        .split_whitespace()
        .nth(n.checked_sub(3)?)?
        .parse()
        .ok()
}

impl RunPrefix {
    /// Draws a fresh random prefix (never from the run's seed: two runs with the same seed may
    /// run side by side) and takes its lock.
    pub fn claim() -> Result<RunPrefix> {
        fs::create_dir_all(RUN_DIR).with_context(|| format!("cannot create {RUN_DIR}"))?;
        for _ in 0..SUBNETS * 4 {
            // One name per subnet, so that two live runs never share a /24: the lock file
            // below makes the name, and so the subnet, this run's alone while it lives.
            let name = format!("lkp{:06x}", rand::thread_rng().gen_range(0..SUBNETS));
            // A crashed run's records keep its name until `lockpick clean` removes them.
            if controller_path(&name).exists() || made_path(&name).exists() {
                continue;
            }
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
            // From here on, dropping the prefix removes its files.
            let prefix = RunPrefix {
                name,
                lock_path,
                lock,
                keep_record: false,
            };
            prefix.record_controller()?;
            return Ok(prefix);
        }
        anyhow::bail!(
            "no free run prefix: {SUBNETS} runs (live or crashed, see `lockpick clean`) hold them"
        )
    }

    /// Writes the controller's pid and start time into the lock file and the controller file.
    fn record_controller(&self) -> Result<()> {
        let me = Controller::current().context("cannot read this process's /proc/self/stat")?;
        let mut lock: &File = &self.lock;
        lock.write_all(me.record().as_bytes())
            .with_context(|| format!("cannot write {:?}", self.lock_path))?;
        let record = controller_path(&self.name);
        crate::files::safe_write::write_new(&record, me.record())
            .with_context(|| format!("cannot write {record:?}"))
    }

    /// A private /24 for this run, `10.x.y.0/24`, one per prefix (`10.100.0` to `10.199.255`):
    /// no other live run has it. It exists only inside the run's own namespaces, so it can
    /// never clash with the host's routes.
    pub fn subnet(&self) -> [u8; 3] {
        subnet_of(&self.name)
    }
}

impl RunPrefix {
    /// Keeps the record of what the run made when the prefix goes: teardown could not remove
    /// all of it, and `clean` finds the rest (a cgroup still holding a process) only there.
    pub fn keep_record(&mut self) {
        self.keep_record = true;
    }
}

impl Drop for RunPrefix {
    fn drop(&mut self) {
        let _ = fs::remove_file(controller_path(&self.name));
        if !self.keep_record {
            let _ = fs::remove_file(made_path(&self.name));
        }
        let _ = fs::remove_file(&self.lock_path);
    }
}

/// The /24 of the run named `prefix` (see [`RunPrefix::subnet`]).
fn subnet_of(prefix: &str) -> [u8; 3] {
    let number = u32::from_str_radix(&prefix[3..], 16).expect("a prefix is hex") % SUBNETS;
    [10, 100 + (number >> 8) as u8, number as u8]
}

pub fn lock_path(prefix: &str) -> PathBuf {
    PathBuf::from(RUN_DIR).join(format!("{prefix}.lock"))
}

/// The second record of a run's controller, beside its lock file.
pub fn controller_path(prefix: &str) -> PathBuf {
    PathBuf::from(RUN_DIR).join(format!("{prefix}.controller"))
}

/// The record of what a run made, beside its lock file: one line per thing (`namespace <name>`,
/// `container <name>`, `scratch`), each written before the thing is made, so that `clean`
/// removes what the run made and nothing else that merely carries its prefix.
pub fn made_path(prefix: &str) -> PathBuf {
    PathBuf::from(RUN_DIR).join(format!("{prefix}.made"))
}

/// Notes, before making it, that the run of `prefix` makes `what` (`namespace lkp…-n1`).
pub fn record_made(prefix: &str, what: &str) -> Result<()> {
    let path = made_path(prefix);
    let mut record = crate::files::safe_write::append(&path)
        .with_context(|| format!("cannot write {path:?}"))?;
    writeln!(record, "{what}").with_context(|| format!("cannot write {path:?}"))
}

/// What the run of `prefix` recorded making; empty if it recorded nothing (or the record is not
/// a regular file of this user's).
pub fn made(prefix: &str) -> std::collections::BTreeSet<String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut text = String::new();
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits() | nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(made_path(prefix));
    if let Ok(file) = opened {
        let mine = file
            .metadata()
            .is_ok_and(|m| m.is_file() && m.uid() == nix::unistd::geteuid().as_raw());
        if mine {
            let _ = file.take(1 << 20).read_to_string(&mut text);
        }
    }
    text.lines().map(str::to_string).collect()
}

/// Why a run counts as alive, for `clean` to say; `None` if nothing says it is.
pub fn liveness(prefix: &str, namespace_pids: &[Pid]) -> Option<String> {
    let lock = lock_path(prefix);
    if let Ok(file) = File::open(&lock) {
        if Flock::lock(file, FlockArg::LockExclusiveNonblock).is_err() {
            return Some(format!("its lock {} is held", lock.display()));
        }
    }
    for record in [lock, controller_path(prefix)] {
        let controller = fs::read_to_string(&record)
            .ok()
            .and_then(|text| Controller::parse(&text));
        if let Some(controller) = controller.filter(Controller::is_running) {
            return Some(format!(
                "its controller, pid {} as recorded in {}, still runs",
                controller.pid,
                record.display()
            ));
        }
    }
    // The processes a controller started in the run's namespaces are its children (and die
    // with it): a parent outside those namespaces that is a lockpick is that controller.
    for pid in namespace_pids {
        let Some(parent) = stat_field(pid.as_raw(), 4).map(|p| p as i32) else {
            continue;
        };
        let outside = !namespace_pids.iter().any(|p| p.as_raw() == parent);
        let comm = fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
        if parent > 1 && outside && comm.trim() == "lockpick" {
            return Some(format!(
                "process {pid} in its namespaces is a child of lockpick pid {parent}"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_prefix_a_run_can_draw_has_a_subnet_of_its_own() {
        let mut seen = std::collections::BTreeSet::new();
        for number in 0..super::SUBNETS {
            let subnet = super::subnet_of(&format!("lkp{number:06x}"));
            assert_eq!(subnet[0], 10);
            assert!((100..200).contains(&subnet[1]), "{subnet:?}");
            assert!(seen.insert(subnet), "lkp{number:06x} shares {subnet:?}");
        }
    }

    use super::*;

    #[test]
    fn a_controller_is_this_very_process_not_its_pid() {
        let me = Controller::current().unwrap();
        assert!(me.is_running());
        assert_eq!(Controller::parse(&me.record()), Some(me));
        let reused = Controller {
            start: me.start + 1,
            ..me
        };
        assert!(!reused.is_running(), "a later process with the same pid");
        // The parent pid is field 4.
        let parent = stat_field(me.pid, 4).unwrap();
        assert_eq!(parent as u32, std::os::unix::process::parent_id());
    }

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
