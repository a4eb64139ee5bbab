//! The report page, `report.html`: the verdict, the story of each violation, the drawings, and
//! how to reproduce the run, with its parameters in the units a person reads. Written with
//! maud, which escapes every value. The one script only records that the page rendered, for
//! the browser test.

use lockpick_checkers::model::Model;
use lockpick_checkers::story::Story;
use lockpick_checkers::Results;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde_json::Value;

use super::human_units::human_duration;
use super::{headline, svg, timeline, violations, RunFacts, STYLE};

const SCRIPT: &str = r#"
window.addEventListener('error', function (e) { document.body.dataset.error = String(e.message); });
window.addEventListener('DOMContentLoaded', function () {
  var parts = ['#headline', '#timeline', '#latency', '#throughput', '#summary'];
  var missing = parts.filter(function (p) { return !document.querySelector(p); });
  document.body.dataset.rendered = missing.length ? 'missing ' + missing.join(' ') : 'ok';
});
"#;

/// The whole page, from operations in memory (the model is built from them).
#[cfg(test)]
pub fn render(
    ops: &[lockpick_checkers::Op],
    results: &Results,
    facts: &RunFacts,
    command: &str,
) -> String {
    let model = lockpick_checkers::model::build(ops).unwrap_or_default();
    render_model(&model, results, facts, command)
}

