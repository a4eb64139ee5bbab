//! Client programs that reach past their worker: to the resource, or out of the run.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::unique;
use crate::common;

/// A client program that, as client 0, also writes straight to the resource (it finds it on the
/// servers' /24, port 7000) under client 1's acquisitions, then goes on as the redis-py example.
const MEDDLER: &str = r#"
import json, os, socket, sys, time
if os.environ.get("LOCKPICK_CLIENT") == "0" and os.fork() == 0:
    net = os.environ["LOCKPICK_SERVERS"].split(",")[0].split(":")[0].rsplit(".", 1)[0]
    time.sleep(1.5)
    for host in range(10, 30):
        try:
            s = socket.create_connection((f"{net}.{host}", 7000), timeout=0.3)
        except OSError:
            continue
        for n in range(1, 6):
            write = {"process": 1, "acquisition": f"1.{n}", "token": None, "op": "write", "value": 4242}
            s.sendall((json.dumps(write) + "\n").encode())
            s.recv(4096)
        s.close()
    os._exit(0)
os.execv(sys.executable, [sys.executable, sys.argv[1]])
"#;

#[test]
fn a_client_program_writing_straight_to_the_resource_is_refused_and_blames_no_client() {
    let dir = tempfile::tempdir().unwrap();
    let meddler = dir.path().join("meddler.py");
    std::fs::write(&meddler, MEDDLER).unwrap();
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python-redis/lock_client.py");
    let lock = format!(
        "exec:redis:/usr/bin/python3 {} {}",
        meddler.display(),
        example.canonicalize().unwrap().display()
    );
    let store = dir.path().join("store");
    let r = common::run(
        &store,
        &[
            "--lock",
            &lock,
            "--clients",
            "2",
            "--time-limit",
            "6s",
            "--seed",
            "3",
        ],
    );
    let history = r.history();
    let foreign: Vec<&Value> = history
        .iter()
        .filter(|op| op["process"] == "resource" && op["value"]["foreign"] == true)
        .collect();
    assert!(
        !foreign.is_empty(),
        "the meddler never reached the resource:\n{}",
        r.stdout
    );
    for op in &foreign {
        assert_eq!(op["type"], "info", "{op}");
        assert!(
            op["value"]["request"].as_str().unwrap().contains("4242"),
            "{op}"
        );
    }
    // Not one of its writes was applied, or recorded as client 1's.
    assert!(
        !history
            .iter()
            .any(|op| op["f"] == "access" && op["value"]["value"] == 4242),
        "a foreign write was applied"
    );
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    // The run says something else reached the resource, and proves nothing.
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("outside lockpick's workers"),
        "{}",
        r.stdout
    );
}

/// A client program whose child leaves its process group and session and joins the host's
/// network namespace through the controller's `/proc/<pid>/ns/net`, then sleeps for 10 minutes
/// under the marker in argv[2]; the program goes on as the redis-py example (argv[1]).
const ESCAPER: &str = r#"
import os, sys
if os.environ.get("LOCKPICK_CLIENT") == "0" and os.fork() == 0:
    os.setsid()
    def parent(pid):
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[1]
    # This program's parent is its worker, `lockpick client`, whose parent is the controller.
    controller = parent(parent(os.getppid()))
    os.execvp("nsenter", ["nsenter", f"--net=/proc/{controller}/ns/net", "--",
                          sys.executable, "-c", "import time; time.sleep(600)", sys.argv[2]])
os.execv(sys.executable, [sys.executable, sys.argv[1]])
"#;

#[test]
fn no_descendant_of_a_client_program_outlives_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let escaper = dir.path().join("escaper.py");
    std::fs::write(&escaper, ESCAPER).unwrap();
    let marker = unique("escaped");
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/python-redis/lock_client.py")
        .canonicalize()
        .unwrap();
    let lock = format!(
        "exec:redis:/usr/bin/python3 {} {} {marker}",
        escaper.display(),
        example.display()
    );
    let store = dir.path().join("store");
    let r = common::run(
        &store,
        &[
            "--lock",
            &lock,
            "--clients",
            "2",
            "--time-limit",
            "4s",
            "--seed",
            "4",
        ],
    );
    assert_ne!(r.code, 255, "{}\n{}", r.stdout, r.stderr);
    // The escape worked: it reached the host's network namespace.
    assert!(
        std::fs::read_to_string(r.dir.join("logs/client-0.log")).is_ok(),
        "no client log"
    );
    // Give a survivor time to show; then end any, and fail.
    std::thread::sleep(Duration::from_millis(300));
    let left = common::processes_mentioning(&[&marker]);
    for survivor in &left {
        let pid: i32 = survivor.split(':').next().unwrap().parse().unwrap();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(left.is_empty(), "a descendant outlived the run: {left:?}");
}
