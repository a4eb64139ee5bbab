//! The reusable GitHub Action (`action.yml`) and the GitLab CI template
//! (`ci/lockpick.gitlab-ci.yml`), exercised by running their own shell steps, read out of the
//! YAML, against a tiny real `lockpick compare` (one Redis cell, no faults, 3 s). What is not
//! run: `uses:` steps (actions/cache) and the cold `cargo install` (the build is taken as
//! cached: this test's lockpick binary is put where the cache would restore it).

use crate::common;

use std::path::{Path, PathBuf};

use common::ci_steps::{run_action, run_action_with_env, run_template};

/// A matrix of one Redis cell without faults, expected `expect`.
fn matrix(dir: &Path, expect: &str) -> PathBuf {
    let file = dir.join("lockpick.toml");
    let text = format!(
        "locks = [\"redis\"]\nnemeses = [\"none\"]\nfencing = [\"on\"]\nseed = 7\n\
         [knobs]\ntime-limit = \"3s\"\nclients = 2\nquiet = \"500ms\"\n\
         [[expect]]\nexpect = \"{expect}\"\nwhy = \"the test says so\"\n"
    );
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn the_action_gates_on_lockpicks_exit_code_and_always_writes_a_summary() {
    let work = tempfile::tempdir().unwrap();
    let valid = matrix(work.path(), "valid");
    let run = run_action(work.path(), &[("matrix", valid.to_str().unwrap())]);
    assert_eq!(run.outputs["exit-code"], "0", "{}", run.log);
    let summary = std::fs::read_to_string(work.path().join(&run.outputs["summary"])).unwrap();
    assert!(summary.contains("redis"), "summary: {summary}\n{}", run.log);
    assert!(run.codes.iter().all(|(_, code)| *code == 0), "{}", run.log);
    // lockpick itself appended its summary to the job's.
    let step_summary = std::fs::read_to_string(work.path().join("step-summary.md")).unwrap();
    assert!(step_summary.contains("redis"), "{step_summary}");

    // Expected invalid, shown valid, twice: exit 1 kept, both rounds in the summary, the gate
    // fails.
    let other = tempfile::tempdir().unwrap();
    let wrong = matrix(other.path(), "invalid");
    let args = [("matrix", wrong.to_str().unwrap()), ("repeat", "2")];
    let run = run_action(other.path(), &args);
    assert_eq!(run.outputs["exit-code"], "1", "{}", run.log);
    assert_eq!(
        run.codes.last().unwrap(),
        &("Gate".to_string(), 1),
        "{}",
        run.log
    );
    let summary = std::fs::read_to_string(other.path().join(&run.outputs["summary"])).unwrap();
    let rounds = std::fs::read_dir(other.path().join("lockpick-store/compare")).unwrap();
    assert_eq!(rounds.count(), 2, "{}", run.log);
    assert!(summary.matches("redis").count() >= 2, "{summary}");
}

/// A caller's environment that names a test hook reaches neither lockpick nor its root process:
/// this test's lockpick is a debug build, which has the hooks, so a hook carried through
/// (`sudo -E`) would slow every grant and make the expected-valid cell unknown (exit 2).
#[test]
fn the_action_does_not_pass_test_hooks_to_lockpick() {
    let work = tempfile::tempdir().unwrap();
    let valid = matrix(work.path(), "valid");
    let hooks = [
        ("LOCKPICK_INJECT_CLIENT", "late-grant:all"),
        ("LOCKPICK_INJECT", "kill-resource-after:50"),
    ];
    let run = run_action_with_env(work.path(), &[("matrix", valid.to_str().unwrap())], &hooks);
    assert_eq!(run.outputs["exit-code"], "0", "{}", run.log);
    assert!(!run.log.contains("test hook"), "{}", run.log);
}

#[test]
fn the_action_and_the_template_keep_bad_input_as_254_with_a_summary() {
    let work = tempfile::tempdir().unwrap();
    let missing = work.path().join("no-such.toml");
    let run = run_action(work.path(), &[("matrix", missing.to_str().unwrap())]);
    assert_eq!(run.outputs["exit-code"], "254", "{}", run.log);
    assert_eq!(
        run.codes.last().unwrap(),
        &("Gate".to_string(), 254),
        "{}",
        run.log
    );
    let summary = std::fs::read_to_string(work.path().join(&run.outputs["summary"])).unwrap();
    assert!(
        summary.contains("exit 254, no comparison written"),
        "{summary}"
    );
    assert!(summary.contains("no-such.toml"), "{summary}");

    let other = tempfile::tempdir().unwrap();
    let missing = other.path().join("no-such.toml");
    let (code, log) = run_template(
        other.path(),
        &[("LOCKPICK_MATRIX", missing.to_str().unwrap())],
    );
    assert_eq!(code, 254, "{log}");
    let summary = std::fs::read_to_string(other.path().join("lockpick-store/lockpick-summary.md"));
    assert!(summary.unwrap().contains("no-such.toml"), "{log}");
}

#[test]
fn the_gitlab_template_exits_with_lockpicks_code_and_publishes_junit() {
    let work = tempfile::tempdir().unwrap();
    let valid = matrix(work.path(), "valid");
    let (code, log) = run_template(work.path(), &[("LOCKPICK_MATRIX", valid.to_str().unwrap())]);
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("lockpick: cached in"), "{log}");
    let junit = std::fs::read_to_string(work.path().join("lockpick-store/junit.xml")).unwrap();
    assert!(junit.contains("<testsuite"), "{junit}");

    let other = tempfile::tempdir().unwrap();
    let wrong = matrix(other.path(), "invalid");
    let (code, log) = run_template(
        other.path(),
        &[("LOCKPICK_MATRIX", wrong.to_str().unwrap())],
    );
    assert_eq!(code, 1, "{log}");
    let summary =
        std::fs::read_to_string(other.path().join("lockpick-store/lockpick-summary.md")).unwrap();
    assert!(summary.contains("redis"), "{summary}");
}

