//! Bad input gets one clear line, exit code 254, and nothing is created.

mod common;

use common::lockpick;

fn fails_with(args: &[&str], expected: &str) {
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .args(args)
        .arg("--store")
        .arg(store.path().join("store"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(254), "{args:?}: {stderr}");
    assert!(
        stderr.contains(expected),
        "{args:?}: {stderr:?} lacks {expected:?}"
    );
    assert!(
        !store.path().join("store").exists(),
        "{args:?} created the store"
    );
}

#[test]
fn an_unknown_lock_is_refused() {
    fails_with(&["run", "--lock", "memcached"], "invalid value 'memcached'");
}

#[test]
fn an_unknown_nemesis_is_refused() {
    fails_with(
        &["run", "--nemesis", "pause-holder,earthquake"],
        "invalid value 'earthquake'",
    );
}

#[test]
fn a_ttl_of_zero_is_refused() {
    fails_with(&["run", "--ttl", "0"], "--ttl 0 is too short");
}

#[test]
fn an_unparseable_time_limit_is_refused() {
    fails_with(
        &["run", "--time-limit", "soon"],
        "--time-limit \"soon\" is not a duration",
    );
}

#[test]
fn an_op_timeout_as_long_as_the_ttl_is_refused() {
    fails_with(
        &["run", "--ttl", "1s", "--op-timeout", "1s"],
        "shorter than --ttl",
    );
}

#[test]
fn a_missing_redis_server_is_named_with_its_package() {
    // A PATH that has `ip` but no redis-server.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/usr/sbin/ip", bin.path().join("ip")).unwrap();
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .env("PATH", bin.path())
        .args(["run", "--lock", "redis", "--store"])
        .arg(store.path().join("store"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(254), "{stderr}");
    assert!(stderr.contains("redis-server is not installed"), "{stderr}");
    assert!(stderr.contains("apt-get install redis-server"), "{stderr}");
    assert!(!store.path().join("store").exists());
}

#[test]
fn a_history_with_a_broken_line_is_unknown_with_its_line_number() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    std::fs::write(
        &path,
        "{\"index\":0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\",\"value\":{\"acquisition\":\"0.1\"}}\n{\"index\":1,\"ti\n",
    )
    .unwrap();
    let output = lockpick().arg("check").arg(&path).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("UNKNOWN") && stdout.contains("line 2"),
        "{stdout}"
    );
}

#[test]
fn a_missing_history_file_is_bad_input() {
    let output = lockpick()
        .args(["check", "/nonexistent/history.jsonl"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no history at"));
}

#[test]
fn help_explains_every_flag_and_exits_zero() {
    let output = lockpick().args(["run", "--help"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in [
        "--lock",
        "--nemesis",
        "--clients",
        "--ttl",
        "--time-limit",
        "--fencing",
        "--seed",
        "--store",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}
