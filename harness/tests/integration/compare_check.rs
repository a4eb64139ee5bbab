//! `lockpick compare --check` and `--list --json`: a matrix file checked and its cells listed
//! without running anything (no store, no namespace), and the JSON a CI job matrix is built
//! from, each entry's flags planning exactly its one cell against the same file.

use crate::common;

use std::path::Path;

use common::lockpick;
use serde_json::Value;

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/lockpick.toml")
}

fn compare(args: &[&str], store: &Path) -> (i32, String, String) {
    let out = lockpick()
        .arg("compare")
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn check_lists_every_cell_with_its_expectation_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let matrix = example().display().to_string();
    let (code, stdout, stderr) = compare(&["--matrix", &matrix, "--check"], &store);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 11, "{stdout}");
    assert!(lines.contains(&"redis × pause-holder (fencing on): expected invalid"));
    assert!(lines.contains(&"etcd × pause-holder (fencing on): expected no stale write accepted"));
    // How many at once is decided from what the cells use, and says why.
    assert!(
        lines[10].contains("the matrix is sound: 10 cells (0 n/a), seed 52, ")
            && lines[10].contains(" at a time (automatic: ")
            && lines[10].ends_with("; lowered if cells slow down); nothing was run"),
        "{}",
        lines[10]
    );
    assert!(!store.exists(), "--check made the store");
}

#[test]
fn list_json_gives_a_job_matrix_whose_entries_plan_one_cell_each() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let matrix = example().display().to_string();
    let (code, stdout, stderr) = compare(&["--matrix", &matrix, "--list", "--json"], &store);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let include = json["include"].as_array().unwrap();
    assert_eq!(include.len(), 10, "{json}");
    assert_eq!(json.as_object().unwrap().len(), 1, "only `include`: {json}");
    let etcd = include
        .iter()
        .find(|e| e["lock"] == "etcd" && e["nemesis"] == "pause-holder")
        .unwrap();
    assert_eq!(etcd["expect"], "no stale write accepted");
    // A job runs its entry's flags against the same file: one cell, the same expectation.
    let mut args = vec!["--matrix".to_string(), matrix.clone(), "--list".to_string()];
    args.extend(shell_words::split(etcd["args"].as_str().unwrap()).unwrap());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = compare(&args, &store);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout.trim(),
        "etcd × pause-holder (fencing on): expected no stale write accepted"
    );
    assert!(!store.exists());
}

#[test]
fn a_duration_may_have_a_space_before_its_unit() {
    // Decided: "10 s" is accepted, as people write it; a unit that is not one is refused.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lockpick.toml");
    std::fs::write(
        &file,
        "locks = [\"redis\"]\nnemeses = [\"none\"]\n[knobs]\ntime-limit = \"10 s\"\nttl = \"500 ms\"\n",
    )
    .unwrap();
    let matrix = file.display().to_string();
    let (code, stdout, stderr) = compare(&["--matrix", &matrix, "--check"], &dir.path().join("s"));
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[test]
fn a_matrix_files_mistakes_are_named_by_the_file_and_its_key_and_make_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lists = "locks = [\"redis\"]\nnemeses = [\"none\", \"pause-holder\"]\nfencing = [\"on\"]\n";
    let group =
        |keys: &str, expect: &str| format!("{lists}[[expect]]\n{keys}\nexpect = \"{expect}\"\n");
    // (file, what it says, extra flags, what the error must name)
    let cases = [
        ("etcd3.toml", "locks = [\"redis\", \"etcd3\"]\n".to_string(), "", "etcd3.toml: locks: \"etcd3\" is not one of"),
        ("etcd3-check.toml", "locks = [\"etcd3\"]\n".to_string(), "--check", "etcd3-check.toml: locks: \"etcd3\""),
        ("knob.toml", format!("{lists}[knobs]\ntime-limit = \"10 parsecs\"\n"), "", "knob.toml: [knobs] time-limit = \"10 parsecs\""),
        ("jam.toml", format!("{lists}[knobs]\njam-bound = \"soon\"\n"), "", "jam.toml: [knobs] jam-bound = \"soon\""),
        ("podman.toml", format!("{lists}[knobs]\nruntime = \"podman\"\n"), "", "podman.toml: [knobs] runtime = \"podman\" is not a runtime"),
        ("group-lock.toml", group("locks = [\"etcd3\"]", "valid"), "", "group-lock.toml: [[expect]] group 1: locks"),
        (
            "idle-nemesis.toml",
            group("nemeses = [\"kill-node\"]", "invalid"),
            "--list",
            "[[expect]] group 1 (nemeses = [\"kill-node\"], expect = \"invalid\"): it matches no cell",
        ),
        (
            "idle-fencing.toml",
            group("fencing = [\"off\"]", "invalid"),
            "",
            "group 1 (fencing = [\"off\"], expect = \"invalid\"): it matches no cell: none of its fencing [\"off\"]",
        ),
    ];
    for (name, text, flag, culprit) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let store = dir.path().join(format!("store-{name}"));
        let mut args = vec!["--matrix".to_string(), file.display().to_string()];
        args.extend(flag.split_whitespace().map(str::to_string));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = compare(&args, &store);
        assert_eq!(code, 254, "{name}: {stdout}{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(
            stderr.contains(culprit),
            "{name}: {stderr:?} does not name {culprit:?}"
        );
        assert!(!store.exists(), "{name} made the store");
    }
}

