//! Exec locks by short name: a matrix names two users' client programs (`{ lock = "exec:…",
//! name = "…" }`), its `[[expect]]` groups hold each to its own expectation, and the store
//! folders, the grid, JUnit and compare.json call them by those names; every run records the
//! library each program named in its hello. Bad names are refused before anything is made.
//!
//! Needs Debian's python3-redis and python3-kazoo (`.ci/install-packages`).

use crate::common;

use std::path::{Path, PathBuf};

use common::compared::{json, lockpick_in, only_folder, read};
use common::refused;
use serde_json::Value;

fn example(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(path)
        .canonicalize()
        .unwrap()
}

/// The matrix: redis-py over Redis (no token: a paused holder's stale write goes through) and
/// kazoo over ZooKeeper (a token the fenced resource checks), each held to what it can show.
/// One catch-all `pause-holder → invalid` group, as before short names, would have called
/// kazoo's cell "expected invalid, found valid".
fn matrix() -> String {
    format!(
        r#"
locks = [
  {{ lock = "exec:redis:{}", name = "redis-py" }},
  {{ lock = "exec:zookeeper:{}", name = "kazoo" }},
]
nemeses = ["none", "pause-holder"]
fencing = ["on"]
seed = 41

[knobs]
time-limit = "8s"
clients = 3
ttl = "1s"
fault-duration = "2500ms"
fault-interval = "500ms"

[[expect]]
nemeses = ["none"]
expect = "valid"

[[expect]]
locks = ["redis-py"]
nemeses = ["pause-holder"]
expect = "invalid"
why = "no token: the paused holder's write lands after its lease"

[[expect]]
locks = ["kazoo"]
nemeses = ["pause-holder"]
expect = "no stale write accepted"
why = "the znode's czxid fences the paused holder"
"#,
        example("python-redis/lock_client.py").display(),
        example("python-kazoo/lock_client.py").display(),
    )
}

#[test]
fn a_matrix_holds_each_named_exec_lock_to_its_own_expectation() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("lockpick.toml"), matrix()).unwrap();
    let done = lockpick_in(
        work.path(),
        &[
            "compare",
            "--matrix",
            "lockpick.toml",
            "--parallel",
            "2",
            "--store",
            "store",
            "--report-to",
            "out",
        ],
    );
    assert_eq!(done.code, 0, "{}", done.shown);
    let store = work.path().join("store");
    let dir = only_folder(&store);
    let compare = json(&dir);
    let cells = compare["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "{compare}");
    let cell = |lock: &str, nemesis: &str| -> &Value {
        cells
            .iter()
            .find(|c| c["lock"] == lock && c["nemesis"] == nemesis)
            .unwrap_or_else(|| panic!("no cell {lock} × {nemesis}: {compare}"))
    };
    for (lock, library) in [("redis-py", "redis-py "), ("kazoo", "kazoo ")] {
        for nemesis in ["none", "pause-holder"] {
            let c = cell(lock, nemesis);
            assert_eq!(c["judgement"], "holds", "{c}");
            let servers = c["servers"].as_str().unwrap();
            assert!(servers.contains(&format!("; client {library}")), "{c}");
            // The cell's folder is named by the short name, and its results record the hello.
            let run = store.join(format!("{lock}-{nemesis}")).join("latest");
            let results: Value = serde_json::from_str(&read(&run, "results.json")).unwrap();
            assert_eq!(results["run"]["lock_name"], lock, "{results}");
            let libraries = results["run"]["client_libraries"].as_array().unwrap();
            assert_eq!(libraries.len(), 1, "{results}");
            assert!(libraries[0].as_str().unwrap().starts_with(library));
            assert!(results["run"]["config"]["lock"]
                .as_str()
                .unwrap()
                .starts_with("exec:"));
            common::assert_prefix_gone(&common::run_identity(&run).0);
            let report = read(&run, "report.html");
            assert!(report.contains("client library"), "{}", run.display());
            let junit = read(&run, "junit.xml");
            assert!(junit.contains(&format!("value=\"{lock}\"")), "{junit}");
        }
    }
    assert_eq!(cell("redis-py", "pause-holder")["verdict"], "invalid");
    assert_eq!(
        cell("kazoo", "pause-holder")["expected"],
        "no stale write accepted"
    );
    // The grid and JUnit say the short names, never the commands.
    let grid = read(&dir, "compare.html");
    let junit = read(&work.path().join("out"), "junit.xml");
    for shown in [&grid, &junit, &read(&dir, "compare.md")] {
        assert!(shown.contains("redis-py") && shown.contains("kazoo"));
        assert!(!shown.contains("lock_client.py"), "{shown}");
    }
    assert!(
        junit.contains("testsuite name=\"lockpick kazoo × pause-holder fencing on\""),
        "{junit}"
    );
    let folders: Vec<String> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with("none") || n.ends_with("pause-holder"))
        .collect();
    assert_eq!(folders.len(), 4, "{folders:?}");
    assert!(folders
        .iter()
        .all(|f| f.starts_with("redis-py-") || f.starts_with("kazoo-")));
}

