//! The example CI jobs in `examples/ci/`, run step by step as their CI would run them (the
//! scripts read from the YAML, with the CI's variables and files), with a typo in the matrix
//! and with a matrix that holds: the gate fails for the reason, which `summary.md` and
//! `junit.xml` state; the comment is posted once and then edited in place; the files pass
//! yamllint's default rules. `sudo`, `gh` and `curl` are stand-ins that log what they were
//! asked (no network); lockpick is the real one.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/ci")
        .join(name)
}

/// The YAML file as JSON (python's yaml, Debian's python3-yaml).
fn yaml(name: &str) -> Value {
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(example(name))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A folder to run the jobs in, with stand-ins for `sudo`, `gh` and `curl` first on the path.
struct Workspace {
    dir: tempfile::TempDir,
}

const SUDO: &str = "#!/bin/sh\n[ \"$1\" = -E ] && shift\nexec \"$@\"\n";
/// Logs its arguments; answers a comment listing with `$FAKE_EXISTING` and a pull request's
/// head with `$FAKE_HEAD`.
const GH: &str = "#!/bin/sh\nprintf 'gh %s\\n' \"$*\" >> \"$FAKE_LOG\"\n\
                  case \"$*\" in *--paginate*) printf '%s' \"${FAKE_EXISTING:-}\" ;;\n\
                  *pulls/*) printf '%s\\n' \"${FAKE_HEAD:-}\" ;; esac\n";
/// Logs its arguments and the note it sends; answers a GET with `$FAKE_EXISTING` (JSON).
const CURL: &str = "#!/bin/sh\nprintf 'curl %s\\n' \"$*\" >> \"$FAKE_LOG\"\n\
                    case \"$*\" in *--request*) cat note.md >> \"$FAKE_LOG\" ;;\n\
                    *) printf '%s' \"${FAKE_EXISTING:-[]}\" ;; esac\n";

impl Workspace {
    fn new(matrix: &str) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        for (name, text) in [("sudo", SUDO), ("gh", GH), ("curl", CURL)] {
            let path = bin.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        std::fs::write(dir.path().join("lockpick.toml"), matrix).unwrap();
        Workspace { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    /// Runs `script` as the CI's bash does (`-e -o pipefail`), with `env`.
    fn run(&self, script: &str, env: &[(String, String)]) -> (i32, String) {
        let path = format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = Command::new("bash");
        command
            .args([
                "--noprofile",
                "--norc",
                "-e",
                "-o",
                "pipefail",
                "-c",
                script,
            ])
            .current_dir(self.dir.path())
            .env("PATH", path)
            .env("LOCKPICK", env!("CARGO_BIN_EXE_lockpick"))
            .env("MATRIX", "lockpick.toml")
            .env("FAKE_LOG", self.path("fake.log"));
        for key in ["GITHUB_STEP_SUMMARY", "CI_JOB_URL", "GITHUB_RUN_ID"] {
            command.env_remove(key);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let out = command.output().unwrap();
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), shown)
    }
}

const TYPO: &str = "locks = [\"redis\", \"etcd3\"]\nnemeses = [\"none\"]\n";
const HOLDS: &str = "locks = [\"redis\"]\nnemeses = [\"none\"]\nfencing = [\"off\"]\nseed = 66\n\
                     [knobs]\ntime-limit = \"3s\"\nclients = 2\nquiet = \"500ms\"\n";

fn step<'a>(workflow: &'a Value, name: &str) -> &'a Value {
    workflow["jobs"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|job| job["steps"].as_array().unwrap())
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name:?}"))
}

/// A step's `env`, its expressions given the values a pull request's run would have.
fn step_env(step: &Value, outputs: &str) -> Vec<(String, String)> {
    let output = |key: &str| {
        outputs
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or("")
            .to_string()
    };
    let mut env = Vec::new();
    for (key, value) in step["env"].as_object().into_iter().flatten() {
        let value = match value.as_str().unwrap() {
            "${{ github.token }}" => "token".to_string(),
            "${{ github.repository }}" => "o/r".to_string(),
            "${{ github.event.pull_request.number }}" => "7".to_string(),
            "${{ steps.compare.outputs.code }}" => output("code"),
            "${{ github.event.workflow_run.head_sha }}" => "abc123".to_string(),
            other => panic!("{key}: an expression the test does not know: {other}"),
        };
        env.push((key.clone(), value));
    }
    env
}

