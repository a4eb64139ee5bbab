//! `lockpick protocol-check`: on a real redis-server, a client program that keeps the protocol
//! passes every check, one that retries a timed-out command past its bound (redis-py 6's
//! default) fails the bound check of a stopped server, one that answers `fail` for a request
//! it may have sent fails the unknown check; bad input is refused before anything is made, and
//! nothing is left behind, Ctrl-C included.
//!
//! The kazoo example's release is bounded too, on a real ZooKeeper ensemble.
//!
//! Needs Debian's redis-server, python3-redis, zookeeper and python3-kazoo.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use common::{assert_prefix_gone, lockpick, processes_mentioning, wait_for};

fn example(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    root.join("examples")
        .join(path)
        .to_string_lossy()
        .to_string()
}

/// A finished check: its exit code, its lines and its prefix (from its first line).
pub(crate) struct Checked {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) prefix: String,
}

impl Checked {
    fn of(output: Output) -> Checked {
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        Checked {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).to_string(),
            prefix: prefix_in(&stderr),
            stderr,
        }
    }

    /// The line of `check` (`  pass  <check>: ...`), which must be there.
    pub(crate) fn line(&self, check: &str) -> &str {
        let named = |line: &&str| {
            let after_outcome = line.trim_start().split_once("  ").map(|(_, rest)| rest);
            after_outcome
                .and_then(|rest| rest.split_once(": "))
                .map(|(name, _)| name)
                == Some(check)
        };
        self.stdout
            .lines()
            .find(named)
            .unwrap_or_else(|| panic!("no line for {check}:\n{}", self.stdout))
    }

    /// Nothing of the check is left: namespaces, files, its cgroup (which cannot go while a
    /// program or server is in it), and no process that names its prefix.
    pub(crate) fn left_nothing(&self) {
        assert!(!self.prefix.is_empty(), "no prefix in:\n{}", self.stderr);
        assert_prefix_gone(&self.prefix);
        let left = processes_mentioning(&[&self.prefix]);
        assert!(left.is_empty(), "processes left behind: {left:?}");
    }
}

