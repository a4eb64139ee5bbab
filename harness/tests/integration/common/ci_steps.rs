//! Running the reusable GitHub Action (`action.yml`) and the GitLab CI template
//! (`ci/lockpick.gitlab-ci.yml`) as their runners would: their own shell steps, read out of the
//! YAML. What is not run: `uses:` steps (actions/cache) and the cold `cargo install` (the build
//! is taken as cached: the test's lockpick binary is put where the cache would restore it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn load(file: &str) -> Yaml {
    let text = std::fs::read_to_string(repo().join(file)).unwrap();
    YamlLoader::load_from_str(&text).unwrap().remove(0)
}

/// Puts this test's lockpick where a cache would have restored the build.
pub fn seed_build(root: &Path) {
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_lockpick"), root.join("bin/lockpick")).unwrap();
}

/// Reads `key=value` lines a step wrote to `$GITHUB_OUTPUT`.
pub fn outputs(file: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// What an action's run ended with: the outputs, and the exit code of each step that ran.
pub struct ActionRun {
    pub outputs: BTreeMap<String, String>,
    pub codes: Vec<(String, i32)>,
    pub log: String,
}

/// Runs the composite action's `run:` steps as a runner would, with `inputs` over the
/// defaults: `${{ inputs.* }}` and `${{ steps.*.outputs.* }}` substituted, `if:` on inputs
/// evaluated, `$GITHUB_OUTPUT`, `$GITHUB_PATH` and `$GITHUB_STEP_SUMMARY` honoured, and the run
/// stopped at the first failing step (as the runner stops a composite action).
pub fn run_action(work: &Path, inputs: &[(&str, &str)]) -> ActionRun {
    run_action_with_env(work, inputs, &[])
}

/// [`run_action`], with `env` added to the caller's environment (a workflow's `env:`).
pub fn run_action_with_env(
    work: &Path,
    inputs: &[(&str, &str)],
    env: &[(&str, &str)],
) -> ActionRun {
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
            .env("RUNNER_OS", "Linux")
            .envs(env.iter().copied());
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

/// Runs the GitLab template's `.lockpick` job as a runner would: its variables (overridden by
/// `variables`) in the environment, `before_script` then `script`, each in one shell that stops
/// at the first failing command. Returns the job's exit code and its log.
pub fn run_template(work: &Path, variables: &[(&str, &str)]) -> (i32, String) {
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

/// The purpose each call of `.ci/install-packages` in a CI file's text passes (its first word
/// after the script's name; empty for none), comments left out.
pub fn install_purposes(text: &str) -> Vec<String> {
    let mut purposes = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        for (_, after) in line
            .match_indices("install-packages")
            .map(|(i, m)| line.split_at(i + m.len()))
        {
            let word = after
                .trim_start_matches(['"', '\''])
                .split_whitespace()
                .next();
            let word = word.unwrap_or("").trim_end_matches(';');
            let purpose = if word.starts_with(['&', '|', '>']) {
                ""
            } else {
                word
            };
            purposes.push(purpose.to_string());
        }
    }
    purposes
}
