//! The sharded CI examples (`examples/ci/github-sharded.yml`, `gitlab-sharded.yml`), their jobs
//! run through the action's and the template's own steps: each shard on a runner of its own
//! against a real two-cell comparison, its report folder carried as the CI carries artifacts,
//! then the merge job, whose verdicts must be those of the unsharded comparison.

use crate::common;

use std::path::{Path, PathBuf};

use common::ci_steps::{load, run_action, run_template};
use yaml_rust2::Yaml;

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
        let kind = entry.file_type().unwrap();
        // upload-artifact keeps files and folders (the kept runs); no link may be there.
        if kind.is_dir() {
            copy_folder(&entry.path(), &to.join(entry.file_name()));
            continue;
        }
        assert!(kind.is_file(), "{:?}", entry.path());
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
    let install = pipeline["lockpick-merge"]["variables"]["LOCKPICK_INSTALL"]
        .as_str()
        .unwrap();
    assert_eq!(install, "false", "a merge needs no lock service");
    let variables = [
        ("LOCKPICK_MERGE", merge_from),
        ("LOCKPICK_INSTALL", install),
    ];
    let (code, log) = run_template(merging.path(), &variables);
    assert_eq!(code, 0, "{log}");
    let merged_report = merging.path().join("lockpick-store/lockpick-out");
    assert_eq!(verdicts(&merged_report), verdicts(&whole_report));
    let junit = std::fs::read_to_string(merging.path().join("lockpick-store/junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase").count(), 2, "{junit}");
}
