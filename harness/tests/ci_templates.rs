//! The reusable GitHub Action (`action.yml`) and the GitLab CI template
//! (`ci/lockpick.gitlab-ci.yml`), exercised by running their own shell steps, read out of the
//! YAML, against a tiny real `lockpick compare` (one Redis cell, no faults, 3 s). What is not
//! run: `uses:` steps (actions/cache) and the cold `cargo install` (the build is taken as
//! cached: this test's lockpick binary is put where the cache would restore it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn load(file: &str) -> Yaml {
    let text = std::fs::read_to_string(repo().join(file)).unwrap();
    YamlLoader::load_from_str(&text).unwrap().remove(0)
}

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

/// Puts this test's lockpick where a cache would have restored the build.
fn seed_build(root: &Path) {
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_lockpick"), root.join("bin/lockpick")).unwrap();
}

/// Reads `key=value` lines a step wrote to `$GITHUB_OUTPUT`.
fn outputs(file: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// What an action's run ended with: the outputs, and the exit code of each step that ran.
struct ActionRun {
    outputs: BTreeMap<String, String>,
    codes: Vec<(String, i32)>,
    log: String,
}

/// Runs the composite action's `run:` steps as a runner would, with `inputs` over the
/// defaults: `${{ inputs.* }}` and `${{ steps.*.outputs.* }}` substituted, `if:` on inputs
/// evaluated, `$GITHUB_OUTPUT`, `$GITHUB_PATH` and `$GITHUB_STEP_SUMMARY` honoured, and the run
/// stopped at the first failing step (as the runner stops a composite action).
fn run_action(work: &Path, inputs: &[(&str, &str)]) -> ActionRun {
    let action = load("action.yml");
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    for (name, spec) in action["inputs"].as_hash().unwrap() {
        let default = spec["default"].as_str().unwrap_or("").to_string();
        values.insert(format!("inputs.{}", name.as_str().unwrap()), default);
    }
    for (name, value) in inputs {
        values.insert(format!("inputs.{name}"), value.to_string());
    }
    let tool_cache = work.join("tool-cache");
    let summary = work.join("step-summary.md");
    let path_file = work.join("github-path");
    let mut path = std::env::var("PATH").unwrap();
    let substitute = |text: &str, values: &BTreeMap<String, String>| {
        let mut out = text.to_string();
        for (key, value) in values {
            out = out.replace(&format!("${{{{ {key} }}}}"), value);
        }
        assert!(!out.contains("${{"), "unsubstituted expression in {out}");
        out
    };
    let (mut codes, mut log) = (Vec::new(), String::new());
    for step in action["runs"]["steps"].as_vec().unwrap() {
        let name = step["name"].as_str().unwrap().to_string();
        let Some(script) = step["run"].as_str() else {
            continue; // a `uses:` step (the cache)
        };
        if let Some(condition) = step["if"].as_str() {
            let (left, right) = condition.split_once(" == ").expect("a simple if:");
            if values[left] != right.trim_matches('\'') {
                continue;
            }
        }
        let id = step["id"].as_str();
        let output_file = work.join(format!("output-{}", codes.len()));
        let mut command = Command::new("bash");
        command
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
            .arg(script)
            .current_dir(work)
            .env("PATH", &path)
            .env("GITHUB_ACTION_PATH", repo())
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_PATH", &path_file)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("RUNNER_TOOL_CACHE", &tool_cache)
            .env("RUNNER_OS", "Linux");
        if let Some(env) = step["env"].as_hash() {
            for (key, value) in env {
                command.env(
                    key.as_str().unwrap(),
                    substitute(value.as_str().unwrap(), &values),
                );
            }
        }
        if name == "Build lockpick" {
            seed_build(Path::new(&values["steps.key.outputs.root"]));
        }
        let output = command.output().unwrap();
        log += &format!(
            "--- {name}: {:?}\n{}{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if let Some(id) = id {
            for (key, value) in outputs(&output_file) {
                values.insert(format!("steps.{id}.outputs.{key}"), value);
            }
        }
        for dir in std::fs::read_to_string(&path_file)
            .unwrap_or_default()
            .lines()
        {
            path = format!("{dir}:{path}");
        }
        let code = output.status.code().unwrap_or(-1);
        codes.push((name, code));
        if code != 0 {
            break;
        }
    }
    let outputs = action["outputs"]
        .as_hash()
        .unwrap()
        .iter()
        .map(|(name, spec)| {
            let value = substitute(spec["value"].as_str().unwrap(), &values);
            (name.as_str().unwrap().to_string(), value)
        })
        .collect();
    ActionRun {
        outputs,
        codes,
        log,
    }
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

/// Runs the GitLab template's `.lockpick` job as a runner would: its variables (overridden by
/// `variables`) in the environment, `before_script` then `script`, each in one shell that stops
/// at the first failing command. Returns the job's exit code and its log.
fn run_template(work: &Path, variables: &[(&str, &str)]) -> (i32, String) {
    let template = load("ci/lockpick.gitlab-ci.yml");
    let job = &template[".lockpick"];
    let mut env: BTreeMap<String, String> = job["variables"]
        .as_hash()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().unwrap().to_string(),
                v.as_str().unwrap().to_string(),
            )
        })
        .collect();
    env.insert("LOCKPICK_SRC".into(), repo().display().to_string());
    for (key, value) in variables {
        env.insert(key.to_string(), value.to_string());
    }
    // The cache holds the build of this source.
    let root = work.join(&env["LOCKPICK_ROOT"]);
    seed_build(&root);
    let rev = Command::new("git")
        .args(["-C", &env["LOCKPICK_SRC"], "rev-parse", "HEAD"])
        .output()
        .unwrap();
    std::fs::write(root.join("rev"), &rev.stdout).unwrap();
    let mut log = String::new();
    for part in ["before_script", "script"] {
        let script: Vec<&str> = job[part]
            .as_vec()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        let output = Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
            .arg(script.join("\n"))
            .current_dir(work)
            .envs(&env)
            .output()
            .unwrap();
        log += &format!(
            "--- {part}: {:?}\n{}{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let code = output.status.code().unwrap_or(-1);
        if code != 0 || part == "script" {
            return (code, log);
        }
    }
    unreachable!()
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

/// A matrix of two Redis cells without faults (fencing off and on), expected valid.
fn two_cells(dir: &Path) -> PathBuf {
    let file = dir.join("lockpick.toml");
    let text = "locks = [\"redis\"]\nnemeses = [\"none\"]\nfencing = [\"off\", \"on\"]\nseed = 8\n\
                [knobs]\ntime-limit = \"3s\"\nclients = 2\nquiet = \"500ms\"\n";
    std::fs::write(&file, text).unwrap();
    file
}

/// The step of a job of an example workflow that uses the action at the root (`uses: ./`).
fn action_step<'a>(workflow: &'a Yaml, job: &str) -> &'a Yaml {
    let steps = workflow["jobs"][job]["steps"].as_vec().unwrap();
    steps
        .iter()
        .find(|s| s["uses"].as_str() == Some("./"))
        .unwrap_or_else(|| panic!("job {job} has no `uses: ./` step"))
}

