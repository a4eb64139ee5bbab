//! `lockpick compare` as a CI gate, against real servers: a matrix file's expectations decide
//! the exit code, a cell whose lock refuses its nemesis is n/a instead of stopping the matrix,
//! and the outputs CI reads (`junit.xml`, read by a JUnit parser, and `summary.md`) say what
//! happened. Cells are short: 4 s, 2 clients, a 500 ms lease paused for 1 s.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{chromium, lockpick};
use serde_json::Value;

/// Knobs that make a 4 s cell long enough for pause-holder to freeze a holder past its lease.
const SHORT: &str = r#"
[knobs]
time-limit = "4s"
clients = 2
ttl = "500ms"
fault-duration = "1s"
fault-interval = "500ms"
quiet = "500ms"
"#;

struct Compared {
    code: i32,
    stdout: String,
    stderr: String,
    /// The comparison's folder, `<store>/compare/<time>`.
    dir: PathBuf,
    _store: tempfile::TempDir,
}

/// Runs `lockpick compare` with `args`, and a matrix file with `matrix` if given.
fn compare(matrix: Option<&str>, args: &[&str], env: &[(&str, &Path)]) -> Compared {
    let store = tempfile::tempdir().unwrap();
    let mut command = lockpick();
    command
        .arg("compare")
        .args(args)
        .arg("--store")
        .arg(store.path());
    if let Some(text) = matrix {
        let file = store.path().join("lockpick.toml");
        std::fs::write(&file, text).unwrap();
        command.arg("--matrix").arg(file);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("lockpick runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let dir = std::fs::read_dir(store.path().join("compare"))
        .unwrap_or_else(|e| panic!("no comparison written ({e}):\n{stdout}\n{stderr}"))
        .next()
        .unwrap()
        .unwrap()
        .path();
    Compared {
        code: output.status.code().unwrap_or(-1),
        stdout,
        stderr,
        dir,
        _store: store,
    }
}

impl Compared {
    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.join(file)).unwrap()
    }

    fn cells(&self) -> Vec<Value> {
        let json: Value = serde_json::from_str(&self.read("compare.json")).unwrap();
        json["cells"].as_array().unwrap().clone()
    }

    fn shown(&self) -> String {
        format!("exit {}\n{}\n{}", self.code, self.stdout, self.stderr)
    }
}

/// The suites of a JUnit file as a JUnit parser reads them: junitparser (PyPI) where it is
/// installed, else python's own XML parser reading the same elements.
fn parse_junit(path: &Path) -> Value {
    let script = r#"
import json, sys
path = sys.argv[1]
try:
    from junitparser import JUnitXml, Properties
    suites = []
    for suite in JUnitXml.fromfile(path):
        cases = []
        for case in suite:
            kinds = [type(r).__name__.lower() for r in case.result]
            messages = [r.message or "" for r in case.result]
            found = suite.child(Properties)
            props = {p.name: p.value for p in found} if found is not None else {}
            cases.append({"name": case.name, "time": case.time, "results": kinds,
                          "messages": messages, "properties": props})
        suites.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures,
                       "errors": suite.errors, "skipped": suite.skipped, "cases": cases})
    parser = "junitparser"
except ImportError:
    import xml.etree.ElementTree as ET
    suites = []
    for s in ET.parse(path).getroot().iter("testsuite"):
        cases = []
        for c in s.iter("testcase"):
            kinds = [r.tag for r in c if r.tag in ("failure", "error", "skipped")]
            messages = [r.get("message", "") for r in c if r.tag in ("failure", "error", "skipped")]
            props = {p.get("name"): p.get("value") for p in s.iter("property")}
            cases.append({"name": c.get("name"), "time": float(c.get("time", "0")),
                          "results": kinds, "messages": messages, "properties": props})
        suites.append({"name": s.get("name"), "tests": int(s.get("tests")),
                       "failures": int(s.get("failures")), "errors": int(s.get("errors")),
                       "skipped": int(s.get("skipped", "0")), "cases": cases})
    parser = "xml.etree"