/// `(key, value)` pairs as owned strings.
fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Runs the GitHub workflow's steps in `ws`; returns the gate's exit code and output.
fn github_steps(ws: &Workspace, existing_comment: &str) -> (i32, String) {
    let workflow = yaml("github-actions.yml");
    let outputs = ws.path("github-output");
    let github = vars(&[
        ("GITHUB_OUTPUT", &outputs.display().to_string()),
        ("FAKE_EXISTING", existing_comment),
    ]);
    let run = step(&workflow, "Run the matrix");
    let (code, shown) = ws.run(run["run"].as_str().unwrap(), &github);
    assert_eq!(code, 0, "the step itself records the code: {shown}");
    // The test report and the comment read the files --report-to wrote.
    let junit = step(&workflow, "Publish junit.xml")["with"]["report_paths"]
        .as_str()
        .unwrap();
    common::junit_schema::validate(&ws.path(junit)).unwrap();
    let outputs = ws.read("github-output");
    for name in [
        "Keep the summary for the comment workflow",
        "Post summary.md on the pull request",
    ] {
        let s = step(&workflow, name);
        assert!(s["if"].as_str().unwrap().starts_with("always()"), "{name}");
        let mut env = step_env(s, &outputs);
        env.extend(github.iter().cloned());
        let (code, shown) = ws.run(s["run"].as_str().unwrap(), &env);
        assert_eq!(code, 0, "{name}: {shown}");
    }
    let gate = step(&workflow, "Gate");
    assert_eq!(gate["if"], "always()");
    ws.run(gate["run"].as_str().unwrap(), &step_env(gate, &outputs))
}

#[test]
fn a_typo_fails_the_github_gate_with_its_reason_and_one_comment_is_edited_in_place() {
    let ws = Workspace::new(TYPO);
    let (code, shown) = github_steps(&ws, "");
    assert_eq!(code, 1, "{shown}");
    assert!(shown.contains("::error::bad matrix or flags"), "{shown}");
    assert!(ws.read("github-output").contains("code=254"));
    let summary = ws.read("lockpick-out/summary.md");
    assert!(summary.starts_with("## lockpick compare: gate not run: bad input (exit 254)"));
    assert!(
        summary.contains("lockpick.toml: locks: \"etcd3\""),
        "{summary}"
    );
    assert_eq!(ws.read("lockpick-out/pull-request").trim(), "7");
    let log = ws.read("fake.log");
    assert!(
        log.contains(
            "gh api -X POST repos/o/r/issues/7/comments -f body=<!-- lockpick compare -->"
        ),
        "{log}"
    );
    assert!(
        log.contains("etcd3"),
        "the comment carries the summary: {log}"
    );

    // A second push: the comment found by its marker is edited, no new one is posted.
    std::fs::remove_file(ws.path("fake.log")).unwrap();
    let (code, _) = github_steps(&ws, "123\n");
    assert_eq!(code, 1);
    let log = ws.read("fake.log");
    assert!(
        log.contains("gh api -X PATCH repos/o/r/issues/comments/123"),
        "{log}"
    );
    assert!(!log.contains("-X POST"), "{log}");
}

#[test]
fn a_matrix_that_holds_passes_the_github_gate() {
    let ws = Workspace::new(HOLDS);
    let (code, shown) = github_steps(&ws, "");
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("every expectation held"), "{shown}");
    assert!(ws
        .read("lockpick-out/summary.md")
        .starts_with("## lockpick compare: gate passed"));
}