/// A step's `with:`, its expressions replaced by `values`.
fn with_inputs(step: &Yaml, values: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut inputs = Vec::new();
    for (key, value) in step["with"].as_hash().unwrap() {
        let mut value = value.as_str().unwrap().to_string();
        for (expression, by) in values {
            value = value.replace(&format!("${{{{ {expression} }}}}"), by);
        }
        assert!(!value.contains("${{"), "unsubstituted: {value}");
        inputs.push((key.as_str().unwrap().to_string(), value));
    }
    inputs
}

/// The cells of a comparison's `compare.json`: name, verdict and judgement.
fn verdicts(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("compare.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut cells: Vec<String> = (json["cells"].as_array().unwrap().iter())
        .map(|c| {
            format!(
                "{} {} {} {} {}",
                c["lock"], c["nemesis"], c["fencing"], c["verdict"], c["judgement"]
            )
        })
        .collect();
    cells.sort();
    cells
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        // upload-artifact keeps files; the report folder must hold nothing else.
        assert!(entry.file_type().unwrap().is_file(), "{:?}", entry.path());
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn the_sharded_github_example_runs_the_action_per_shard_and_merges_into_one_comparison() {
    let workflow = load("examples/ci/github-sharded.yml");
    assert_eq!(
        workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]
            .as_vec()
            .unwrap()
            .len(),
        4
    );
    let whole = tempfile::tempdir().unwrap();
    let file = two_cells(whole.path());
    let run = run_action(whole.path(), &[("matrix", file.to_str().unwrap())]);
    assert_eq!(run.outputs["exit-code"], "0", "{}", run.log);
    let whole_report = whole.path().join(&run.outputs["report"]);

    // Two shards (the example has four; the action is the same), each on its own runner.
    let merging = tempfile::tempdir().unwrap();
    for k in ["1", "2"] {
        let runner = tempfile::tempdir().unwrap();
        let file = two_cells(runner.path());
        let values = [
            ("env.MATRIX", file.to_str().unwrap()),
            ("matrix.shard", k),
            ("env.SHARDS", "2"),
        ];
        let inputs = with_inputs(action_step(&workflow, "shard"), &values);
        let inputs: Vec<(&str, &str)> = inputs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let run = run_action(runner.path(), &inputs);
        assert_eq!(run.outputs["exit-code"], "0", "{}", run.log);
        assert!(run.codes.iter().all(|(_, c)| *c == 0), "{}", run.log);
        assert!(
            !run.codes.iter().any(|(n, _)| n == "Gate"),
            "fail: false skips the gate"
        );
        // download-artifact puts each artifact in a folder named by it.
        let report = runner.path().join(&run.outputs["report"]);
        copy_folder(
            &report,
            &merging.path().join(format!("shards/lockpick-shard-{k}")),
        );
    }
    let inputs = with_inputs(action_step(&workflow, "merge"), &[]);
    let inputs: Vec<(&str, &str)> = inputs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let run = run_action(merging.path(), &inputs);
    assert_eq!(run.outputs["exit-code"], "0", "{}", run.log);
    assert_eq!(
        run.codes.last().unwrap(),
        &("Gate".to_string(), 0),
        "{}",
        run.log
    );
    assert!(
        !run.codes.iter().any(|(n, _)| n.starts_with("Install")),
        "{}",
        run.log
    );
    let merged_report = merging.path().join(&run.outputs["report"]);
    assert_eq!(verdicts(&merged_report), verdicts(&whole_report));
    assert_eq!(verdicts(&merged_report).len(), 2);
    let summary = std::fs::read_to_string(merging.path().join(&run.outputs["summary"])).unwrap();
    assert!(summary.contains("gate passed"), "{summary}");

    // A shard missing: the merge is refused (254), and the gate fails with it.
    std::fs::remove_dir_all(merging.path().join("shards/lockpick-shard-2")).unwrap();
    let run = run_action(merging.path(), &inputs);
    assert_eq!(run.outputs["exit-code"], "254", "{}", run.log);
    assert!(run.log.contains("shard 2/2 missing"), "{}", run.log);
}

#[test]
fn the_sharded_gitlab_example_runs_the_template_per_shard_and_merges_into_one_comparison() {
    let pipeline = load("examples/ci/gitlab-sharded.yml");
    let shard_job = &pipeline["lockpick-shard"];
    let shards = shard_job["parallel"]["matrix"][0]["LOCKPICK_SHARD"]
        .as_vec()
        .unwrap();
    assert_eq!(shards.len(), 4);
    let whole = tempfile::tempdir().unwrap();
    let file = two_cells(whole.path());
    let (code, log) = run_template(whole.path(), &[("LOCKPICK_MATRIX", file.to_str().unwrap())]);
    assert_eq!(code, 0, "{log}");
    let whole_report = whole.path().join("lockpick-store/lockpick-out");

    let merging = tempfile::tempdir().unwrap();
    for k in ["1", "2"] {
        let runner = tempfile::tempdir().unwrap();
        let file = two_cells(runner.path());
        let shard = format!("{k}/2");
        let variables = [
            ("LOCKPICK_MATRIX", file.to_str().unwrap()),
            ("LOCKPICK_SHARD", shard.as_str()),
        ];
        let (code, log) = run_template(runner.path(), &variables);
        assert_eq!(code, 0, "{log}");
        // GitLab extracts every shard's artifacts into the merge job's folder.
        let report = format!("lockpick-store/shards/{k}");
        copy_folder(&runner.path().join(&report), &merging.path().join(&report));
    }
    let merge_from = pipeline["lockpick-merge"]["variables"]["LOCKPICK_MERGE"]
        .as_str()
        .unwrap();
    let (code, log) = run_template(merging.path(), &[("LOCKPICK_MERGE", merge_from)]);
    assert_eq!(code, 0, "{log}");
    let merged_report = merging.path().join("lockpick-store/lockpick-out");
    assert_eq!(verdicts(&merged_report), verdicts(&whole_report));
    let junit = std::fs::read_to_string(merging.path().join("lockpick-store/junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase").count(), 2, "{junit}");
}
