//! Bad input gets one clear line naming the flag or path at fault, exit code 254, and nothing is
//! created: no store, no run folder, no namespace.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::lockpick;

/// Files the cases refer to, in one temporary folder.
struct Fixtures {
    dir: tempfile::TempDir,
    mounts: Vec<PathBuf>,
}

impl Fixtures {
    fn create() -> Fixtures {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        std::fs::write(path("a-file"), "not a folder").unwrap();
        std::fs::write(path("not-json.json"), "{ this is not json").unwrap();
        let window = |lock: &str, nemesis: &str, start: u64, duration: u64, target: &str| {
            let lock = if lock.is_empty() {
                String::new()
            } else {
                format!("\"lock\":\"{lock}\",")
            };
            format!(
                "{{\"seed\":1,{lock}\"windows\":[{{\"nemesis\":\"{nemesis}\",\"start_ms\":\
                 {start},\"duration_ms\":{duration},\"targets\":[\"{target}\"]}}]}}"
            )
        };
        let schedules = [
            ("redlock-n4.json", window("", "pause-node", 1000, 500, "n4")),
            (
                "drawn-for-redlock.json",
                window("redlock", "pause-node", 1000, 500, "n1"),
            ),
            (
                "client-c9.json",
                window("redis", "kill-client", 1000, 500, "c9"),
            ),
            (
                "client-paused-as-node.json",
                window("redis", "pause-node", 1000, 500, "c1"),
            ),
            (
                "zero-length.json",
                window("redis", "pause-node", 1000, 0, "n1"),
            ),
            (
                "too-late.json",
                window("redis", "pause-node", 50_000, 500, "n1"),
            ),
            ("nemesis-none.json", window("redis", "none", 1000, 500, "")),
            (
                "unknown-nemesis.json",
                window("redis", "earthquake", 1000, 500, "n1"),
            ),
        ];
        for (name, text) in schedules {
            std::fs::write(path(name), text).unwrap();
        }
        nix::unistd::mkfifo(&path("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::create_dir(path("empty-run")).unwrap();
        // Stores in the way of a run: `latest` a folder, the run's group a file.
        std::fs::create_dir_all(path("latest-is-a-folder/latest")).unwrap();
        std::fs::create_dir(path("group-is-a-file")).unwrap();
        std::fs::write(path("group-is-a-file/redis-none"), "").unwrap();
        let mut fixtures = Fixtures {
            dir,
            mounts: Vec::new(),
        };
        fixtures.mount("read-only", "ro,size=4m");
        fixtures.mount("full", "size=64k");
        let filler = fixtures.path("full/filler");
        let _ = std::fs::write(filler, vec![0u8; 64 * 1024]);
        fixtures
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn mount(&mut self, name: &str, options: &str) {
        let target = self.path(name);
        std::fs::create_dir(&target).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "lockpick-test"])
            .arg(&target)
            .status()
            .unwrap();
        assert!(status.success(), "cannot mount a tmpfs at {target:?}");
        self.mounts.push(target);
    }
}

impl Drop for Fixtures {
    fn drop(&mut self) {
        for mount in &self.mounts {
            let _ = Command::new("umount").arg(mount).status();
        }
    }
}

/// Every file and folder under `path` (empty if it does not exist).
fn listing(path: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut todo = vec![path.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p.clone());
            }
            found.insert(p);
        }
    }
    found
}