#[test]
fn a_typo_fails_the_gitlab_job_with_254_and_its_note_is_edited_in_place() {
    let job = &yaml("gitlab-ci.yml")["lockpick"];
    let lines: Vec<&str> = job["script"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    // Installing and building are the job's own business; lockpick is built here already.
    assert_eq!(
        lines[..2],
        [
            ".ci/install-packages gate",
            "cargo build --release --locked"
        ]
    );
    let script = lines[2..].join("\n");
    assert_eq!(job["artifacts"]["when"], "always");
    let junit = job["artifacts"]["reports"]["junit"].as_str().unwrap();
    let ws = Workspace::new(TYPO);
    let merge_request = |existing: &str| {
        vars(&[
            ("CI_MERGE_REQUEST_IID", "5"),
            ("LOCKPICK_NOTE_TOKEN", "t"),
            ("CI_API_V4_URL", "https://gitlab.example/api/v4"),
            ("CI_PROJECT_ID", "3"),
            ("FAKE_EXISTING", existing),
        ])
    };
    let (code, shown) = ws.run(&script, &merge_request("[]"));
    assert_eq!(code, 254, "the job exits with lockpick's own code: {shown}");
    common::junit_schema::validate(&ws.path(junit)).unwrap();
    let log = ws.read("fake.log");
    let notes = "https://gitlab.example/api/v4/projects/3/merge_requests/5/notes";
    assert!(
        log.contains("--request POST") && log.contains(notes),
        "{log}"
    );
    assert!(log.contains("gate not run: bad input (exit 254)"), "{log}");
    assert!(log.contains("etcd3"), "{log}");

    std::fs::remove_file(ws.path("fake.log")).unwrap();
    let existing = r#"[{"id": 4, "body": "a reviewer's note"},
                       {"id": 9, "body": "<!-- lockpick compare -->\n\nthe last run"}]"#;
    let (code, _) = ws.run(&script, &merge_request(existing));
    assert_eq!(code, 254);
    let log = ws.read("fake.log");
    assert!(
        log.contains("--request PUT") && log.contains(&format!("{notes}/9")),
        "{log}"
    );
}

#[test]
fn the_examples_pass_yamllint_with_its_default_rules() {
    let out = Command::new("yamllint")
        .args(["--strict", "-d", "default"])
        .arg(example("github-actions.yml"))
        .arg(example("github-comment.yml"))
        .arg(example("gitlab-ci.yml"))
        .arg(example("github-sharded.yml"))
        .arg(example("gitlab-sharded.yml"))
        .output()
        .expect("yamllint runs (Debian package yamllint, see .ci/install-packages)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn the_fork_variant_comments_only_on_the_pull_request_that_run_tested() {
    let ws = Workspace::new(TYPO);
    github_steps(&ws, "");
    let workflow = yaml("github-comment.yml");
    assert_eq!(
        workflow["on"]["workflow_run"]["workflows"],
        serde_json::json!(["lockpick"])
    );
    let post = step(&workflow, "Post summary.md on the pull request");
    let script = post["run"].as_str().unwrap();
    let env = |head: &str| {
        let mut env = step_env(post, "");
        env.extend(vars(&[("FAKE_HEAD", head)]));
        env
    };
    std::fs::remove_file(ws.path("fake.log")).unwrap();
    let (code, shown) = ws.run(script, &env("abc123"));
    assert_eq!(code, 0, "{shown}");
    let log = ws.read("fake.log");
    assert!(
        log.contains("gh api -X POST repos/o/r/issues/7/comments"),
        "{log}"
    );
    assert!(log.contains("etcd3"), "{log}");
    // A number that names another pull request, or is no number, posts nothing.
    std::fs::remove_file(ws.path("fake.log")).unwrap();
    let (code, shown) = ws.run(script, &env("another-head"));
    assert_eq!(code, 1, "{shown}");
    std::fs::write(ws.path("lockpick-out/pull-request"), "7; echo owned").unwrap();
    let (code, shown) = ws.run(script, &env("abc123"));
    assert_eq!(code, 1, "{shown}");
    assert!(
        !ws.read("fake.log").contains("-X POST"),
        "{}",
        ws.read("fake.log")
    );
}

#[test]
fn every_example_and_template_installs_the_gates_packages_not_the_test_set() {
    // `.ci/install-packages` alone installs everything `cargo test` needs (chromium, docker.io,
    // golang…): about three times the gate's packages and megabytes.
    let repo = common::ci_steps::repo();
    let mut files = vec![
        repo.join("action.yml"),
        repo.join("ci/lockpick.gitlab-ci.yml"),
    ];
    for entry in std::fs::read_dir(repo.join("examples/ci")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yml") {
            files.push(path);
        }
    }
    let mut installing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let calls = common::ci_steps::install_purposes(&text);
        assert!(
            calls.iter().all(|purpose| purpose == "gate"),
            "{}: {calls:?}",
            file.display()
        );
        if !calls.is_empty() {
            installing.push(file.file_name().unwrap().to_string_lossy().to_string());
        }
    }
    installing.sort();
    assert_eq!(
        installing,
        [
            "action.yml",
            "github-actions.yml",
            "gitlab-ci.yml",
            "lockpick.gitlab-ci.yml"
        ]
    );
}
