//! What a reviewer reads of a real comparison, in the forms they read it: `compare.html` in
//! Chromium's DOM, `junit.xml` validated against junit-10.xsd and read by an XML parser, and
//! `summary.md` rendered to HTML as a pull-request comment is. One comparison gives a cell of
//! each state: redis under `pause-holder` without fencing is invalid as expected (held), with
//! fencing it accepts a stale write its expectation forbids (broken), and a client program that
//! dies at its first acquire cannot prove anything (not proven).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::junit_schema::validate;
use common::{dom, lockpick};
use serde_json::Value;

/// The CI variables that would give summary.md links of their own.
const CI_VARIABLES: [&str; 5] = [
    "CI_JOB_URL",
    "CI_PROJECT_DIR",
    "GITHUB_SERVER_URL",
    "GITHUB_RUN_ID",
    "GITHUB_STEP_SUMMARY",
];

fn matrix() -> String {
    let broken = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/broken/lock_client.py")
        .canonicalize()
        .unwrap();
    format!(
        r#"
locks = ["redis", "exec:redis:{} die"]
nemeses = ["pause-holder"]
fencing = ["off", "on"]
seed = 64
parallel = 2

[knobs]
time-limit = "4s"
clients = 2
ttl = "500ms"
fault-duration = "1s"
fault-interval = "500ms"
quiet = "500ms"

[[expect]]
expect = "invalid"
why = "known unsafe: a paused holder outlives its lease"

[[expect]]
locks = ["redis"]
fencing = ["on"]
expect = "no stale write accepted"
why = "hoping the fence saves it"
"#,
        broken.display()
    )
}

struct Compared {
    code: i32,
    shown: String,
    dir: PathBuf,
    _store: tempfile::TempDir,
}

fn compare(matrix: &str, args: &[&str]) -> Compared {
    let store = tempfile::tempdir().unwrap();
    let file = store.path().join("lockpick.toml");
    std::fs::write(&file, matrix).unwrap();
    let mut command = lockpick();
    command.arg("compare").arg("--matrix").arg(&file).args(args);
    command.arg("--store").arg(store.path().join("store"));
    for key in CI_VARIABLES {
        command.env_remove(key);
    }
    let output = command.output().unwrap();
    let shown = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let dir = std::fs::read_dir(store.path().join("store/compare"))
        .unwrap_or_else(|e| panic!("{e}: {shown}"))
        .next()
        .unwrap()
        .unwrap()
        .path();
    Compared {
        code: output.status.code().unwrap_or(-1),
        shown,
        dir,
        _store: store,
    }
}

/// Reads a JUnit file with python's XML parser: every case with its result elements.
fn junit_cases(path: &Path) -> Value {
    let script = r#"
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = []
for suite in root.iter("testsuite"):
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    for case in suite.iter("testcase"):
        results = [{"tag": r.tag, "type": r.get("type"), "message": r.get("message"),
                    "text": r.text or ""}
                   for r in case if r.tag in ("failure", "error", "skipped")]
        cases.append({"suite": suite.get("name"), "name": case.get("name"),
                      "results": results, "properties": props})
print(json.dumps({"tests": root.get("tests"), "cases": cases}))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `summary.md` as a comment shows it.
fn rendered(markdown: &str) -> String {
    let mut options = pulldown_cmark::Options::empty();
    options.insert(pulldown_cmark::Options::ENABLE_TABLES);
    let parser = pulldown_cmark::Parser::new_ext(markdown, options);
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, parser);
    html
}

fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].to_string())
        .collect()
}