/// A stand-in for `curl` that is a merge request's notes on GitLab: it keeps the notes in
/// `$FAKE_GITLAB` (JSON), answers a listing a page at a time with `<` and `>` escaped as GitLab's
/// JSON has them, adds a note on POST, edits one on PUT, and logs each request in
/// `$FAKE_GITLAB.log` as `METHOD URL`.
const GITLAB_CURL: &str = r#"#!/usr/bin/env python3
import json, os, sys, urllib.parse
args, method, body, url = sys.argv[1:], "GET", None, None
i = 0
while i < len(args):
    if args[i] in ("--request", "--header", "--data-urlencode"):
        if args[i] == "--request":
            method = args[i + 1]
        if args[i] == "--data-urlencode":
            body = open(args[i + 1].partition("@")[2]).read()
        i += 2
    elif args[i].startswith("--"):
        i += 1
    else:
        url = args[i]
        i += 1
state = os.environ["FAKE_GITLAB"]
notes = json.load(open(state))
with open(state + ".log", "a") as log:
    log.write(f"{method} {url}\n")
parts = urllib.parse.urlsplit(url)
if method == "GET":
    query = urllib.parse.parse_qs(parts.query)
    page, per = int(query["page"][0]), int(query["per_page"][0])
    text = json.dumps(notes[(page - 1) * per : page * per])
    sys.stdout.write(text.replace("<", "\\u003c").replace(">", "\\u003e"))
elif method == "POST":
    notes.append({"id": 1000 + len(notes), "body": body})
elif method == "PUT":
    for note in notes:
        if note["id"] == int(parts.path.rsplit("/", 1)[1]):
            note["body"] = body
json.dump(notes, open(state, "w"))
"#;