fn namespaces() -> BTreeSet<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// `(words, culprit)`: the words are split at spaces unless written as one `"…"` word.
fn cases() -> Vec<(Vec<&'static str>, &'static str)> {
    let w = |line: &'static str| line.split(' ').collect::<Vec<_>>();
    vec![
        // Values clap refuses.
        (w("run --lock memcached"), "--lock"),
        (w("run --nemesis pause-holder,earthquake"), "--nemesis"),
        (w("run --clients many"), "--clients"),
        (w("run --loss 300"), "--loss"),
        (w("run --seed abc"), "--seed"),
        (w("run --fencing maybe"), "--fencing"),
        (w("run --partition-mode sideways"), "--partition-mode"),
        (w("run --frobnicate"), "--frobnicate"),
        (w("run --store {dir}/unused-store --ttl"), "--ttl"),
        // Durations.
        (w("run --ttl 0"), "--ttl"),
        (w("run --ttl -1s"), "--ttl"),
        (w("run --ttl soon"), "--ttl"),
        (w("run --ttl 5ms"), "--ttl"),
        (w("run --ttl 1e400"), "--ttl"),
        (w("run --lock etcd --ttl 1500ms"), "--ttl"),
        (w("run --lock zookeeper --ttl 500ms"), "--ttl"),
        (w("run --lock zookeeper --ttl 11s"), "--ttl"),
        (w("run --time-limit soon"), "--time-limit"),
        (w("run --time-limit 0"), "--time-limit"),
        (w("run --time-limit 25h"), "--time-limit"),
        (w("run --time-limit -3s"), "--time-limit"),
        (w("run --time-limit 500us"), "--time-limit"),
        (w("run --fault-duration 0"), "--fault-duration"),
        (w("run --fault-duration 500us"), "--fault-duration"),
        (w("run --fault-duration -2s"), "--fault-duration"),
        (w("run --fault-interval 0"), "--fault-interval"),
        (w("run --fault-interval 900us"), "--fault-interval"),
        (
            w("run --nemesis pause-node --fault-interval 1us --fault-duration 1us --time-limit 3s"),
            "--fault-duration",
        ),
        (
            w("run --nemesis pause-node --fault-interval 1ms --fault-duration 1ms --time-limit 24h"),
            "--fault-interval",
        ),
        (w("run --clock-jump 0"), "--clock-jump"),
        (w("run --clock-jump 10us"), "--clock-jump"),
        (w("run --delay 0"), "--delay"),
        (w("run --delay -100ms"), "--delay"),
        (w("run --quiet 3s --time-limit 3s"), "--quiet"),
        (w("run --quiet -1s"), "--quiet"),
        (w("run --work 1h --time-limit 3s"), "--work"),
        (w("run --work 3s --time-limit 3s"), "--work"),
        (w("run --work -5ms"), "--work"),
        (w("run --op-timeout 1s --ttl 1s"), "--op-timeout"),
        (w("run --op-timeout 0"), "--op-timeout"),
        (w("run --op-timeout 500us"), "--op-timeout"),
        (w("run --op-timeout -1ms"), "--op-timeout"),
        (w("run --jam-bound 500ms --ttl 1s"), "--jam-bound"),
        (w("run --jam-bound soon"), "--jam-bound"),
        // Counts.
        (w("run --clients 0"), "--clients"),
        (w("run --clients 201"), "--clients"),
        (w("run --loss 0"), "--loss"),
        (w("run --loss 101"), "--loss"),
        // Combinations of lock and nemesis.
        (w("run --lock etcd --nemesis clock-forward --runtime docker"), "--nemesis"),
        (w("run --lock zookeeper --nemesis clock-strobe --runtime docker"), "--nemesis"),
        (w("run --lock redis --nemesis partition-ring"), "--nemesis"),
        (w("run --lock redis --nemesis skew-clients"), "--nemesis"),
        (w("run --lock exec:redis:/bin/true --nemesis skew-clients --runtime docker"), "--nemesis"),
        (w("run --lock redis --nemesis partition-halves"), "--nemesis"),
        (w("run --lock rslock --nemesis clock-holder"), "--nemesis"),
        // Schedules that do not fit the run.
        (w("run --schedule /nonexistent/schedule.json"), "/nonexistent/schedule.json"),
        (w("run --schedule {dir}/not-json.json"), "not-json.json"),
        (w("run --schedule {dir}"), "--schedule"),
        (w("run --lock redis --schedule {dir}/redlock-n4.json"), "n4"),
        (w("run --lock rslock --schedule {dir}/drawn-for-redlock.json"), "drawn-for-redlock.json"),
        (w("run --schedule {dir}/client-c9.json"), "c9"),
        (w("run --schedule {dir}/client-paused-as-node.json"), "c1"),
        (w("run --schedule {dir}/zero-length.json"), "zero-length.json"),
        (w("run --time-limit 10s --schedule {dir}/too-late.json"), "too-late.json"),
        (w("run --schedule {dir}/nemesis-none.json"), "nemesis-none.json"),
        (w("run --schedule {dir}/unknown-nemesis.json"), "unknown-nemesis.json"),
        (w("run --nemesis kill-node --schedule {dir}/zero-length.json"), "--nemesis"),
        // Stores that cannot be written.
        (w("run --store {dir}/a-file"), "a-file"),
        (w("run --store {dir}/a-file/store"), "a-file"),
        (w("run --store {dir}/read-only/store"), "read-only"),
        (w("run --store {dir}/full/store"), "full"),
        (w("run --store {dir}/latest-is-a-folder"), "latest"),
        (w("run --store {dir}/group-is-a-file"), "redis-none"),
        // check, clean, report, bench.
        (w("check /nonexistent/history.jsonl"), "/nonexistent/history.jsonl"),
        (w("check /dev/zero"), "/dev/zero"),
        (w("check /dev/null"), "/dev/null"),
        (w("check {dir}/fifo"), "fifo"),
        (w("check {dir}/empty-run"), "empty-run"),
        (w("check"), "<HISTORY>"),
        (w("clean --prefix nope"), "--prefix"),
        (w("clean --prefix LKP1A2B3C"), "--prefix"),
        (w("clean --everything"), "--everything"),
        (w("report /nonexistent/run"), "/nonexistent/run"),
        (w("report {dir}/empty-run"), "empty-run"),
        (w("bench teleport"), "teleport"),
        (w("bench startup --rounds 0"), "--rounds"),
        (w("frobnicate"), "frobnicate"),
        (vec![], "command"),
        // compare: every list item is checked, nothing reaches a cell but whole values.
        (vec!["compare", "--locks", "redis --work 1500ms"], "--locks"),
        (w("compare --locks memcached"), "--locks"),
        (w("compare --locks redis,,etcd"), "--locks"),
        (w("compare --nemeses earthquake"), "--nemeses"),
        (w("compare --nemeses pause-holder+earthquake"), "--nemeses"),
        (w("compare --fencing maybe"), "--fencing"),
        (vec!["compare", "--locks", "redis", "--ttl", "1s --work 1h"], "--ttl"),
        (w("compare --locks redis --time-limit soon"), "--time-limit"),
        (w("compare --locks redis --parallel 0"), "--parallel"),
        (w("compare --locks redis --store {dir}/a-file"), "a-file"),
        (w("compare --locks redis --nemeses partition-ring"), "--nemesis"),
        // shards: K/N in range, a seed every shard shares, real shard folders to merge.
        (w("compare --locks redis --seed 1 --shard 0/2"), "--shard"),
        (w("compare --locks redis --seed 1 --shard 3/2"), "--shard"),
        (w("compare --locks redis --shard 1/2"), "--shard"),
        (w("merge {dir}/no-such-shard"), "no-such-shard"),
    ]
}