print(json.dumps({"parser": parser, "suites": suites}))
"#;
    let output = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn a_broken_expectation_exits_1_naming_the_cell_and_a_refused_cell_is_na() {
    let matrix = format!(
        "locks = [\"redis\"]\nnemeses = [\"pause-holder\", \"partition-ring\"]\n\
         fencing = [\"on\"]\nseed = 61\n{SHORT}\n\
         [[expect]]\nnemeses = [\"pause-holder\"]\nexpect = \"no stale write accepted\"\n"
    );
    let step = tempfile::NamedTempFile::new().unwrap();
    let c = compare(Some(&matrix), &[], &[("GITHUB_STEP_SUMMARY", step.path())]);
    assert_eq!(c.code, 1, "{}", c.shown());
    let broken: Vec<&str> = c
        .stdout
        .lines()
        .filter(|l| l.starts_with("NOT AS EXPECTED"))
        .collect();
    assert_eq!(broken.len(), 1, "{}", c.shown());
    assert!(
        broken[0].contains("redis × pause-holder (fencing on): expected no stale write accepted"),
        "{}",
        broken[0]
    );

    // The refused cell is shown, not fatal, with the configuration's reason.
    let cells = c.cells();
    let ring = cells
        .iter()
        .find(|cell| cell["nemesis"] == "partition-ring")
        .unwrap();
    assert_eq!(ring["outcome"], "not-applicable", "{ring}");
    assert!(
        ring["reason"].as_str().unwrap().contains("5 servers"),
        "{ring}"
    );
    assert!(
        c.read("compare.md")
            .contains("| n/a: --nemesis partition-ring cannot apply"),
        "{}",
        c.read("compare.md")
    );

    // summary.md: the grid (one row, a column per nemesis), totals, the first broken cell.
    let summary = c.read("summary.md");
    assert!(
        summary.contains("| lock (fencing) | pause-holder | partition-ring |"),
        "{summary}"
    );
    let row = summary
        .lines()
        .find(|l| l.starts_with("| redis (on) |"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(row.contains("❌ **invalid**"), "{row}");
    // No link base: no link (a path relative to the store is dead in a comment).
    assert!(
        !row.contains("report.html") && row.contains("➖ n/a"),
        "{row}"
    );
    let stale: u64 = cells[0]["counts"]["stale_writes"].as_u64().unwrap();
    assert!(stale > 0, "{}", cells[0]);
    assert!(
        summary.contains(&format!("stale writes accepted {stale}")),
        "{summary}"
    );
    assert!(
        summary.contains("- **redis × pause-holder (fencing on)**: expected no stale write"),
        "{summary}"
    );
    // Published once for the comparison, not once per cell.
    assert_eq!(
        std::fs::read_to_string(step.path()).unwrap(),
        summary + "\n"
    );

    // junit.xml: a suite per cell named by lock, nemesis and fencing; one case each.
    let junit = parse_junit(&c.dir.join("junit.xml"));
    let suites = junit["suites"].as_array().unwrap();
    let names: Vec<&str> = suites.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "lockpick redis × pause-holder fencing on",
            "lockpick redis × partition-ring fencing on"
        ],
        "{junit}"
    );
    let paused = &suites[0]["cases"][0];
    assert_eq!(paused["results"], serde_json::json!(["failure"]), "{junit}");
    assert!(paused["messages"][0]
        .as_str()
        .unwrap()
        .contains("expected no stale write accepted"));
    assert!(paused["time"].as_f64().unwrap() > 1.0, "{junit}");
    let properties = &paused["properties"];
    assert_eq!(properties["seed"], "61", "{junit}");
    assert_eq!(properties["fencing"], "on", "{junit}");
    assert_eq!(properties["stale writes accepted"], stale.to_string());
    assert_eq!(
        suites[1]["cases"][0]["results"],
        serde_json::json!(["skipped"])
    );
    assert_eq!(suites[0]["failures"], 1);
}

#[test]
fn expectations_that_hold_exit_0_although_a_cell_is_invalid() {
    let matrix = format!(
        "locks = [\"redis\"]\nnemeses = [\"none\", \"pause-holder\"]\nfencing = [\"off\"]\n\
         seed = 62\nparallel = 2\n{SHORT}\n\
         [[expect]]\nlocks = [\"redis\"]\nnemeses = [\"pause-holder\"]\n\
         expect = \"invalid\"\nwhy = \"known unsafe\"\n"
    );
    let c = compare(Some(&matrix), &[], &[]);
    assert_eq!(c.code, 0, "{}", c.shown());
    let cells = c.cells();
    let verdicts: Vec<&str> = cells
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["valid", "invalid"], "{}", c.shown());
    // Under a matrix, the cell expected invalid ends at its first proven violation (the time
    // limit is 4 s); the one expected valid runs its full time.
    assert!(cells[0]["decided_at"].is_null(), "{}", cells[0]);
    let decided = cells[1]["decided_at"]
        .as_f64()
        .unwrap_or_else(|| panic!("{}", cells[1]));
    assert!(decided < 4.0, "{decided}");
    let summary = c.read("summary.md");
    assert!(
        summary.contains("**2 cells**: 0 broken · 0 not proven · 2 held"),
        "{summary}"
    );
    let page = c.read("compare.html");
    assert_eq!(
        page.matches("report.html").count(),
        4,
        "grid and table link each cell"
    );
    // The grid as a browser draws it: a coloured cell per verdict, each linking its report.
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compare-grid.png");
    let _ = std::fs::remove_file(&shot);
    let dom = chromium(&c.dir.join("compare.html"), &["--dump-dom".to_string()]);
    let dom = String::from_utf8_lossy(&dom.stdout).to_string();
    assert!(
        dom.contains("class=\"grid\""),
        "no grid in the rendered page"
    );
    assert!(
        dom.contains("<td class=\"held valid\""),
        "no valid cell drawn"
    );
    assert!(
        dom.contains("<td class=\"held invalid\""),
        "no invalid cell drawn that held"
    );
    chromium(
        &c.dir.join("compare.html"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,900".to_string(),
        ],
    );
    assert!(
        std::fs::metadata(&shot).is_ok_and(|m| m.len() > 5_000),
        "no screenshot of the grid"
    );
}

#[test]
fn a_compare_without_a_matrix_exits_1_when_a_cell_is_invalid() {
    let c = compare(
        None,
        &[
            "--locks",
            "redis",
            "--nemeses",
            "pause-holder",
            "--fencing",
            "off",
            "--seed",
            "63",
            "--time-limit",
            "4s",
            "--clients",
            "2",
            "--ttl",
            "500ms",
            "--fault-duration",
            "1s",
            "--fault-interval",
            "500ms",
            "--quiet",
            "500ms",
            "--work",
            "100ms",
        ],
        &[],
    );
    assert_eq!(c.code, 1, "{}", c.shown());
    let cells = c.cells();
    assert_eq!(cells[0]["verdict"], "invalid");
    assert_eq!(cells[0]["expected"], "valid");
    // The knobs reached the cell as the run's own flags.
    let run = Path::new(cells[0]["dir"].as_str().unwrap());
    let command = std::fs::read_to_string(run.join("command.txt")).unwrap();
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    let config = &results["run"]["config"];
    assert_eq!(
        (
            config["ttl"].as_u64(),
            config["fault_duration"].as_u64(),
            config["clients"].as_u64()
        ),
        (Some(500), Some(1000), Some(2)),
        "{command}"
    );
}
