//! The lockpick image (`docker/build-images lockpick`): lockpick and its servers from Debian's
//! packages, built offline from a debootstrap base, reaches a verdict with nothing but Docker:
//! `docker run --privileged -v <dir>:/repo lockpick/lockpick compare --matrix /repo/...`.
//!
//! Like `docker_runtime.rs`, it starts its own engine with `docker/engine` (its own folder under
//! the target folder, no change to the host's network) and stops it at the end. Nothing is
//! skipped: without Debian's docker.io and debootstrap the test fails and says so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use serde_json::Value;

fn docker_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docker")
}

/// Lockpick's own engine for this test, stopped on drop.
struct Engine {
    host: String,
    dir: PathBuf,
}

impl Engine {
    fn start() -> Engine {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docker-engine-image");
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
        Engine { host, dir }
    }

    fn docker(&self, args: &[&str]) -> Output {
        Command::new("docker")
            .args(args)
            .env("DOCKER_HOST", &self.host)
            .stdin(Stdio::null())
            .output()
            .expect("the docker client runs (Debian package docker.io)")
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = Command::new(docker_dir().join("engine"))
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

#[test]
fn the_lockpick_image_reaches_the_verdicts_of_a_matrix_with_only_docker() {
    let engine = Engine::start();
    let building = Instant::now();
    let build = Command::new(docker_dir().join("build-images"))
        .arg("lockpick")
        .env("DOCKER_HOST", &engine.host)
        .env("LOCKPICK_BIN", env!("CARGO_BIN_EXE_lockpick"))
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "cannot build lockpick/lockpick (needs debootstrap and Debian's mirror): {}",
        String::from_utf8_lossy(&build.stderr)
    );
    eprintln!(
        "lockpick/lockpick ready in {:.1} s:\n{}",
        building.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&build.stdout)
    );

    // A valid cell and a known-unsafe one, each of the three services' locks once.
    let repo = tempfile::tempdir().unwrap();
    let matrix = "locks = [\"redis\", \"etcd\", \"zookeeper\"]\n\
        nemeses = [\"none\", \"pause-holder\"]\nfencing = [\"on\"]\nseed = 23\nparallel = 2\n\
        [knobs]\ntime-limit = \"6s\"\nclients = 2\nttl = \"1s\"\nfault-duration = \"2500ms\"\n\
        fault-interval = \"500ms\"\nquiet = \"500ms\"\n\
        [[expect]]\nnemeses = [\"none\"]\nexpect = \"valid\"\nwhy = \"no faults\"\n\
        [[expect]]\nlocks = [\"redis\"]\nnemeses = [\"pause-holder\"]\nexpect = \"invalid\"\n\
        why = \"known unsafe\"\n\
        [[expect]]\nlocks = [\"etcd\", \"zookeeper\"]\nnemeses = [\"pause-holder\"]\n\
        expect = \"no stale write accepted\"\nwhy = \"fenced\"\n";
    std::fs::write(repo.path().join("lockpick.toml"), matrix).unwrap();
    let mount = format!("{}:/repo", repo.path().display());
    let running = Instant::now();
    let run = engine.docker(&[
        "run",
        "--rm",
        // What --privileged would give, minus the capabilities this machine's own sandbox
        // withholds (runc cannot grant CAP_SYS_RESOURCE here, so --privileged fails to start).
        "--cap-add",
        "NET_ADMIN",
        "--cap-add",
        "SYS_ADMIN",
        "--cap-add",
        "SYS_PTRACE",
        "--security-opt",
        "seccomp=unconfined",
        "--security-opt",
        "apparmor=unconfined",
        // etcd's data lives on /dev/shm, and its WAL takes 64 MB, Docker's default size.
        "--shm-size",
        "1g",
        "--network",
        "none",
        "-v",
        &mount,
        "lockpick/lockpick",
        "compare",
        "--matrix",
        "/repo/lockpick.toml",
        "--store",
        "/repo/store",
    ]);
    let shown = format!(
        "exit {:?}\n{}\n{}",
        run.status.code(),
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    eprintln!(
        "engine with image to verdict: {:.1} s\n{shown}",
        running.elapsed().as_secs_f64()
    );
    assert_eq!(run.status.code(), Some(0), "{shown}");
    let compare = std::fs::read_dir(repo.path().join("store/compare"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(compare.join("compare.json")).unwrap())
            .unwrap();
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 6, "{json}");
    for cell in cells {
        assert_eq!(cell["judgement"], "holds", "{cell}");
    }
    let verdict = |lock: &str, nemesis: &str| {
        let cell = cells
            .iter()
            .find(|c| c["lock"] == lock && c["nemesis"] == nemesis)
            .unwrap_or_else(|| panic!("no {lock} {nemesis} cell: {json}"));
        cell["verdict"].as_str().unwrap_or_default().to_lowercase()
    };
    assert_eq!(verdict("redis", "none"), "valid", "{json}");
    assert_eq!(verdict("redis", "pause-holder"), "invalid", "{json}");
    // Nothing of the run is left in the engine.
    let left = engine.docker(&["ps", "--all", "--quiet"]);
    assert!(
        String::from_utf8_lossy(&left.stdout).trim().is_empty(),
        "containers left: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}
