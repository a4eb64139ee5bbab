//! The reusable GitHub Action (`action.yml`) and the GitLab CI template
//! (`ci/lockpick.gitlab-ci.yml`), exercised by running their own shell steps, read out of the
//! YAML, against a tiny real `lockpick compare` (one Redis cell, no faults, 3 s). What is not
//! run: `uses:` steps (actions/cache) and the cold `cargo install` (the build is taken as
//! cached: this test's lockpick binary is put where the cache would restore it).

mod common;

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