#[test]
fn wrong_shrink_flags_are_refused_before_any_cell_runs_and_make_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["--shrink", "--shrink-replays", "0"], "--shrink-replays 0"),
        (
            &["--shrink", "--shrink-min-failures", "4"],
            "--shrink-min-failures 4",
        ),
        (
            &["--shrink", "--shrink-budget", "runs=0"],
            "--shrink-budget runs=0",
        ),
    ];
    for (i, (flags, culprit)) in cases.into_iter().enumerate() {
        let store = dir.path().join(format!("store-{i}"));
        let mut args = vec!["--locks", "redis", "--nemeses", "pause-holder"];
        args.extend(flags);
        let (code, stdout, stderr) = compare(&args, &store);
        assert_eq!(code, 254, "{flags:?}: {stdout}{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flags:?}: {stderr}");
        assert!(stderr.contains(culprit), "{flags:?}: {stderr}");
        assert!(!store.exists(), "{flags:?} made the store");
    }
    // The shrink's flags without --shrink are a mistake, not ignored.
    let (code, _, stderr) = compare(&["--shrink-budget", "runs=3"], &dir.path().join("s"));
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("--shrink"), "{stderr}");
}

#[test]
fn a_matrix_file_that_gives_no_cells_or_an_empty_list_is_refused_checked_or_run() {
    // Each would have fallen back to lockpick's defaults (an empty file: the default 20 cells
    // with a random seed) and passed the gate.
    let dir = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(example()).unwrap();
    let base = "locks = [\"redis\"]\nnemeses = [\"none\"]\n";
    let group = |key: &str| format!("{base}[[expect]]\n{key} = []\nexpect = \"valid\"\n");
    // (file, what it says, what the error must name)
    let cases = [
        ("empty.toml", String::new(), "empty.toml is empty"),
        (
            "comments.toml",
            "# our locks\n\n".to_string(),
            "comments.toml is empty",
        ),
        (
            "knobs-only.toml",
            "[knobs]\nclients = 2\n".to_string(),
            "knobs-only.toml names no locks",
        ),
        (
            "example-locks.toml",
            example.replace(
                "locks = [\"redis\", \"redlock\", \"rslock\", \"etcd\", \"zookeeper\"]",
                "locks = []",
            ),
            "example-locks.toml: line 14: locks = []",
        ),
        (
            "nemeses.toml",
            "locks = [\"redis\"]\nnemeses = []\n".to_string(),
            "nemeses.toml: line 2: nemeses = []",
        ),
        (
            "fencing.toml",
            format!("{base}fencing = []\n"),
            "fencing.toml: line 3: fencing = []",
        ),
        (
            "expect.toml",
            format!("{base}expect = []\n"),
            "expect.toml: line 3: expect = []",
        ),
        (
            "image.toml",
            format!("{base}[knobs]\nimage = []\n"),
            "image.toml: line 4: [knobs] image = []",
        ),
        (
            "bin.toml",
            format!("{base}[knobs]\nserver-bin = []\n"),
            "bin.toml: line 4: [knobs] server-bin = []",
        ),
        (
            "g-locks.toml",
            group("locks"),
            "g-locks.toml: line 4: [[expect]] group 1: locks = []",
        ),
        (
            "g-nemeses.toml",
            group("nemeses"),
            "line 4: [[expect]] group 1: nemeses = []",
        ),
        (
            "g-fencing.toml",
            group("fencing"),
            "line 4: [[expect]] group 1: fencing = []",
        ),
    ];
    for (name, text, culprit) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        for (how, flags) in [("checked", &["--check"][..]), ("run", &["--seed", "1"][..])] {
            let store = dir.path().join(format!("store-{name}-{how}"));
            let mut args = vec!["--matrix", file.to_str().unwrap()];
            args.extend(flags);
            let (code, stdout, stderr) = compare(&args, &store);
            assert_eq!(code, 254, "{name} {how}: {stdout}{stderr}");
            assert_eq!(stderr.lines().count(), 1, "{name} {how}: {stderr}");
            assert!(
                stderr.contains(culprit),
                "{name} {how}: {stderr:?} does not name {culprit:?}"
            );
            assert!(stdout.is_empty(), "{name} {how}: {stdout}");
            assert!(!store.exists(), "{name} {how} made the store");
        }
    }
}