/// The run prefix the check's first line names (`(run lkp1a2b3c)`).
pub(crate) fn prefix_in(text: &str) -> String {
    text.split("(run ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or("")
        .to_string()
}

fn protocol_check(flags: &[&str], command: &[&str]) -> Checked {
    let output = lockpick()
        .arg("protocol-check")
        .args(flags)
        .arg("--")
        .args(command)
        .output()
        .unwrap();
    Checked::of(output)
}

const CHECKS: [&str; 7] = [
    "hello",
    "acquire",
    "acquire while held",
    "release",
    "acquire after release",
    "acquire while stopped",
    "release while stopped",
];

#[test]
fn a_client_that_keeps_the_protocol_passes_every_check() {
    let program = example("python-redis/lock_client.py");
    let checked = protocol_check(&[], &[&program]);
    assert_eq!(
        checked.code,
        Some(0),
        "{}\n{}",
        checked.stdout,
        checked.stderr
    );
    for check in CHECKS {
        assert!(
            checked.line(check).trim_start().starts_with("pass"),
            "{}",
            checked.stdout
        );
    }
    assert!(checked
        .line("acquire while held")
        .contains(r#""result":"fail""#));
    assert!(checked
        .line("acquire while stopped")
        .contains(r#""result":"unknown""#));
    assert!(
        checked.stdout.contains("7 of 7 checks passed"),
        "{}",
        checked.stdout
    );
    checked.left_nothing();
}

#[test]
fn kazoos_release_is_bounded_so_a_stopped_ensemble_gets_unknown_in_time() {
    // Measured: the kazoo example's release went through kazoo's unlimited command retry and
    // never answered while every ZooKeeper server was stopped (2 of 2 tries).
    let program = example("python-kazoo/lock_client.py");
    let checked = protocol_check(&["--service", "zookeeper"], &[&program]);
    assert_eq!(
        checked.code,
        Some(0),
        "{}\n{}",
        checked.stdout,
        checked.stderr
    );
    let release = checked.line("release while stopped");
    assert!(release.trim_start().starts_with("pass"), "{release}");
    assert!(release.contains(r#""result":"unknown""#), "{release}");
    checked.left_nothing();
}

#[test]
fn a_client_that_retries_past_its_bound_fails_the_bound_check() {
    // The same example with redis-py 6's default retries: 3 retries of a timed-out command.
    let program = example("broken/retrying_redis.py");
    let checked = protocol_check(&["--ttl", "1s", "--op-timeout", "500ms"], &[&program]);
    assert_eq!(
        checked.code,
        Some(1),
        "{}\n{}",
        checked.stdout,
        checked.stderr
    );
    // With the server up the retries never start: those checks pass.
    for check in &CHECKS[..5] {
        assert!(
            checked.line(check).trim_start().starts_with("pass"),
            "{}",
            checked.stdout
        );
    }
    for check in ["acquire while stopped", "release while stopped"] {
        let line = checked.line(check);
        assert!(line.trim_start().starts_with("fail"), "{line}");
        assert!(line.contains("no answer within its bound"), "{line}");
    }
    assert!(
        checked.line("acquire while stopped").contains("1000 ms"),
        "the acquire's bound is wait_ms + op timeout:\n{}",
        checked.stdout
    );
    assert!(
        checked
            .stdout
            .contains("failed: acquire while stopped, release while stopped"),
        "{}",
        checked.stdout
    );
    checked.left_nothing();
}

#[test]
fn a_client_that_answers_fail_for_a_request_it_may_have_sent_fails_the_unknown_check() {
    let program = example("broken/timeout_as_fail.py");
    let checked = protocol_check(&[], &[&program]);
    assert_eq!(
        checked.code,
        Some(1),
        "{}\n{}",
        checked.stdout,
        checked.stderr
    );
    let line = checked.line("acquire while stopped");
    assert!(line.trim_start().starts_with("fail"), "{line}");
    assert!(
        line.contains(r#""result":"fail""#) && line.contains("never fail"),
        "{line}"
    );
    checked.left_nothing();
}

#[test]
fn bad_input_is_refused_before_anything_is_made() {
    let program = example("python-redis/lock_client.py");
    let cases: [(&[&str], &[&str], &str); 4] = [
        (&[], &["/nonexistent/client.py"], "is not a file"),
        (
            &["--op-timeout", "800ms"],
            &[&program],
            "at most half --ttl",
        ),
        (&["--ttl", "nine"], &[&program], "is not a duration"),
        (&["--service", "rslock"], &[&program], "rslock"),
    ];
    for (flags, command, says) in cases {
        let checked = protocol_check(flags, command);
        assert_eq!(checked.code, Some(254), "{flags:?}: {}", checked.stderr);
        assert!(
            checked.stderr.contains(says),
            "{flags:?}: {}",
            checked.stderr
        );
        assert!(checked.prefix.is_empty(), "{flags:?} made a testbed");
    }
    let missing = lockpick().arg("protocol-check").output().unwrap();
    assert_eq!(missing.status.code(), Some(254), "a command is required");
}

#[test]
fn ctrl_c_ends_the_check_and_leaves_nothing_behind() {
    // The program says hello only after 5 s: the interrupt comes while the check waits for it.
    let program = example("python-redis/lock_client.py");
    let slow = format!("sleep 5; exec {program}");
    let mut child = lockpick()
        .args(["protocol-check", "--", "/bin/sh", "-c", &slow])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let prefix = prefix_in(&first);
    assert!(!prefix.is_empty(), "{first}");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("skip  acquire: interrupted"), "{stdout}");
    wait_for(
        "the check's namespaces to go",
        Duration::from_secs(10),
        || common::namespaces_with(&prefix).is_empty(),
    );
    assert_prefix_gone(&prefix);
    let left = processes_mentioning(&[&prefix, &slow]);
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn a_client_that_says_its_request_never_left_passes_and_its_hello_is_echoed_whole() {
    // Given without `--`: everything from the program's name on is the program's.
    let program = example("broken/never_sent.py");
    let output = lockpick()
        .args(["protocol-check", &program])
        .output()
        .unwrap();
    let checked = Checked::of(output);
    assert_eq!(
        checked.code,
        Some(0),
        "{}\n{}",
        checked.stdout,
        checked.stderr
    );
    for check in ["acquire while stopped", "release while stopped"] {
        let line = checked.line(check);
        assert!(line.trim_start().starts_with("pass"), "{line}");
        assert!(
            line.contains(r#""sent":false"#) && line.contains("never left"),
            "{line}"
        );
    }
    // The hello as the program wrote it: `clock` is not dropped.
    let hello = checked.line("hello");
    assert!(hello.contains(r#""clock": true"#), "{hello}");
    checked.left_nothing();
}