#[test]
fn two_locks_called_the_same_or_a_bad_name_are_refused_before_anything_runs() {
    let work = tempfile::tempdir().unwrap();
    let script = example("python-redis/lock_client.py");
    for (locks, culprit) in [
        (
            format!(
                r#"[{{ lock = "exec:redis:{0}", name = "mine" }}, {{ lock = "exec:redis:{0} x", name = "mine" }}]"#,
                script.display()
            ),
            "two locks are called \"mine\"",
        ),
        (
            format!(
                r#"[{{ lock = "exec:redis:{}", name = "../up" }}]"#,
                script.display()
            ),
            "the short name \"../up\" must be",
        ),
        (
            format!(
                r#"[{{ lock = "exec:redis:{}", name = "etcd" }}]"#,
                script.display()
            ),
            "is a built-in lock's name",
        ),
        (
            r#"[{ lock = "redis", name = "mine" }]"#.to_string(),
            "only an exec lock takes a short name",
        ),
        (
            format!(
                r#"[{{ lock = "exec:redis:{}", nick = "x" }}]"#,
                script.display()
            ),
            "takes lock and name only",
        ),
    ] {
        std::fs::write(work.path().join("m.toml"), format!("locks = {locks}\n")).unwrap();
        let done = lockpick_in(
            work.path(),
            &[
                "compare", "--matrix", "m.toml", "--store", "store", "--check",
            ],
        );
        assert_eq!(done.code, 254, "{locks}: {}", done.shown);
        assert!(done.shown.contains(culprit), "{locks}: {}", done.shown);
        assert_eq!(done.shown.trim().lines().count(), 1, "{}", done.shown);
        assert!(!work.path().join("store").exists());
    }
    // An expectation that names a named lock by its command matches nothing: refused.
    let spec = format!("exec:redis:{}", script.display());
    let file = format!(
        "locks = [{{ lock = \"{spec}\", name = \"mine\" }}]\n[[expect]]\nlocks = [\"{spec}\"]\n\
         expect = \"invalid\"\n"
    );
    std::fs::write(work.path().join("m.toml"), file).unwrap();
    let done = lockpick_in(work.path(), &["compare", "--matrix", "m.toml", "--check"]);
    assert_eq!(done.code, 254, "{}", done.shown);
    assert!(done.shown.contains("is called \"mine\""), "{}", done.shown);
    // `lockpick run --name` takes the same names.
    let line = format!("--lock exec:redis:{} --name ../up", script.display());
    assert!(refused(&line).contains("--name ../up"));
    assert!(refused("--lock redis --name mine").contains("only an exec lock"));
}

#[test]
fn a_ci_job_matrix_narrows_to_a_named_lock_by_its_name() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("lockpick.toml"), matrix()).unwrap();
    let listed = lockpick_in(
        work.path(),
        &["compare", "--matrix", "lockpick.toml", "--list", "--json"],
    );
    assert_eq!(listed.code, 0, "{}", listed.shown);
    let jobs: Value = serde_json::from_str(listed.shown.trim()).unwrap();
    let job = jobs["include"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["lock"] == "kazoo" && j["nemesis"] == "pause-holder")
        .cloned()
        .unwrap_or_else(|| panic!("{jobs}"));
    assert_eq!(
        job["args"],
        "--locks kazoo --nemeses pause-holder --fencing on"
    );
    let mut args = vec!["compare", "--matrix", "lockpick.toml", "--check"];
    let narrowed = shell_words::split(job["args"].as_str().unwrap()).unwrap();
    args.extend(narrowed.iter().map(String::as_str));
    let checked = lockpick_in(work.path(), &args);
    assert_eq!(checked.code, 0, "{}", checked.shown);
    assert!(
        checked
            .shown
            .contains("kazoo × pause-holder (fencing on): expected no stale write accepted"),
        "{}",
        checked.shown
    );
    assert!(
        checked.shown.contains("1 cell (0 n/a)"),
        "{}",
        checked.shown
    );
}
