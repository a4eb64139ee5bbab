//! Outside text in what a comparison writes for people, on real Redis servers: a matrix whose
//! `why` holds HTML, a mention, a link, a `</details>` and a `/approve` line, an exec lock whose
//! command holds the same, a matrix file, a store and shard folders named with a line break,
//! backticks and `$(touch ...)`. What lands in `summary.md`, `compare.md`, the step summary
//! and a merge's outputs must show that text and never act on it (no HTML, no mention, no
//! quick action at a line's start, no fence closed early), `compare.html` and `junit.xml` must
//! hold it escaped and whole, and every command printed to paste must be one line that bash
//! reads back as exactly its words, running nothing else.

use crate::common;

use std::path::Path;
use std::process::Command;

use pulldown_cmark::{Event, Options, Parser, Tag};

const WHY: &str = "<img src=x onerror=alert(1)> @everyone </details>\n/approve https://evil.example `x` **b** #12 !34";

/// A folder name that closes a fence, starts a quick action and runs a command when unquoted.
fn hostile_folder(what: &str) -> String {
    format!("{what}\n```\n/approve `x` $(touch pwned)")
}

/// Two Redis cells (one breaks its expectation: Redis has no token, a paused holder writes
/// late) and two of an exec lock whose command is hostile text (its program exits at once).
fn matrix() -> String {
    format!(
        r#"
locks = ["redis", "exec:redis:false '<img src=x onerror=alert(1)> @everyone #1'"]
nemeses = ["none", "pause-holder"]
fencing = ["off"]
seed = 64
parallel = 2

[knobs]
time-limit = "3s"
clients = 2
ttl = "500ms"
fault-duration = "1s"
fault-interval = "500ms"
quiet = "500ms"

[[expect]]
expect = "valid"
why = {}
"#,
        serde_json::to_string(WHY).unwrap()
    )
}

struct Done {
    code: i32,
    stdout: String,
    stderr: String,
}

