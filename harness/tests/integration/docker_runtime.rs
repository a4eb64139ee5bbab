//! `--runtime docker` against a real Docker engine: the same verdict pattern as the namespace
//! runtime, the server version in the history, nothing left behind, and `lockpick clean` after a
//! killed run.
//!
//! The test uses the engine DOCKER_HOST names if one answers there; otherwise it starts its own
//! with `docker/engine` (data under the target folder, no change to the host's network) and stops
//! it at the end. It builds the images it needs with `docker/build-images`. Nothing is skipped:
//! without Debian's docker.io and debootstrap the test fails and says so.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::engine::Engine;
use common::{history_lines, lockpick, namespaces_with, wait_for};
use nix::sys::signal::{kill, Signal};
use serde_json::Value;

fn setup_line(dir: &Path) -> Value {
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    serde_json::from_str(history.lines().next().unwrap()).unwrap()
}

/// The redis version the setup line records, checked to look like one (`7.0.15`).
fn redis_version(run: &common::Run) -> String {
    let setup = setup_line(&run.dir);
    let version = setup["value"]["server_versions"]["redis"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        version.split('.').count() == 3 && version.split('.').all(|p| p.parse::<u32>().is_ok()),
        "no redis version in the setup line: {setup}"
    );
    assert_eq!(
        run.results["run"]["server_versions"]["redis"],
        version.as_str()
    );
    version
}

/// The faults a nemesis started.
fn starts_of<'a>(history: &'a [Value], nemesis: &'a str) -> impl Iterator<Item = &'a Value> {
    history
        .iter()
        .filter(move |op| op["process"] == "nemesis" && op["f"] == "start")
        .filter(move |op| op["value"]["nemesis"] == nemesis)
}

#[test]
fn a_netns_run_records_the_server_version() {
    let r = common::run_line("--lock redis --time-limit 2s");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(setup_line(&r.dir)["value"]["runtime"], "netns");
    let version = redis_version(&r);
    // The version the host's own redis-server states.
    let stated = Command::new("redis-server")
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&stated.stdout).contains(&format!("v={version} ")));
}