#[test]
fn every_bad_invocation_is_refused_in_one_line_naming_its_culprit_and_creates_nothing() {
    let fixtures = Fixtures::create();
    let dir = fixtures.dir.path().display().to_string();
    let table = cases();
    assert!(table.len() >= 60, "only {} cases", table.len());
    let before = namespaces();
    let fixtures_before = listing(fixtures.dir.path());
    let mut failures = Vec::new();
    for (i, (words, culprit)) in table.iter().enumerate() {
        let store = fixtures.path(&format!("store-{i}"));
        let mut args: Vec<String> = words.iter().map(|w| w.replace("{dir}", &dir)).collect();
        let gives_store = args.iter().any(|a| a == "--store");
        if matches!(words.first(), Some(&"run" | &"compare")) && !gives_store {
            args.push("--store".to_string());
            args.push(store.display().to_string());
        }
        let output = lockpick().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let case = format!("{args:?}");
        if output.status.code() != Some(254) {
            failures.push(format!("{case}: exit {:?}: {stderr}", output.status.code()));
        } else if lines.len() != 1 {
            failures.push(format!("{case}: {} lines: {stderr}", lines.len()));
        } else if !lines[0].contains(culprit) {
            failures.push(format!("{case}: {:?} does not name {culprit:?}", lines[0]));
        }
        if store.exists() {
            failures.push(format!("{case}: created {}", store.display()));
        }
    }
    let made = &listing(fixtures.dir.path()) - &fixtures_before;
    assert!(made.is_empty(), "bad invocations created {made:?}");
    // New namespaces of runs that are not alive would be ours (other tests may run beside).
    let leftovers: Vec<String> = (&namespaces() - &before)
        .into_iter()
        .filter(|ns| {
            let prefix = ns.split('-').next().unwrap_or("");
            !Path::new(&format!("/run/lockpick/{prefix}.lock")).exists()
        })
        .collect();
    assert!(leftovers.is_empty(), "namespaces created: {leftovers:?}");
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
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
