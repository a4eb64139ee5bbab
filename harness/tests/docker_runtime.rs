//! `--runtime docker` against a real Docker engine: the same verdict pattern as the namespace
//! runtime, the server version in the history, nothing left behind, and `lockpick clean` after a
//! killed run.
//!
//! The test uses the engine DOCKER_HOST names if one answers there; otherwise it starts its own
//! with `docker/engine` (data under the target folder, no change to the host's network) and stops
//! it at the end. It builds the images it needs with `docker/build-images`. Nothing is skipped:
//! without Debian's docker.io and debootstrap the test fails and says so.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{finished, history_lines, lockpick, namespaces_with, wait_for, Background};
use nix::sys::signal::{kill, Signal};
use serde_json::Value;

fn docker_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docker")
}

/// A Docker engine for the test; stopped on drop if the test started it.
struct Engine {
    started: Option<PathBuf>,
}

impl Engine {
    fn get() -> Engine {
        if std::env::var_os("DOCKER_HOST").is_some() && docker(&["info"]).status.success() {
            return Engine { started: None };
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docker-engine");
        let output = Command::new(docker_dir().join("engine"))
            .arg("start")
            .arg(&dir)
            .output()
            .expect("docker/engine runs");
        assert!(
            output.status.success(),
            "cannot start a Docker engine (install Debian's docker.io): {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let host = String::from_utf8_lossy(&output.stdout).trim().to_string();
        // The only test in this file: nothing else reads the environment meanwhile.
        std::env::set_var("DOCKER_HOST", host);
        Engine { started: Some(dir) }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(dir) = &self.started {
            let _ = Command::new(docker_dir().join("engine"))
                .arg("stop")
                .arg(dir)
                .status();
        }
    }
}

fn docker(args: &[&str]) -> std::process::Output {
    Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the docker client runs (Debian package docker.io)")
}

/// The containers a run left, by its prefix.
fn containers_of(prefix: &str) -> Vec<String> {
    let filter = format!("label=lockpick.prefix={prefix}");
    let out = docker(&["ps", "--all", "--filter", &filter, "--format", "{{.Names}}"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn setup_line(dir: &Path) -> Value {
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    serde_json::from_str(history.lines().next().unwrap()).unwrap()
}

fn run_docker(store: &Path, args: &str) -> common::Run {
    let output = lockpick()
        .arg("run")
        .args(["--runtime", "docker"])
        .args(args.split_whitespace())
        .arg("--store")
        .arg(store)
        .output()
        .unwrap();
    finished(store, output)
}

#[test]
fn redis_in_containers_breaks_as_in_namespaces_and_leaves_nothing() {
    let _engine = Engine::get();
    let building = Instant::now();
    let build = Command::new(docker_dir().join("build-images"))
        .args(["node", "redis"])
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "cannot build the images (needs debootstrap and Debian's mirror): {}",
        String::from_utf8_lossy(&build.stderr)
    );
    eprintln!(
        "images built in {:.1} s:\n{}",
        building.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&build.stdout)
    );

    // An image the engine does not have is refused before anything is made.
    let refused = lockpick()
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

    // Pausing the holder past its lease: overlaps and stale writes, as with namespaces.
    let store = tempfile::tempdir().unwrap();
    let r = run_docker(
        store.path(),
        "--lock redis --nemesis pause-holder --time-limit 10s --seed 7",
    );
    assert_eq!(r.code, 1, "expected invalid:\n{}\n{}", r.stdout, r.stderr);
    assert!(r.overlaps() > 0, "no overlapping holders:\n{}", r.stdout);
    assert!(r.stale("stale_writes") > 0, "no stale write:\n{}", r.stdout);
    let paused = r
        .history()
        .iter()
        .any(|op| op["process"] == "nemesis" && op["value"]["effective"] == true);
    assert!(paused, "no pause took effect");

    // The history and results say where the servers ran and which version they were.
    let setup = setup_line(&r.dir);
    assert_eq!(setup["value"]["runtime"], "docker");
    assert_eq!(
        setup["value"]["runtime_facts"]["server_image"],
        "lockpick/redis:bookworm"
    );
    let version = setup["value"]["server_versions"]["redis"]
        .as_str()
        .unwrap_or_default();
    assert!(
        version.split('.').count() == 3 && version.split('.').all(|p| p.parse::<u32>().is_ok()),
        "no redis version in the setup line: {setup}"
    );
    assert_eq!(r.results["run"]["server_versions"]["redis"], version);

    // Nothing of the run is left: `finished` checked namespaces, files and processes.
    let prefix = setup["value"]["prefix"].as_str().unwrap().to_string();
    assert!(containers_of(&prefix).is_empty(), "containers left behind");

    // A killed controller leaves its containers; `lockpick clean` removes them.
    let store = tempfile::tempdir().unwrap();
    let child = lockpick()
        .args([
            "run",
            "--runtime",
            "docker",
            "--lock",
            "redis",
            "--time-limit",
            "120s",
        ])
        .arg("--store")
        .arg(store.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = Background::new(child);
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
        !containers_of(&prefix).is_empty(),
        "a killed controller cannot remove its containers"
    );
    let clean = lockpick()
        .args(["clean", "--prefix", &prefix])
        .output()
        .unwrap();
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    assert!(String::from_utf8_lossy(&clean.stdout).contains("removed containers"));
    assert!(containers_of(&prefix).is_empty(), "clean left containers");
    assert!(namespaces_with(&prefix).is_empty(), "clean left namespaces");
    common::assert_prefix_gone(&prefix);
}
