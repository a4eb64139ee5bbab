//! Shared helpers for the integration tests: they run the real `lockpick` binary as root
//! against real servers, each in its own store folder, and check what happened.
#![allow(dead_code)]

pub mod ci_steps;
pub mod compared;
pub mod dom;
pub mod engine;
pub mod examples;
pub mod junit_schema;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use lockpick_checkers::Results;
use serde_json::Value;

pub mod outputs;

pub fn lockpick() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lockpick"))
}

/// The result of one finished `lockpick run`.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub dir: PathBuf,
    /// `results.json` as written (`Null` when the run wrote none).
    pub results: Value,
    /// The same file read back into the checkers' results.
    pub checked: Option<Results>,
    /// Keeps a temporary store alive as long as the run is looked at.
    store: Option<tempfile::TempDir>,
}

impl Run {
    pub fn overlaps(&self) -> usize {
        let overlaps = self
            .checked
            .as_ref()
            .and_then(|r| r.overlapping_holders.as_ref());
        overlaps.map_or(0, |o| o.overlaps.len())
    }

    pub fn holds(&self) -> u64 {
        let overlaps = self
            .checked
            .as_ref()
            .and_then(|r| r.overlapping_holders.as_ref());
        overlaps.map_or(0, |o| o.holds as u64)
    }

    fn stale_accesses(&self) -> Option<&lockpick_checkers::stale_accesses::StaleAccesses> {
        self.checked.as_ref()?.stale_accesses.as_ref()
    }

    pub fn stale_writes(&self) -> u64 {
        self.stale_accesses().map_or(0, |s| s.stale_writes as u64)
    }

    pub fn stale_reads(&self) -> u64 {
        self.stale_accesses().map_or(0, |s| s.stale_reads as u64)
    }

    /// Accesses the resource rejected (fencing at work).
    pub fn rejected(&self) -> u64 {
        self.stale_accesses().map_or(0, |s| s.rejected as u64)
    }

    /// The verdict's word; `?` when the run wrote no results.
    pub fn valid(&self) -> &'static str {
        self.checked.as_ref().map_or("?", |r| r.valid.name())
    }

    pub fn history(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("history.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// Runs `lockpick run` with `args` (plus its own store) and reads what it stored.
pub fn run(store: &Path, args: &[&str]) -> Run {
    let output = lockpick()
        .arg("run")
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .expect("lockpick runs");
    finished(store, output)
}

/// Runs `lockpick run` with the flags in `line` (split at white space) in a temporary store
/// that lives as long as the result.
pub fn run_line(line: &str) -> Run {
    let store = tempfile::tempdir().unwrap();
    let args: Vec<&str> = line.split_whitespace().collect();
    let mut r = run(store.path(), &args);
    r.store = Some(store);
    r
}

pub fn finished(store: &Path, output: Output) -> Run {
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let dir = store.join("latest").canonicalize().unwrap_or_else(|e| {
        panic!("no run in {store:?} ({e}); stdout:\n{stdout}\nstderr:\n{stderr}")
    });
    let results = std::fs::read_to_string(dir.join("results.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    // Whatever a run stores must read back into the checkers' own type.
    let checked = (!results.is_null()).then(|| {
        serde_json::from_value::<Results>(results.clone())
            .unwrap_or_else(|e| panic!("results.json does not read back: {e}"))
    });
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout,
        stderr,
        dir,
        results,
        checked,
        store: None,
    };
    assert_nothing_left(&run);
    // Every run that got as far as its final read must have recorded every access.
    let final_read = &run.results["final_read"];
    if !final_read.is_null() {
        assert_eq!(
            final_read["valid"], "valid",
            "the history lost records: {final_read}"
        );
    }
    run
}

/// The run's prefix and its subnet's first three octets (`10.1.2.`), from the history's setup
/// operation, which even a killed run has written.
pub fn run_identity(dir: &Path) -> (String, String) {
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap_or_default();
    let setup: Value = history
        .lines()
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    let prefix = setup["value"]["prefix"].as_str().unwrap_or("").to_string();
    let server = setup["value"]["servers"][0].as_str().unwrap_or("");
    let subnet = server
        .rsplit_once('.')
        .map(|(net, _)| format!("{net}."))
        .unwrap_or_default();
    (prefix, subnet)
}

/// Nothing of the run is left: no namespace with its prefix, no lock file, no process whose
/// command line names its subnet or its folder.
pub fn assert_nothing_left(run: &Run) {
    let (prefix, subnet) = run_identity(&run.dir);
    assert_prefix_gone(&prefix);
    if !subnet.is_empty() {
        let dir = run.dir.to_string_lossy().to_string();
        let leftovers = processes_mentioning(&[&subnet, &dir]);
        assert!(leftovers.is_empty(), "processes left behind: {leftovers:?}");
    }
}

pub fn assert_prefix_gone(prefix: &str) {
    if prefix.is_empty() {
        return;
    }
    let namespaces = namespaces_with(prefix);
    assert!(
        namespaces.is_empty(),
        "namespaces left behind: {namespaces:?}"
    );
    let lock = format!("/run/lockpick/{prefix}.lock");
    assert!(!Path::new(&lock).exists(), "{lock} left behind");
    let scratch = format!("/dev/shm/{prefix}");
    assert!(!Path::new(&scratch).exists(), "{scratch} left behind");
    if let Some(cgroup) = run_cgroup(prefix) {
        assert!(!cgroup.exists(), "{cgroup:?} left behind");
    }
    let made = format!("/run/lockpick/{prefix}.made");
    assert!(!Path::new(&made).exists(), "{made} left behind");
}

/// Where a run of this test's would put its cgroup: `<cgroup v2 mount><own cgroup>/<prefix>`.
fn run_cgroup(prefix: &str) -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        fs.starts_with("cgroup2 ")
            .then(|| mount.split_whitespace().nth(4).map(PathBuf::from))?
    })?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let relative = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(mount.join(relative.trim_start_matches('/')).join(prefix))
}