#[test]
fn redis_in_containers_breaks_as_in_namespaces_and_names_each_version() {
    let engine = Engine::with_images(&[("bookworm", &["node", "redis"]), ("bullseye", &["redis"])]);

    // An image the engine does not have is refused before anything is made.
    let refused = engine
        .lockpick()
        .args([
            "run",
            "--runtime",
            "docker",
            "--image",
            "redis=lockpick/none:0",
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("lockpick/none:0"));

    // Debian 11's glibc cannot load the host's libfaketime: clock faults are refused up front.
    let refused = engine
        .lockpick()
        .args([
            "run",
            "--runtime",
            "docker",
            "--lock",
            "redlock",
            "--nemesis",
            "clock-holder",
        ])
        .args(["--image", "redis=lockpick/redis:bullseye"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(254));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("libfaketime"), "{stderr}");

    // Pausing the holder past its lease: overlaps and stale writes, as with namespaces, on
    // Debian 12's Redis and on Debian 11's.
    let mut versions = Vec::new();
    for image in ["lockpick/redis:bookworm", "lockpick/redis:bullseye"] {
        let store = tempfile::tempdir().unwrap();
        let r = engine.run(
            store.path(),
            &format!(
                "--image redis={image} --lock redis --nemesis pause-holder --time-limit 8s \
                 --seed 7"
            ),
        );
        assert_eq!(r.code, 1, "expected invalid:\n{}\n{}", r.stdout, r.stderr);
        assert!(r.overlaps() > 0, "no overlapping holders:\n{}", r.stdout);
        assert!(r.stale_writes() > 0, "no stale write:\n{}", r.stdout);
        let history = r.history();
        assert!(
            starts_of(&history, "pause-holder").any(|op| op["value"]["effective"] == true),
            "no pause took effect"
        );
        let setup = setup_line(&r.dir);
        assert_eq!(setup["value"]["runtime"], "docker");
        assert_eq!(setup["value"]["runtime_facts"]["server_image"], image);
        versions.push(redis_version(&r));
    }
    assert_ne!(
        versions[0], versions[1],
        "two images, one version: {versions:?}"
    );
}

#[test]
fn etcd_pauses_partitions_and_clock_jumps_take_effect_inside_containers() {
    let engine = Engine::with_images(&[("bookworm", &["node", "redis", "etcd"])]);

    // libfaketime mounted into the Redlock servers' containers: Redis's own TIME moved.
    let store = tempfile::tempdir().unwrap();
    let r = engine.run(
        store.path(),
        "--lock redlock --nemesis clock-holder --time-limit 8s --seed 31",
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let history = r.history();
    let jumps: Vec<&Value> = starts_of(&history, "clock-holder").collect();
    assert!(!jumps.is_empty(), "no clock jump");
    for jump in jumps {
        assert_eq!(jump["value"]["effective"], true, "{jump}");
        let measured = jump["value"]["measured_offset_ms"].as_i64().unwrap();
        let expected = jump["value"]["expected_offset_ms"].as_i64().unwrap();
        assert!((measured - expected).abs() < 500, "{jump}");
    }

    // etcd under pause-holder, fenced: overlaps, but the fence turns every stale write away.
    let store = tempfile::tempdir().unwrap();
    let r = engine.run(
        store.path(),
        "--lock etcd --nemesis pause-holder --fencing on --time-limit 8s --seed 7",
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "{}", r.stdout);
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);

    // nft in the etcd containers' namespaces cuts the holder off: its lease ends while it
    // works, another client gets the lock, and the fence refuses the old holder.
    let store = tempfile::tempdir().unwrap();
    let r = engine.run(
        store.path(),
        "--lock etcd --nemesis partition-holder --work 2500ms --ttl 1s --fault-duration 3s \
         --time-limit 12s --fencing on --seed 33",
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "{}", r.stdout);
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    let dropped: u64 = r
        .history()
        .iter()
        .filter(|op| op["f"] == "stop" && op["value"]["fault"] == "partition-holder")
        .map(|op| op["value"]["dropped_packets"].as_u64().unwrap_or(0))
        .sum();
    assert!(dropped > 0, "the partition dropped nothing");
    assert_eq!(
        setup_line(&r.dir)["value"]["server_versions"]["etcd"]
            .as_str()
            .map(|v| v.split('.').count()),
        Some(3)
    );
}

#[test]
fn clean_removes_the_containers_of_a_killed_run() {
    let engine = Engine::with_images(&[("bookworm", &["node", "redis"])]);
    let store = tempfile::tempdir().unwrap();
    let mut command = engine.lockpick();
    command.args([
        "run",
        "--runtime",
        "docker",
        "--lock",
        "redis",
        "--time-limit",
        "120s",
    ]);
    let mut run = common::start_in(command, store.path());
    wait_for("operations", Duration::from_secs(60), || {
        history_lines(store.path()) > 50
    });
    let dir = store.path().join("latest").canonicalize().unwrap();
    let prefix = setup_line(&dir)["value"]["prefix"]
        .as_str()
        .unwrap()
        .to_string();
    run.prefix = Some(prefix.clone());
    kill(run.pid(), Signal::SIGKILL).unwrap();
    run.wait();
    assert!(
        !engine.containers_of(&prefix).is_empty(),
        "a killed controller cannot remove its containers"
    );
    let clean = common::clean_prefix(engine.lockpick(), &prefix);
    assert!(String::from_utf8_lossy(&clean.stdout).contains("removed containers"));
    assert!(
        engine.containers_of(&prefix).is_empty(),
        "clean left containers"
    );
    assert!(namespaces_with(&prefix).is_empty(), "clean left namespaces");
    common::assert_prefix_gone(&prefix);
}

#[test]
fn runtime_and_image_flags_are_checked_before_anything_is_made() {
    let refusal = |args: &[&str], host: &str| {
        let out = lockpick()
            .arg("run")
            .args(args)
            .env("DOCKER_HOST", host)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(254), "{args:?}");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let nowhere = "unix:///nonexistent/docker.sock";
    let no_engine = refusal(&["--runtime", "docker"], nowhere);
    assert!(
        no_engine.contains("needs a running Docker engine"),
        "{no_engine}"
    );
    let netns_image = refusal(&["--image", "redis=redis:7.4"], nowhere);
    assert!(netns_image.contains("--runtime docker"), "{netns_image}");
    let unknown = refusal(
        &["--runtime", "docker", "--image", "mysql=mysql:8"],
        nowhere,
    );
    // Every service of the catalogue is offered, whichever they are.
    let services = lockpick::service::catalogue::names().join(", ");
    assert!(unknown.contains(&services), "{unknown}");
    let unknown_runtime = refusal(&["--runtime", "podman"], nowhere);
    assert!(unknown_runtime.contains("podman"), "{unknown_runtime}");
}