/// The template's job in a merge request pipeline, its `curl` the fake GitLab in `work`.
fn in_merge_request(work: &Path, matrix: &Path) -> (i32, String) {
    let bin = work.join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let curl = bin.join("curl");
    std::fs::write(&curl, GITLAB_CURL).unwrap();
    std::fs::set_permissions(&curl, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let gitlab = work.join("notes.json");
    run_template(
        work,
        &[
            ("LOCKPICK_MATRIX", matrix.to_str().unwrap()),
            ("PATH", &path),
            ("FAKE_GITLAB", gitlab.to_str().unwrap()),
            ("CI_MERGE_REQUEST_IID", "5"),
            ("LOCKPICK_NOTE_TOKEN", "t"),
            ("CI_API_V4_URL", "https://gitlab.example/api/v4"),
            ("CI_PROJECT_ID", "3"),
            ("CI_JOB_NAME", "lockpick"),
        ],
    )
}

/// The path the template's `artifacts: reports: junit:` names, in `work`.
fn junit_report(work: &Path) -> PathBuf {
    let template = common::ci_steps::load("ci/lockpick.gitlab-ci.yml");
    let job = &template[".lockpick"];
    let store = job["variables"]["LOCKPICK_STORE"].as_str().unwrap();
    let path = job["artifacts"]["reports"]["junit"].as_str().unwrap();
    work.join(path.replace("$LOCKPICK_STORE", store))
}

#[test]
fn the_gitlab_template_reports_junit_on_bad_input_and_edits_its_one_note_in_place() {
    let work = tempfile::tempdir().unwrap();
    // 120 notes of reviewers first: the job's own is found on the listing's second page.
    let reviewers: Vec<serde_json::Value> = (0..120)
        .map(|i| serde_json::json!({"id": i, "body": format!("a reviewer's note {i}")}))
        .collect();
    let gitlab = work.path().join("notes.json");
    std::fs::write(&gitlab, serde_json::to_string(&reviewers).unwrap()).unwrap();
    let log = work.path().join("notes.json.log");
    let typo = work.path().join("typo.toml");
    std::fs::write(
        &typo,
        "locks = [\"redis\", \"etcd3\"]\nnemeses = [\"none\"]\n",
    )
    .unwrap();

    let (code, shown) = in_merge_request(work.path(), &typo);
    assert_eq!(code, 254, "{shown}");
    let junit = junit_report(work.path());
    common::junit_schema::validate(&junit).unwrap();
    let report = std::fs::read_to_string(&junit).unwrap();
    assert!(
        report.contains("etcd3") && report.contains("<error"),
        "{report}"
    );
    let requests = std::fs::read_to_string(&log).unwrap();
    let notes = "https://gitlab.example/api/v4/projects/3/merge_requests/5/notes";
    assert!(requests.ends_with(&format!("POST {notes}\n")), "{requests}");
    assert!(!requests.contains("PUT"), "{requests}");

    // The next push, another typo: the note found by its marker is edited, none is added.
    std::fs::remove_file(&log).unwrap();
    std::fs::write(&typo, "locks = []\n").unwrap();
    let (code, shown) = in_merge_request(work.path(), &typo);
    assert_eq!(code, 254, "{shown}");
    let report = std::fs::read_to_string(&junit).unwrap();
    assert!(report.contains("locks = [] lists nothing"), "{report}");
    let requests = std::fs::read_to_string(&log).unwrap();
    assert!(
        requests.ends_with(&format!("PUT {notes}/1120\n")),
        "{requests}"
    );
    assert!(!requests.contains("POST"), "{requests}");
    let kept: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&gitlab).unwrap()).unwrap();
    assert_eq!(kept.len(), 121);
    let ours = kept[120]["body"].as_str().unwrap();
    assert!(
        ours.starts_with("<!-- lockpick compare: lockpick -->") && ours.contains("locks = []"),
        "{ours}"
    );
    assert!(
        !ours.contains("etcd3"),
        "the old run's summary is gone: {ours}"
    );
}

#[test]
fn the_gitlab_template_reports_junit_when_it_refuses_a_variable_before_lockpick_runs() {
    let work = tempfile::tempdir().unwrap();
    let valid = matrix(work.path(), "valid");
    let (code, log) = run_template(
        work.path(),
        &[
            ("LOCKPICK_MATRIX", valid.to_str().unwrap()),
            ("LOCKPICK_REPEAT", "two"),
        ],
    );
    assert_eq!(code, 254, "{log}");
    let junit = junit_report(work.path());
    common::junit_schema::validate(&junit).unwrap();
    let report = std::fs::read_to_string(&junit).unwrap();
    assert!(
        report.contains("LOCKPICK_REPEAT must be a positive number, not 'two'"),
        "{report}"
    );
    assert!(!work.path().join("lockpick-store/compare").exists());
}