pub fn namespaces_with(prefix: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

pub fn processes_mentioning(needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if needles.iter().any(|n| cmdline.contains(n)) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// Waits until `condition` holds, or panics after `timeout` (generous: tests share 2 cores).
pub fn wait_for(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Lines in the newest run's history so far (0 before it exists).
pub fn history_lines(store: &Path) -> usize {
    std::fs::read_to_string(store.join("latest").join("history.jsonl"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Operations of the nemesis that started a fault of this kind.
pub fn fault_starts(run: &Run, fault: &str) -> Vec<Value> {
    run.history()
        .into_iter()
        .filter(|op| op["process"] == "nemesis" && op["f"] == "start")
        .filter(|op| op["value"]["fault"] == fault)
        .collect()
}

/// Runs `lockpick run` with `line` expecting bad input; returns standard error.
pub fn refused(line: &str) -> String {
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .arg("run")
        .args(line.split_whitespace())
        .arg("--store")
        .arg(store.path().join("store"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(254), "{line}: {stderr}");
    assert!(
        !store.path().join("store").exists(),
        "{line} created the store"
    );
    stderr
}

/// A run started in the background by a test. However the test ends, dropping this kills the
/// run's controller and has `lockpick clean` remove what it left, so a failing test leaves the
/// machine as it found it.
pub struct Background {
    pub child: Option<std::process::Child>,
    pub prefix: Option<String>,
}

impl Background {
    pub fn new(child: std::process::Child) -> Background {
        Background {
            child: Some(child),
            prefix: None,
        }
    }

    pub fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(self.child.as_ref().expect("running").id() as i32)
    }

    /// Waits for the controller to exit and returns its output.
    pub fn wait(&mut self) -> Output {
        self.child
            .take()
            .expect("running")
            .wait_with_output()
            .unwrap()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Asked to stop first, as a user would: it heals and removes what it made, even
            // when a failed test never learnt its prefix. Killed only if it does not stop.
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(30);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(prefix) = &self.prefix {
            let _ = lockpick().args(["clean", "--prefix", prefix]).output();
        }
    }
}

/// Chromium, headless and with nothing that reaches the network, on a fresh profile, with
/// `last` before the page (e.g. `--dump-dom`, or `--screenshot=<png>`).
pub fn chromium(page: &Path, last: &[String]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
        ])
        .args(["--no-first-run", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(last)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (Debian package chromium, see .ci/install-packages)")
}

/// Starts `command` (a `lockpick` with its arguments) in the background with `--store store`,
/// its output captured. Dropping the result stops it and cleans whatever it left.
pub fn start_in(mut command: Command, store: &Path) -> Background {
    let child = command
        .arg("--store")
        .arg(store)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    Background::new(child)
}

/// `lockpick clean --prefix <prefix>` through `command` (plain, or with a Docker host set);
/// it must succeed.
pub fn clean_prefix(mut command: Command, prefix: &str) -> Output {
    let clean = command
        .args(["clean", "--prefix", prefix])
        .output()
        .unwrap();
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    clean
}
