//! lockpick runs as root and treats everything it did not make as hostile: container labels,
//! names and folders it finds, histories, schedules, matrices, and files planted where it
//! writes. Each case here is one such input; each must end in a clear refusal or be ignored,
//! never in root deleting, writing or believing what it should not.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::engine::{docker_at, Engine};

/// A name no other test or run uses.
fn unique(what: &str) -> String {
    format!(
        "lockpick-hostile-{what}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    )
}

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
    // And one a run of prefix lkp0f0f0e would have left: that one is clean's to remove.
    labelled_container(&engine, "lkp0f0f0e-n1", "lkp0f0f0e");

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
    let clean = common::clean_prefix(engine.lockpick(), "lkp0f0f0e");
    let said = String::from_utf8_lossy(&clean.stdout);
    assert!(said.contains("removed containers lkp0f0f0e-n1"), "{said}");
    for path in &victims {
        assert!(Path::new(path).exists(), "{path} is gone");
        std::fs::remove_file(path).unwrap();
    }
    let listed = docker_at(&engine.host, &["ps", "--all", "--format", "{{.Names}}"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    for (name, _) in &containers {
        assert!(listed.lines().any(|l| l == name), "{name} was removed");
        assert!(!listed.lines().any(|l| l == "lkp0f0f0e-n1"), "{listed}");
        docker_at(&engine.host, &["rm", "--force", name]);
    }
}
