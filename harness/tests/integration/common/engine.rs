//! A Docker engine for the tests that need one: the one DOCKER_HOST names if it answers,
//! otherwise one of the test's own, started with `docker/engine` (data under the target folder,
//! no change to the host's network) and stopped at the end, with the images a test asks for
//! built by `docker/build-images`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use serde_json::Value;

use super::{finished, lockpick};

pub fn docker_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docker")
}

/// One test at a time uses the engine: each starts it, builds what it needs, and stops it.
static ENGINE: Mutex<()> = Mutex::new(());

/// A Docker engine for one test, with the images it asked for; stopped on drop if the test
/// started it.
pub struct Engine {
    pub host: String,
    started: Option<PathBuf>,
    _turn: MutexGuard<'static, ()>,
}

impl Engine {
    /// An engine holding lockpick's images of `services` for each Debian suite in `suites`.
    pub fn with_images(suites: &[(&str, &[&str])]) -> Engine {
        Engine::in_dir("docker-engine", suites)
    }

    /// The same, with an engine of its own under `CARGO_TARGET_TMPDIR/<dir>` (when DOCKER_HOST
    /// names none): test binaries that run at the same time each use their own.
    pub fn in_dir(dir: &str, suites: &[(&str, &[&str])]) -> Engine {
        let turn = ENGINE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let engine = match std::env::var("DOCKER_HOST") {
            Ok(host) if docker_at(&host, &["info"]).status.success() => Engine {
                host,
                started: None,
                _turn: turn,
            },
            _ => {
                let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir);
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
                Engine {
                    host: String::from_utf8_lossy(&output.stdout).trim().to_string(),
                    started: Some(dir),
                    _turn: turn,
                }
            }
        };
        for (suite, services) in suites {
            let building = Instant::now();
            let build = Command::new(docker_dir().join("build-images"))
                .args(*services)
                .env("SUITE", suite)
                .env("DOCKER_HOST", &engine.host)
                .output()
                .unwrap();
            assert!(
                build.status.success(),
                "cannot build the {suite} images (needs debootstrap and Debian's mirror): {}",
                String::from_utf8_lossy(&build.stderr)
            );
            eprintln!(
                "{suite} images {services:?} ready in {:.1} s:\n{}",
                building.elapsed().as_secs_f64(),
                String::from_utf8_lossy(&build.stdout)
            );
        }
        engine
    }

    pub fn lockpick(&self) -> Command {
        let mut command = lockpick();
        command.env("DOCKER_HOST", &self.host);
        command
    }

    /// `lockpick run --runtime docker` with `args` in `store`.
    pub fn run(&self, store: &Path, args: &str) -> super::Run {
        let output = self
            .lockpick()
            .arg("run")
            .args(["--runtime", "docker"])
            .args(args.split_whitespace())
            .arg("--store")
            .arg(store)
            .output()
            .unwrap();
        let run = finished(store, output);
        // Nothing of the run is left: `finished` checked namespaces, files and processes.
        let prefix = setup_line(&run.dir)["value"]["prefix"].clone();
        let left = self.containers_of(prefix.as_str().unwrap());
        assert!(left.is_empty(), "containers left behind: {left:?}");
        run
    }

    /// The containers a run left, by its prefix.
    pub fn containers_of(&self, prefix: &str) -> Vec<String> {
        let filter = format!("label=lockpick.prefix={prefix}");
        let listing = ["ps", "--all", "--filter", &filter, "--format", "{{.Names}}"];
        let out = docker_at(&self.host, &listing);
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

pub fn docker_at(host: &str, args: &[&str]) -> std::process::Output {
    Command::new("docker")
        .args(args)
        .env("DOCKER_HOST", host)
        .stdin(Stdio::null())
        .output()
        .expect("the docker client runs (Debian package docker.io)")
}

fn setup_line(dir: &Path) -> Value {
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    serde_json::from_str(history.lines().next().unwrap()).unwrap()
}