#[test]
fn held_broken_and_not_proven_cells_are_told_apart_in_every_output() {
    let c = compare(
        &matrix(),
        &["--link-base", "https://ci.example/artifacts/store"],
    );
    assert_eq!(c.code, 1, "{}", c.shown);

    // compare.html, as Chromium's DOM has it.
    let facts = dom::facts(
        &c.dir.join("compare.html"),
        r#"
        const cells = [...document.querySelectorAll('table.grid td[title]')].map(td => ({
            name: td.title, classes: [...td.classList], state: td.dataset.state,
            why: td.querySelector('.why')?.textContent ?? null }));
        const sections = [...document.querySelectorAll('section')].map(s => s.id);
        const first = document.querySelector('h1 ~ section, h1 ~ h2');
        return { title: document.title, cells, sections, first: first && (first.id || first.textContent),
                 brokenListed: [...document.querySelectorAll('#broken li .cell')].map(a => a.textContent),
                 tableStates: [...document.querySelectorAll('#cells td.state')].map(t => t.textContent) };
        "#,
        1400,
    );
    let title = facts["title"].as_str().unwrap();
    assert!(
        title.starts_with("lockpick compare: gate FAILED"),
        "{title}"
    );
    let cells = facts["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "{facts}");
    let state_of = |lock: &str, fencing: &str| -> &Value {
        cells
            .iter()
            .find(|c| {
                let name = c["name"].as_str().unwrap();
                name.starts_with(lock) && name.ends_with(&format!("(fencing {fencing})"))
            })
            .unwrap_or_else(|| panic!("no cell {lock} {fencing}: {facts}"))
    };
    let held = state_of("redis ×", "off");
    let broken = state_of("redis ×", "on");
    assert_eq!(held["state"], "held", "{facts}");
    assert!(held["classes"].as_array().unwrap().contains(&"held".into()));
    assert!(
        held["classes"]
            .as_array()
            .unwrap()
            .contains(&"invalid".into()),
        "an expected failure keeps its verdict: {facts}"
    );
    // The bug this replaces: a second class attribute the browser threw away.
    assert!(
        broken["classes"]
            .as_array()
            .unwrap()
            .contains(&"broken".into()),
        "{facts}"
    );
    assert_eq!(broken["why"], "hoping the fence saves it", "{facts}");
    assert_eq!(
        held["why"],
        "known unsafe: a paused holder outlives its lease"
    );
    for fencing in ["off", "on"] {
        assert_eq!(state_of("exec:", fencing)["state"], "not-proven", "{facts}");
    }
    assert_eq!(facts["first"], "broken", "broken cells lead: {facts}");
    assert_eq!(
        facts["sections"],
        serde_json::json!(["broken", "not-proven"])
    );
    assert_eq!(facts["brokenListed"].as_array().unwrap().len(), 1);
    let states: Vec<&str> = facts["tableStates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(states, ["broken", "not proven", "not proven", "held"]);

    // junit.xml: valid against the schema; the story in the element's text, with a type.
    let junit = c.dir.join("junit.xml");
    validate(&junit).unwrap();
    let read = junit_cases(&junit);
    let cases = read["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4, "{read}");
    let case = |lock: &str, fencing: &str| {
        cases
            .iter()
            .find(|c| {
                let name = c["name"].as_str().unwrap();
                name.starts_with(lock) && name.contains(&format!("(fencing {fencing})"))
            })
            .unwrap()
    };
    let failed = case("redis × pause-holder", "on");
    assert!(
        failed["name"]
            .as_str()
            .unwrap()
            .ends_with("expected no stale write accepted"),
        "{failed}"
    );
    let failure = &failed["results"][0];
    assert_eq!(failure["tag"], "failure");
    assert_eq!(failure["type"], "expectation broken");
    let text = failure["text"].as_str().unwrap();
    assert!(
        text.contains("wrote with no token"),
        "the story is the text: {text}"
    );
    assert!(text.contains("because hoping the fence saves it"), "{text}");
    assert_eq!(
        case("redis × pause-holder", "off")["results"],
        serde_json::json!([])
    );
    let error = &case("exec:", "off")["results"][0];
    assert_eq!(
        (&error["tag"], &error["type"]),
        (&"error".into(), &"not proven".into())
    );
    assert!(
        error["text"].as_str().unwrap().contains("not proven"),
        "{error}"
    );

    // summary.md, rendered: broken first, three marks apart, links only to the base.
    let markdown = std::fs::read_to_string(c.dir.join("summary.md")).unwrap();
    let html = rendered(&markdown);
    let broken_at = html
        .find("Broken: off their expectation")
        .expect("a broken list");
    let unproven_at = html.find("Not proven").expect("a not-proven list");
    let grid_at = html.find("The grid").unwrap();
    assert!(broken_at < unproven_at && unproven_at < grid_at, "{html}");
    assert_eq!(markdown.matches("❌ **invalid**").count(), 1, "{markdown}");
    assert!(
        markdown.contains("✅ invalid"),
        "the expected failure is held: {markdown}"
    );
    assert_eq!(markdown.matches("❔ unknown").count(), 2, "{markdown}");
    assert!(html.contains("hoping the fence saves it"), "{html}");
    let links = hrefs(&html);
    assert!(!links.is_empty(), "{html}");
    for link in &links {
        assert!(
            link.starts_with("https://ci.example/artifacts/store/"),
            "{link}"
        );
    }
    assert!(
        links.iter().any(|l| l.ends_with("/compare.html")),
        "{links:?}"
    );
    // The broken cell's story keeps its first step, its cause and the violation.
    let item = markdown
        .lines()
        .find(|l| l.starts_with("- **redis × pause-holder (fencing on)**"))
        .unwrap_or_else(|| panic!("{markdown}"));
    assert!(item.contains("acquired the lock"), "{item}");
    assert!(item.contains("!! client"), "{item}");
    assert!(item.contains("lease had certainly ended"), "{item}");
}

#[test]
fn without_a_link_base_summary_md_links_nothing_relative() {
    let matrix = "locks = [\"redis\"]\nnemeses = [\"none\"]\nfencing = [\"off\"]\nseed = 65\n\
                  [knobs]\ntime-limit = \"3s\"\nclients = 2\nquiet = \"500ms\"\n";
    let c = compare(matrix, &[]);
    assert_eq!(c.code, 0, "{}", c.shown);
    let markdown = std::fs::read_to_string(c.dir.join("summary.md")).unwrap();
    let html = rendered(&markdown);
    assert!(hrefs(&html).is_empty(), "{html}");
    assert!(
        markdown.starts_with("## lockpick compare: gate passed"),
        "{markdown}"
    );
    assert!(
        markdown.contains("compare.html"),
        "the page is named: {markdown}"
    );
    validate(&c.dir.join("junit.xml")).unwrap();
}
