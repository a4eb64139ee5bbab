//! A client program's descendant that leaves everything the run put it in (its process tree by
//! a double fork and setsid, the run's cgroup by writing itself into the root cgroup, its node's
//! network by joining the host's) still ends with the run: the run's PID namespace holds it,
//! and no process can leave a PID namespace. The run names what it had to end. A killed
//! controller takes the namespace with it.
//!
//! Real processes, a real redis server, redis-py's Lock (Debian's python3-redis) as the client.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::examples::example;
use common::{finished, lockpick, wait_for, Background};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The cgroup v2 mount, where the escapee writes itself into the root cgroup.
const CGROUP2_CANDIDATES: [&str; 2] = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"];

fn cgroup2_root() -> &'static str {
    CGROUP2_CANDIDATES
        .into_iter()
        .find(|dir| Path::new(dir).join("cgroup.procs").exists())
        .expect("a cgroup v2 mount")
}

/// An exec client program: redis-py's example, in front of which the first client to start
/// leaves a grandchild that escapes (double fork, setsid, the root cgroup, the host's network:
/// this test's)
/// and then touches a file every second for two minutes. It writes its host pid (read from
/// /proc/self, which is the host's /proc) once it has escaped, with where it went.
fn escaping_client(dir: &Path) -> String {
    let script = dir.join("escaping-client.sh");
    let d = dir.display();
    let root = cgroup2_root();
    // The host's network, as this test's own process has it (pid 1 may be out of reach).
    let host = std::process::id();
    let text = format!(
        r#"#!/bin/sh
if mkdir "{d}/first" 2>/dev/null; then
  ( setsid sh -c '
      echo 0 > {root}/cgroup.procs
      exec nsenter -t {host} -n sh -c "
        read -r pid rest < /proc/self/stat
        {{ echo \$pid; cat /proc/self/cgroup; readlink /proc/self/ns/net; }} > {d}/escaped.tmp
        mv {d}/escaped.tmp {d}/escaped
        i=0
        while [ \$i -lt 120 ]; do touch {d}/alive; sleep 1; i=\$((i+1)); done"
    ' </dev/null >/dev/null 2>&1 & )
fi
exec /usr/bin/python3 {}
"#,
        example("python-redis/lock_client.py")
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script.display().to_string()
}

/// The escapee as it recorded itself: its host pid, and its start time (so that a later
/// process with the same pid is not taken for it). Killed on drop, so that a failing test
/// leaves nothing behind.
struct Escapee {
    pid: Pid,
    start: String,
    /// What it wrote: its pid, its cgroups, its network namespace.
    record: String,
}

impl Escapee {
    /// Waits until the escapee has recorded itself in `dir`.
    fn recorded_in(dir: &Path) -> Escapee {
        let file = dir.join("escaped");
        wait_for("the escapee's record", Duration::from_secs(120), || {
            file.exists()
        });
        let record = std::fs::read_to_string(&file).unwrap();
        let pid = Pid::from_raw(record.lines().next().unwrap().trim().parse().unwrap());
        let start = start_time(pid).unwrap_or_default();
        Escapee { pid, start, record }
    }

    /// Whether this very process still runs (a zombie has ended).
    fn alive(&self) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return false;
        };
        let state = stat[stat.rfind(')').unwrap() + 1..]
            .trim_start()
            .chars()
            .next();
        !matches!(state, Some('Z') | Some('X')) && start_time(self.pid) == Some(self.start.clone())
    }

    /// It left the run's network for the host's, and the run's cgroup for the root one.
    fn assert_escaped(&self) {
        let host_net = std::fs::read_link("/proc/self/ns/net").unwrap();
        assert!(
            self.record.contains(&host_net.display().to_string()),
            "the escapee did not join the host's network: {}",
            self.record
        );
        assert!(
            self.record.lines().any(|l| l == "0::/"),
            "the escapee did not leave the run's cgroup: {}",
            self.record
        );
    }
}

impl Drop for Escapee {
    fn drop(&mut self) {
        if self.alive() {
            let _ = kill(self.pid, Signal::SIGKILL);
        }
    }
}

fn start_time(pid: Pid) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(19)
        .map(str::to_string)
}

fn exec_lock(dir: &Path) -> String {
    format!("exec:redis:{}", escaping_client(dir))
}

#[test]
fn a_grandchild_that_left_the_runs_cgroup_and_network_ends_with_the_run_which_names_it() {
    let scratch = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let lock = exec_lock(scratch.path());
    let output = lockpick()
        .args([
            "run",
            "--lock",
            &lock,
            "--time-limit",
            "6s",
            "--clients",
            "2",
        ])
        .arg("--store")
        .arg(store.path())
        .output()
        .unwrap();
    let escapee = Escapee::recorded_in(scratch.path());
    let run = finished(store.path(), output);
    escapee.assert_escaped();
    assert!(
        !escapee.alive(),
        "the escapee {} outlived the run (exit {}):\n{}",
        escapee.pid,
        run.code,
        run.stderr
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(&format!("{} (sh", escapee.pid)),
        "the run does not name the process it ended:\n{}",
        run.stderr
    );
}

#[test]
fn a_killed_controller_takes_the_escaped_grandchild_with_it_before_clean_removes_the_rest() {
    let scratch = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let lock = exec_lock(scratch.path());
    let mut command = lockpick();
    command.args([
        "run",
        "--lock",
        &lock,
        "--time-limit",
        "120s",
        "--clients",
        "2",
    ]);
    let mut run: Background = common::start_in(command, store.path());
    // The prefix first: the guard cleans the run by it whatever fails later.
    let history = store.path().join("latest/history.jsonl");
    wait_for("the run's setup line", Duration::from_secs(120), || {
        std::fs::read_to_string(&history).is_ok_and(|h| h.contains('\n'))
    });
    let dir: PathBuf = store.path().join("latest").canonicalize().unwrap();
    run.prefix = Some(common::run_identity(&dir).0);
    let escapee = Escapee::recorded_in(scratch.path());
    escapee.assert_escaped();
    assert!(escapee.alive(), "the escapee did not start");

    kill(run.pid(), Signal::SIGKILL).unwrap();
    run.wait();
    // The namespace's init dies with the controller, and the kernel ends the namespace: before
    // any `clean`. SIGKILL ends a process when it next runs: on a busy machine, not at once.
    wait_for(
        "the escapee's end with the controller",
        Duration::from_secs(30),
        || !escapee.alive(),
    );
    let prefix = run.prefix.clone().unwrap();
    common::clean_prefix(lockpick(), &prefix);
    common::assert_prefix_gone(&prefix);
}