/// The whole page, from the model the results were checked on.
pub fn render_model(model: &Model, results: &Results, facts: &RunFacts, command: &str) -> String {
    let title = format!("{} under {}", facts.lock, facts.nemesis_name());
    let verdict = results.valid.to_string();
    let first = &results.stories[..results.stories.len().min(1)];
    let violations = violations::collect(model, results);
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "lockpick: " (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { "lockpick: " (title) " " span class={"verdict " (verdict)} { (verdict) } }
                (headline::render(model, results))
                (summary(results))
                h2 { "What went wrong" }
                div id="stories" {
                    @if first.is_empty() {
                        p { "No violation: no story to tell." }
                    }
                    (stories(first, true))
                }
                h2 { "Holder timeline" }
                (timeline::legend())
                (timeline::timeline(model, &violations, facts.clients))
                h2 { "Acquire latency" }
                (svg::latency(model))
                @if model.holds.len() > svg::POINTS {
                    p class="note" { "Each column: light from the fastest to the slowest acquire, dark from the median to the 99th percentile." }
                }
                h2 { "Throughput (successful acquisitions per second)" }
                (svg::throughput(model))
                @if violations::total(results) > 1 {
                    h2 { "More violations" }
                    (violations::section(model, results, &violations))
                }
                (reproduce(command))
                (servers(facts))
                (parameters(facts))
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
    .into_string()
}

fn summary(results: &Results) -> Markup {
    let mut rows: Vec<(&str, String)> = Vec::new();
    if let Some(m) = &results.malformed {
        rows.push(("malformed history", m.to_string()));
    }
    rows.push(("operations", results.operations.to_string()));
    rows.push((
        "outcome unknown (answered info)",
        results.answered_unknown.to_string(),
    ));
    rows.push((
        "incomplete operations",
        results.incomplete.len().to_string(),
    ));
    if let Some(failed) = results.release_failures.told() {
        rows.push(("releases failed", failed));
    }
    for checker in results.checkers() {
        rows.extend(checker.table_rows());
    }
    if let Some(setup) = &results.setup {
        rows.push(("fencing token", setup.token.clone()));
        rows.push(("resource fencing", setup.fencing.clone()));
    }
    html! {
        div id="summary" {
            table {
                @for (key, value) in rows {
                    tr { th { (key) } td { (value) } }
                }
            }
        }
    }
}

/// Stories as numbered steps; each step that an operation shows links to it in the timeline.
/// The first story is open; the others fold away.
fn stories(stories: &[Story], open: bool) -> Markup {
    html! {
        @for story in stories {
            details open[open] {
                summary { b { (story.title) } }
                ol class="story" {
                    @for step in &story.steps {
                        li class=[step.violation.then_some("violation")] {
                            @match step.index {
                                Some(index) => { a href={"#op-" (index)} { (step.text) } }
                                None => { (step.text) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn reproduce(command: &str) -> Markup {
    html! {
        h2 { "Reproduce" }
        pre { (command) }
        p {
            "The run's fault schedule is in " code { "schedule.json" } "; add "
            code { "--schedule schedule.json" } " to replay it exactly."
        }
    }
}

/// What was tested: each service's version, the program or image that ran it, and where; the
/// library a client program named.
fn servers(facts: &RunFacts) -> Markup {
    html! {
        @if !facts.server_versions.is_empty() || !facts.servers.is_empty() {
            h2 { "Servers" }
            table class="parameters" id="servers" {
                @for (server, version) in &facts.server_versions {
                    tr { th { (server) " version" } td { (version) } }
                }
                @for library in &facts.libraries {
                    tr { th { "client library" } td { (library) } }
                }
                @for (what, which) in &facts.servers {
                    tr { th { (what) } td { (which) } }
                }
            }
        }
    }
}

fn parameters(facts: &RunFacts) -> Markup {
    html! {
        h2 { "Parameters" }
        table class="parameters" {
            @for (key, value) in &facts.parameters {
                @if !NOT_PARAMETERS.contains(&key.as_str()) {
                    tr { th { (key.trim_end_matches("_ms").replace('_', " ")) } td { (in_words(key, value)) } }
                }
            }
        }
    }
}

/// Parameters recorded in milliseconds (config.json's durations and the setup line's TTL).
const MILLISECONDS: &[&str] = &[
    "ttl",
    "ttl_ms",
    "time_limit",
    "work",
    "fault_duration",
    "fault_interval",
    "quiet",
    "clock_jump",
    "delay",
    "op_timeout",
    "restart_after",
];

/// Recorded entries that are not parameters: the command is shown whole above, and what ran
/// the servers has a section of its own.
const NOT_PARAMETERS: &[&str] = &[
    "command",
    "servers_versions",
    "server_versions",
    "versions",
    "runtime",
    "runtime_facts",
    "server_bins",
];

/// Parameters for which zero means the fault is not applied.
const ZERO_IS_OFF: &[&str] = &["clock_jump", "delay", "loss"];

/// A parameter as a person reads it: `1 s` rather than `1000`, `none` rather than `[]`.
fn in_words(key: &str, value: &Value) -> String {
    if ZERO_IS_OFF.contains(&key) && value.as_u64() == Some(0) {
        return "off".to_string();
    }
    match value {
        Value::Number(n) if MILLISECONDS.contains(&key) => n
            .as_u64()
            .map_or_else(|| n.to_string(), |ms| human_duration(ms * 1_000_000)),
        Value::Number(n) if key == "loss" => format!("{n} %"),
        Value::Null => "none".to_string(),
        Value::Bool(true) => "on".to_string(),
        Value::Bool(false) => "off".to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "none".to_string(),
        Value::Array(items) => {
            let words: Vec<String> = items.iter().map(|v| in_words("", v)).collect();
            words.join(", ")
        }
        Value::Object(map) => {
            let words: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}: {}", in_words(k, v)))
                .collect();
            words.join(", ")
        }
        Value::Number(n) => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_read_in_human_units() {
        assert_eq!(in_words("ttl", &json!(1000)), "1 s");
        assert_eq!(in_words("ttl_ms", &json!(500)), "500 ms");
        assert_eq!(in_words("time_limit", &json!(90_000)), "1 min 30 s");
        assert_eq!(in_words("delay", &json!(0)), "off");
        assert_eq!(in_words("loss", &json!(5)), "5 %");
        assert_eq!(in_words("nemeses", &json!([])), "none");
        assert_eq!(
            in_words("nemeses", &json!(["pause-node", "kill-node"])),
            "pause-node, kill-node"
        );
        assert_eq!(in_words("schedule", &Value::Null), "none");
        assert_eq!(in_words("fencing", &json!("off")), "off");
        assert_eq!(in_words("seed", &json!(42)), "42");
        assert_eq!(
            in_words("servers", &json!({"n1": "a", "n2": 1})),
            "n1: a, n2: 1"
        );
    }

    #[test]
    fn the_page_escapes_what_the_run_recorded() {
        let facts = RunFacts {
            lock: "<redis>".to_string(),
            parameters: json!({"store": "/tmp/<x>&y"}).as_object().unwrap().clone(),
            ..RunFacts::default()
        };
        let results = lockpick_checkers::check(&[]);
        let page = render(&[], &results, &facts, "lockpick run --store '<x>'");
        assert!(page.contains("lockpick: &lt;redis&gt; under none"));
        assert!(page.contains("/tmp/&lt;x&gt;&amp;y"));
        assert!(!page.contains("<x>"));
        for id in ["summary", "stories", "timeline", "latency", "throughput"] {
            assert!(page.contains(&format!("id=\"{id}\"")), "{id}");
        }
    }

    #[test]
    fn the_servers_section_names_versions_programs_and_the_runtime() {
        let facts = RunFacts {
            lock: "redis".to_string(),
            server_versions: vec![("redis".to_string(), "7.0.15".to_string())],
            servers: vec![
                ("runtime".to_string(), "netns".to_string()),
                (
                    "redis server".to_string(),
                    "/opt/redis/redis-server".to_string(),
                ),
            ],
            ..RunFacts::default()
        };
        let page = render(&[], &lockpick_checkers::check(&[]), &facts, "lockpick run");
        let section = &page[page.find("id=\"servers\"").expect("a servers section")..];
        let section = &section[..section.find("</table>").unwrap()];
        for words in [
            "redis version",
            "7.0.15",
            "runtime",
            "netns",
            "/opt/redis/redis-server",
        ] {
            assert!(section.contains(words), "{words} missing from {section}");
        }
        let bare = render(
            &[],
            &lockpick_checkers::check(&[]),
            &RunFacts::default(),
            "x",
        );
        assert!(!bare.contains("id=\"servers\""));
    }
}
