//! `clean` against hostile labels, prefixes, and namespaces and folders no run made.

use std::path::Path;
use std::process::{Command, Stdio};

use super::unique;
use crate::common::engine::{docker_at, Engine};
use crate::common::{self, lockpick};

/// A container on `engine` named `name` with `label` as its `lockpick.prefix`, created (not
/// started) from an empty image: the label is all `clean` reads.
fn labelled_container(engine: &Engine, name: &str, label: &str) {
    let created = docker_at(
        &engine.host,
        &[
            "create",
            "--name",
            name,
            "--label",
            &format!("lockpick.prefix={label}"),
            "lockpick-test/empty:0",
            "/none",
        ],
    );
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
}

#[test]
fn clean_takes_no_path_and_no_container_from_a_hostile_label() {
    let engine = Engine::in_dir("docker-engine-hostile", &[]);
    let mut import = Command::new("docker")
        .args(["import", "-", "lockpick-test/empty:0"])
        .env("DOCKER_HOST", &engine.host)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // An empty tar: two zero blocks.
    std::io::Write::write_all(&mut import.stdin.take().unwrap(), &[0u8; 1024]).unwrap();
    assert!(import.wait().unwrap().success(), "docker import failed");

    // What a label of `../../tmp/<victim>` would name from /dev/shm and /run/lockpick.
    let victim = unique("victim");
    let victims: Vec<String> = ["", ".lock", ".controller"]
        .iter()
        .map(|suffix| format!("/tmp/{victim}{suffix}"))
        .collect();
    for path in &victims {
        std::fs::write(path, "root's own file").unwrap();
    }
    let containers = [
        (unique("dotdot"), format!("../../tmp/{victim}")),
        (unique("root"), "/".to_string()),
        // A real-looking prefix that the container's name does not carry.
        (unique("borrowed"), "lkp0f0f0f".to_string()),
        (unique("newline"), "x\nlkp0f0f0f-n1 lkp0f0f0f".to_string()),
    ];
    for (name, label) in &containers {
        labelled_container(&engine, name, label);
    }
    // And one a run of prefix lkp0f0f0e left, by its record: that one is clean's to remove; and
    // one that carries a prefix in its name and label but no run recorded making.
    labelled_container(&engine, "lkp0f0f0e-n1", "lkp0f0f0e");
    std::fs::write("/run/lockpick/lkp0f0f0e.made", "container lkp0f0f0e-n1\n").unwrap();
    labelled_container(&engine, "lkp0f0f0d-n1", "lkp0f0f0d");

    let clean = engine
        .lockpick()
        .args(["clean", "--dry-run"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&clean.stdout);
    let stderr = String::from_utf8_lossy(&clean.stderr);
    assert!(clean.status.success(), "{stderr}");
    for line in stdout.lines() {
        assert!(
            !line.contains("/tmp") && !line.ends_with("would remove /"),
            "clean means to remove what a label named: {line}"
        );
        for (name, _) in &containers {
            assert!(!line.contains(name.as_str()), "{line}");
        }
    }
    for (name, _) in &containers {
        assert!(
            stderr.contains(&format!("container {name:?}")) && stderr.contains("left alone"),
            "{name} not named as left alone:\n{stderr}"
        );
    }
    assert!(
        stdout.contains("lkp0f0f0e: would remove containers lkp0f0f0e-n1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("container lkp0f0f0d-n1 is not in the record of what its run made"),
        "{stdout}"
    );
    let clean = common::clean_prefix(engine.lockpick(), "lkp0f0f0e");
    let said = String::from_utf8_lossy(&clean.stdout);
    assert!(said.contains("removed containers lkp0f0f0e-n1"), "{said}");
    assert!(!Path::new("/run/lockpick/lkp0f0f0e.made").exists());
    let clean = common::clean_prefix(engine.lockpick(), "lkp0f0f0d");
    let said = String::from_utf8_lossy(&clean.stdout);
    assert!(!said.contains("removed containers"), "{said}");
    for path in &victims {
        assert!(Path::new(path).exists(), "{path} is gone");
        std::fs::remove_file(path).unwrap();
    }
    let listed = docker_at(&engine.host, &["ps", "--all", "--format", "{{.Names}}"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    for (name, _) in &containers {
        assert!(listed.lines().any(|l| l == name), "{name} was removed");
        assert!(!listed.lines().any(|l| l == "lkp0f0f0e-n1"), "{listed}");
        assert!(listed.lines().any(|l| l == "lkp0f0f0d-n1"), "{listed}");
        docker_at(&engine.host, &["rm", "--force", name]);
    }
    docker_at(&engine.host, &["rm", "--force", "lkp0f0f0d-n1"]);
}

/// A prefix no run uses: lkp and six random hex digits.
fn random_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("lkp{:06x}", (nanos ^ std::process::id() << 8) & 0xff_ffff)
}

/// What the test below plants, removed however the test ends.
struct Planted {
    namespace: String,
    sleeper: std::process::Child,
    folder: std::path::PathBuf,
}

impl Drop for Planted {
    fn drop(&mut self) {
        let _ = self.sleeper.kill();
        let _ = self.sleeper.wait();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.namespace])
            .status();
        let _ = std::fs::remove_dir(&self.folder);
    }
}

#[test]
fn clean_removes_only_what_a_run_recorded_making() {
    use std::os::unix::fs::chown;
    // A namespace that carries a prefix, with a process in it, that no run made.
    let prefix = random_prefix();
    let namespace = format!("{prefix}-mine");
    let added = Command::new("ip")
        .args(["netns", "add", &namespace])
        .status()
        .unwrap();
    assert!(added.success());
    let sleeper = Command::new("ip")
        .args(["netns", "exec", &namespace, "sleep", "600"])
        .spawn()
        .unwrap();
    // Another user's folder in /dev/shm named like a run's scratch folder.
    let other = format!("lkp0{}", &random_prefix()[4..]);
    let folder = Path::new("/dev/shm").join(&other);
    let mut planted = Planted {
        namespace,
        sleeper,
        folder,
    };
    std::fs::create_dir(&planted.folder).unwrap();
    chown(&planted.folder, Some(65534), Some(65534)).unwrap();
    let said: Vec<String> = [prefix.as_str(), other.as_str()]
        .iter()
        .map(|target| {
            let out = lockpick()
                .args(["clean", "--prefix", target])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).to_string()
        })
        .collect();
    assert!(
        planted.sleeper.try_wait().unwrap().is_none(),
        "clean killed a process it did not start: {}",
        said[0]
    );
    assert_eq!(
        common::namespaces_with(&prefix),
        vec![planted.namespace.clone()],
        "clean removed a namespace it did not make"
    );
    assert!(
        said[0].contains("not in the record of what its run made"),
        "{}",
        said[0]
    );
    assert!(
        planted.folder.exists(),
        "clean removed another user's folder: {}",
        said[1]
    );
}

#[test]
fn clean_refuses_a_prefix_that_is_not_one() {
    for hostile in [
        "../../tmp/X",
        "/",
        "",
        "lkp1A2B3C",
        "lkp12345",
        "lkp1a2b3c/..",
        "lkp1a2b3c\n",
    ] {
        let out = lockpick()
            .args(["clean", "--prefix", hostile])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(254), "{hostile:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--prefix"));
    }
}