fn lockpick_in(dir: &Path, step_summary: &Path, args: &[&str]) -> Done {
    let mut command = common::lockpick();
    command
        .current_dir(dir)
        .args(args)
        .env("GITHUB_STEP_SUMMARY", step_summary);
    for key in ["CI_JOB_URL", "GITHUB_SERVER_URL", "GITHUB_RUN_ID"] {
        command.env_remove(key);
    }
    let out = command.output().unwrap();
    Done {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

/// The words bash passes on when `line` is pasted in `dir`.
fn words_in_bash(dir: &Path, line: &str) -> Vec<String> {
    let script = format!("words() {{ printf '%s\\0' \"$@\"; }}; words {line}");
    let out = Command::new("bash")
        .current_dir(dir)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "bash cannot read {line:?}: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_terminator('\0').map(str::to_string).collect()
}

/// Asserts that `markdown` shows the hostile text and never acts on it, and returns the code
/// spans it holds (the commands to paste).
fn assert_inert_markdown(what: &str, markdown: &str) -> Vec<String> {
    assert!(
        !markdown.contains("**b**"),
        "{what}: emphasis in\n{markdown}"
    );
    for line in markdown.lines() {
        assert!(
            !line.trim_start().starts_with('/'),
            "{what}: a line starts a quick action: {line:?}"
        );
    }
    assert_eq!(
        markdown.matches("</details>").count(),
        markdown.matches("<details>").count(),
        "{what}: a </details> that is not ours\n{markdown}"
    );
    let mut spans = Vec::new();
    let mut in_block = false;
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES | Options::ENABLE_GFM) {
        match event {
            Event::Html(html) | Event::InlineHtml(html) => {
                let ours = ["<details><summary>Every cell</summary>", "</details>"];
                assert!(
                    ours.iter().any(|o| html.trim() == *o),
                    "{what}: HTML that is not ours: {html:?}"
                );
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                panic!("{what}: a link to {dest_url} (no link base was given)")
            }
            Event::Start(Tag::CodeBlock(_)) => in_block = true,
            Event::End(pulldown_cmark::TagEnd::CodeBlock) => in_block = false,
            Event::Text(text) if in_block => {
                assert_eq!(
                    text.lines().count(),
                    1,
                    "{what}: a block of more lines: {text:?}"
                );
            }
            // What GitHub and GitLab would make a mention, a reference or a link.
            Event::Text(text) => {
                for acting in ["@everyone", "https://", "www.", "#12", "!34", "#1"] {
                    assert!(!text.contains(acting), "{what}: {acting} in {text:?}");
                }
            }
            Event::Code(code) => spans.push(code.to_string()),
            _ => {}
        }
    }
    spans
}

/// Every `lockpick shrink` and `lockpick run` command in `spans` (relative to `folder`, the
/// comparison folder whose summary holds them) or in
/// `printed` (whole lines) reads back in bash as the words that name real folders and files.
fn assert_commands_paste_exactly(dir: &Path, folder: &Path, spans: &[String], printed: &str) {
    let mut checked = 0;
    let from_printed = printed
        .lines()
        .filter_map(|l| l.find("lockpick ").map(|i| &l[i..]));
    let lines: Vec<(&Path, &str)> = (spans.iter().map(|s| (folder, s.as_str())))
        .chain(from_printed.map(|l| (dir, l)))
        .filter(|(_, l)| l.starts_with("lockpick shrink") || l.starts_with("lockpick run"))
        .collect();
    for (base, line) in lines {
        let words = words_in_bash(dir, line);
        let last = base.join(words.last().unwrap());
        if line.starts_with("lockpick shrink") {
            assert_eq!(words.len(), 3, "{line}: {words:?}");
            assert!(last.is_dir(), "{line}: {last:?} is no run folder");
        } else {
            assert_eq!(words[words.len() - 2], "--schedule", "{line}: {words:?}");
            assert!(last.is_file(), "{line}: {last:?} is no schedule");
        }
        checked += 1;
    }
    assert!(checked >= 2, "no command to check in {spans:?}\n{printed}");
    assert!(
        !dir.join("pwned").exists(),
        "a pasted command ran `touch pwned`"
    );
}

fn assert_no_line_starts_a_quick_action(what: &str, text: &str) {
    for line in text.lines() {
        assert!(!line.starts_with("/approve"), "{what}: {line:?}\n{text}");
    }
}

fn only_compare_folder(store: &Path) -> std::path::PathBuf {
    let mut dirs: Vec<_> = std::fs::read_dir(store.join("compare"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{dir:?}/{file}: {e}"))
}

/// The value of the `why expected` property of every suite of a JUnit file (python's parser).
fn junit_whys(path: &Path) -> Vec<String> {
    let script = r#"
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
print(json.dumps([p.get("value") for p in root.iter("property") if p.get("name") == "why expected"]))
"#;
    let out = Command::new("python3")
        .args(["-c", script])
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

#[test]
fn hostile_names_and_reasons_show_in_every_output_and_act_in_none() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let matrix_dir = dir.join("m\n");
    std::fs::create_dir(&matrix_dir).unwrap();
    let matrix_path = matrix_dir.join("approve @everyone.toml");
    std::fs::write(&matrix_path, matrix()).unwrap();
    let matrix_arg = "m\n/approve @everyone.toml";
    let store = hostile_folder("store");
    let step = dir.join("step-summary.md");
    let mut shards = Vec::new();
    let mut printed = String::new();
    for k in 1..=2 {
        let report_to = hostile_folder(&format!("shard {k}"));
        let shard = format!("{k}/2");
        let args = [
            "compare", "--matrix", matrix_arg, "--store", &store, "--shard", &shard,
        ];
        let done = lockpick_in(
            dir,
            &step,
            &[&args[..], &["--report-to", &report_to]].concat(),
        );
        assert!(
            [0, 1, 2].contains(&done.code),
            "shard {k}: {}\n{}",
            done.stdout,
            done.stderr
        );
        printed.push_str(&done.stdout);
        printed.push_str(&done.stderr);
        shards.push(report_to);
    }
    let merged_store = hostile_folder("merged");
    let mut args = vec!["merge", "--store", merged_store.as_str()];
    args.extend(shards.iter().map(String::as_str));
    let merged = lockpick_in(dir, &step, &args);
    assert_eq!(merged.code, 1, "{}\n{}", merged.stdout, merged.stderr);
    printed.push_str(&merged.stdout);
    printed.push_str(&merged.stderr);
    assert_no_line_starts_a_quick_action("what lockpick printed", &printed);

    let compared = only_compare_folder(&dir.join(&merged_store));
    let summary = read(&compared, "summary.md");
    assert!(
        summary.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{summary}"
    );
    let spans = assert_inert_markdown("summary.md", &summary);
    assert_commands_paste_exactly(dir, &compared, &spans, &merged.stdout);
    assert_inert_markdown("compare.md", &read(&compared, "compare.md"));
    let stepped = std::fs::read_to_string(&step).unwrap();
    assert_eq!(
        stepped.matches("## lockpick compare").count(),
        3,
        "{stepped}"
    );
    assert_inert_markdown("the step summary", &stepped);

    let page = read(&compared, "compare.html");
    assert!(
        !page.to_lowercase().contains("<img"),
        "compare.html holds raw HTML"
    );
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
    let whys = junit_whys(&compared.join("junit.xml"));
    assert_eq!(whys.len(), 4, "{whys:?}");
    // Whole, but for its line break: XML reads one in an attribute as a space.
    assert!(
        whys.iter().all(|w| *w == WHY.replace('\n', " ")),
        "{whys:?}"
    );
    assert!(!dir.join("pwned").exists());
}

#[test]
fn a_merge_refuses_a_folder_named_with_line_breaks_on_one_line() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let folder = hostile_folder("not a shard");
    std::fs::create_dir_all(dir.join(&folder)).unwrap();
    std::fs::write(dir.join(&folder).join("compare.json"), "{}").unwrap();
    let step = dir.join("step-summary.md");
    let done = lockpick_in(dir, &step, &["merge", "--store", "merged", &folder]);
    assert_eq!(done.code, 254, "{}\n{}", done.stdout, done.stderr);
    assert_eq!(done.stderr.lines().count(), 1, "{}", done.stderr);
    assert!(
        done.stderr
            .contains("not a shard\\n```\\n/approve `x` $(touch pwned)"),
        "{}",
        done.stderr
    );
    assert!(!dir.join("merged").exists() && !step.exists());
}

#[test]
fn a_comparison_stopped_by_a_hostile_matrix_name_reports_it_in_one_fenced_line() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let step = dir.join("step-summary.md");
    let matrix = "missing\n```\n/approve @everyone <img src=x onerror=alert(1)>.toml";
    let done = lockpick_in(
        dir,
        &step,
        &[
            "compare",
            "--matrix",
            matrix,
            "--store",
            "s",
            "--report-to",
            "out",
        ],
    );
    assert_eq!(done.code, 254, "{}\n{}", done.stdout, done.stderr);
    assert_eq!(done.stderr.lines().count(), 1, "{}", done.stderr);
    let summary = read(&dir.join("out"), "summary.md");
    assert_inert_markdown("the failure's summary.md", &summary);
    assert_inert_markdown("the step summary", &std::fs::read_to_string(&step).unwrap());
    assert!(summary.contains("missing\\n```\\n/approve"), "{summary}");
}

#[test]
fn an_invalid_run_in_a_hostile_store_prints_a_shrink_command_that_pastes_exactly() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let store = hostile_folder("store");
    let step = dir.join("step-summary.md");
    let done = lockpick_in(
        dir,
        &step,
        &[
            "run",
            "--store",
            &store,
            "--lock",
            "redis",
            "--nemesis",
            "pause-holder",
            "--seed",
            "64",
            "--time-limit",
            "3s",
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
        ],
    );
    // A paused holder outlives its lease: Redis gives no token to refuse its late write.
    assert_eq!(done.code, 1, "{}\n{}", done.stdout, done.stderr);
    let printed = format!("{}{}", done.stdout, done.stderr);
    assert_no_line_starts_a_quick_action("what lockpick run printed", &printed);
    let shrink = done
        .stdout
        .lines()
        .find_map(|l| l.find("lockpick shrink").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("no shrink command in {}", done.stdout));
    let words = words_in_bash(dir, shrink);
    assert_eq!(words.len(), 3, "{shrink}: {words:?}");
    assert!(
        words[2].starts_with(&dir.join(&store).display().to_string()),
        "{words:?}"
    );
    assert!(
        Path::new(&words[2]).join("history.jsonl").is_file(),
        "{words:?}"
    );
    assert!(!dir.join("pwned").exists());
    assert_inert_markdown(
        "the run's step summary",
        &std::fs::read_to_string(&step).unwrap(),
    );
}
