//! The HTML report of a run (`report.html`, one self-contained file, no network): the verdict,
//! the story of each violation, a holder timeline (one lane per client: holds with their tokens,
//! lease expiries, resource accesses, fault windows shaded, overlaps and stale accesses in red),
//! acquire latency and throughput over time with faults shaded, and how to reproduce the run.
//! Also `junit.xml`, one test case per checker, and the store's index page.
//!
//! Everything is drawn as plain SVG; the one script only records that the page rendered, for the
//! browser test. Long runs stay usable: the timeline is at most a few thousand pixels wide and
//! every element is small.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lockpick_checkers::model::{self, AccessKind, Model};
use lockpick_checkers::story::{seconds, Story};
use lockpick_checkers::{Op, OpType, Process, Results, F};
use serde_json::Value;

use crate::store;

pub const REPORT: &str = "report.html";
pub const JUNIT: &str = "junit.xml";
pub const INDEX: &str = "index.html";

const LEFT: f64 = 90.0;
const LANE: f64 = 18.0;

/// Escapes text for HTML and XML (and drops control characters, which XML forbids).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// Reads a run folder's history and checks it: the operations (empty if the history is
/// malformed) and the results.
pub fn load(dir: &Path) -> Result<(Vec<Op>, Results)> {
    let text = fs::read(dir.join(store::HISTORY)).context("cannot read the history")?;
    Ok(match lockpick_checkers::read_history(text.as_slice()) {
        Ok(ops) => {
            let results = lockpick_checkers::check(&ops);
            (ops, results)
        }
        Err(_) => (Vec::new(), lockpick_checkers::check_reader(text.as_slice())),
    })
}

/// Writes `report.html` and `junit.xml` into a run folder.
pub fn write_run_reports(dir: &Path, ops: &[Op], results: &Results) -> Result<()> {
    let config: Value = fs::read_to_string(dir.join(store::CONFIG))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let command = fs::read_to_string(dir.join(store::COMMAND)).unwrap_or_default();
    let html = render(ops, results, &config, command.trim());
    fs::write(dir.join(REPORT), html).context("cannot write the report")?;
    let name = config["lock"].as_str().unwrap_or("lock").to_string() + "-" + &nemesis_name(&config);
    fs::write(dir.join(JUNIT), junit(&name, results)).context("cannot write junit.xml")?;
    Ok(())
}

fn nemesis_name(config: &Value) -> String {
    let names: Vec<&str> = config["nemeses"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join("+")
    }
}

/// The report page.
pub fn render(ops: &[Op], results: &Results, config: &Value, command: &str) -> String {
    let model = model::build(ops).unwrap_or_default();
    let mut page = String::new();
    let verdict = results.valid;
    let _ = write!(
        page,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>lockpick: {title}</title>
<style>
body{{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#111}}
h1{{font-size:1.4em}} h2{{font-size:1.15em;margin-top:1.6em}}
.verdict{{display:inline-block;padding:.2em .6em;border-radius:.3em;color:#fff;font-weight:bold}}
.valid{{background:#15803d}} .invalid{{background:#b91c1c}} .unknown{{background:#a16207}}
.scroll{{overflow-x:auto;border:1px solid #ddd}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ddd;padding:.2em .5em;text-align:left}}
ol.story li.violation{{color:#b91c1c;font-weight:bold}}
code,pre{{background:#f4f4f5;padding:.1em .3em}}
svg text{{font:10px system-ui,sans-serif}}
:target{{stroke:#000;stroke-width:3px}}
.legend span{{margin-right:1.2em}}
</style></head><body>
<h1>lockpick: {title} <span class="verdict {verdict}">{verdict}</span></h1>
"#,
        title = escape(&format!(
            "{} under {}",
            config["lock"].as_str().unwrap_or("?"),
            nemesis_name(config)
        )),
    );
    summary(&mut page, results);
    stories(
        &mut page,
        &results.stories[..results.stories.len().min(1)],
        true,
    );
    let _ = writeln!(
        page,
        r#"<h2>Holder timeline</h2>
<p class="legend"><span style="color:#16a34a">■ hold (token)</span><span style="color:#ef4444">■ hold in an overlap</span><span>| lease runs out</span><span style="color:#1e3a8a">▮ access accepted</span><span style="color:#f97316">▮ rejected</span><span style="color:#dc2626">▮ stale, accepted</span><span style="color:#ca8a04">■ fault window</span></p>"#
    );
    timeline(&mut page, &model, results);
    let _ = writeln!(page, "<h2>Acquire latency</h2>");
    latency(&mut page, ops, &model);
    let _ = writeln!(
        page,
        "<h2>Throughput (successful acquisitions per second)</h2>"
    );
    throughput(&mut page, ops, &model);
    if results.stories.len() > 1 {
        let _ = writeln!(page, "<h2>More violations</h2>");
        stories(&mut page, &results.stories[1..], false);
    }
    parameters(&mut page, config, command);
    page.push_str(
        r#"<script>
window.addEventListener('error', function (e) { document.body.dataset.error = String(e.message); });
window.addEventListener('DOMContentLoaded', function () {
  var parts = ['#timeline', '#latency', '#throughput', '#summary'];
  var missing = parts.filter(function (p) { return !document.querySelector(p); });
  document.body.dataset.rendered = missing.length ? 'missing ' + missing.join(' ') : 'ok';
});
</script></body></html>
"#,
    );
    page
}

fn summary(page: &mut String, results: &Results) {
    let _ = writeln!(page, r#"<div id="summary"><table>"#);
    let mut row = |k: &str, v: String| {
        let _ = writeln!(
            page,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(k),
            escape(&v)
        );
    };
    if let Some(m) = &results.malformed {
        row("malformed history", m.to_string());
    }
    row("operations", results.operations.to_string());
    row(
        "incomplete operations",
        results.incomplete.len().to_string(),
    );
    if let Some(o) = &results.overlapping_holders {
        row("holds", o.holds.to_string());
        row("overlapping holders", o.overlaps.len().to_string());
    }
    if let Some(s) = &results.stale_accesses {
        row("stale writes accepted", s.stale_writes.to_string());
        row("stale reads accepted", s.stale_reads.to_string());
        row("accesses rejected by fencing", s.rejected.to_string());
    }
    if let Some(setup) = &results.setup {
        row("fencing token", setup.token.clone());
        row("resource fencing", setup.fencing.clone());
    }
    let _ = writeln!(page, "</table></div>");
}

/// Stories as numbered steps; each step that an operation shows links to it in the timeline.
/// The first story is open; the others fold away.
fn stories(page: &mut String, stories: &[Story], first: bool) {
    if first {
        let _ = writeln!(page, r#"<h2>What went wrong</h2><div id="stories">"#);
        if stories.is_empty() {
            let _ = writeln!(page, "<p>No violation: no story to tell.</p>");
        }
    } else {
        let _ = writeln!(page, "<div>");
    }
    for story in stories {
        let open = if first { " open" } else { "" };
        let _ = writeln!(
            page,
            r#"<details{open}><summary><b>{}</b></summary><ol class="story">"#,
            escape(&story.title)
        );
        for step in &story.steps {
            let class = if step.violation {
                " class=\"violation\""
            } else {
                ""
            };
            let text = escape(&step.text);
            match step.index {
                Some(index) => {
                    let _ = writeln!(page, "<li{class}><a href=\"#op-{index}\">{text}</a></li>");
                }
                None => {
                    let _ = writeln!(page, "<li{class}>{text}</li>");
                }
            }
        }
        let _ = writeln!(page, "</ol></details>");
    }
    let _ = writeln!(page, "</div>");
}

/// Maps run time to x, for a drawing `width` pixels wide after the lane labels.
struct Scale {
    end: u64,
    width: f64,
}

impl Scale {
    fn new(end: u64, width: f64) -> Scale {
        Scale {
            end: end.max(1),
            width,
        }
    }

    fn x(&self, t: u64) -> f64 {
        LEFT + (t.min(self.end) as f64 / self.end as f64 * self.width).round()
    }

    fn axis(&self, page: &mut String, y: f64, height: f64) {
        let seconds_total = self.end as f64 / 1e9;
        let step = [1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0]
            .into_iter()
            .find(|s| seconds_total / s <= 30.0)
            .unwrap_or(600.0);
        let mut s = 0.0;
        while s <= seconds_total {
            let x = self.x((s * 1e9) as u64);
            let _ = write!(
                page,
                r##"<line x1="{x}" y1="{y}" x2="{x}" y2="{}" stroke="#e5e7eb"/><text x="{x}" y="{}">{s}s</text>"##,
                y + height,
                y - 2.0
            );
            s += step;
        }
    }

    fn faults(&self, page: &mut String, model: &Model, y: f64, height: f64) {
        for w in &model.faults {
            let x1 = self.x(w.start);
            let x2 = self.x(w.stop.unwrap_or(model.end)).max(x1 + 1.0);
            let _ = write!(
                page,
                r##"<rect x="{x1}" y="{y}" width="{}" height="{height}" fill="#fde68a" opacity=".45"><title>{}</title></rect>"##,
                x2 - x1,
                escape(&format!(
                    "{} from {} to {}",
                    w.describe(),
                    seconds(w.start),
                    seconds(w.stop.unwrap_or(model.end))
                ))
            );
        }
    }
}

fn timeline_width(end: u64) -> f64 {
    // About 100 px a second, within what a browser draws quickly.
    (end as f64 / 1e7).clamp(800.0, 6000.0)
}

fn timeline(page: &mut String, model: &Model, results: &Results) {
    let scale = Scale::new(model.end, timeline_width(model.end));
    let mut lanes: Vec<u64> = model.holds.iter().map(|h| h.process).collect();
    lanes.extend(model.accesses.iter().map(|a| a.process));
    lanes.sort_unstable();
    lanes.dedup();
    let lane_of: BTreeMap<u64, usize> = lanes.iter().enumerate().map(|(i, p)| (*p, i)).collect();
    let top = 20.0;
    let height = top + LANE * lanes.len().max(1) as f64 + 10.0;
    let width = LEFT + scale.width + 20.0;
    let _ = writeln!(
        page,
        r#"<div class="scroll"><svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">"#
    );
    scale.axis(page, top, height - top);
    scale.faults(page, model, top, height - top);
    for (i, p) in lanes.iter().enumerate() {
        let y = top + LANE * i as f64 + 12.0;
        let _ = write!(page, r#"<text x="4" y="{y}">client {p}</text>"#);
    }
    let in_overlap: std::collections::HashSet<&str> = results
        .overlapping_holders
        .iter()
        .flat_map(|o| o.overlaps.iter())
        .flat_map(|o| [o.first.acquisition.as_str(), o.second.acquisition.as_str()])
        .collect();
    let ttl = model.setup.as_ref().map_or(0, |s| s.ttl_ms * 1_000_000);
    for hold in &model.holds {
        let y = top + LANE * lane_of[&hold.process] as f64 + 3.0;
        let x1 = scale.x(hold.start);
        let w = (scale.x(hold.end) - x1).max(1.0);
        let fill = if in_overlap.contains(hold.acquisition.as_str()) {
            "#ef4444"
        } else {
            "#86efac"
        };
        let token = hold
            .token
            .map_or("no token".to_string(), |t| format!("token {t}"));
        let _ = write!(
            page,
            r#"<rect id="op-{}" x="{x1}" y="{y}" width="{w}" height="12" fill="{fill}"><title>{}</title></rect>"#,
            hold.start_index,
            escape(&format!(
                "client {} acquisition {} ({token}) held from {} to {}",
                hold.process,
                hold.acquisition,
                seconds(hold.start),
                seconds(hold.end)
            ))
        );
        if w > 45.0 {
            if let Some(t) = hold.token {
                let _ = write!(
                    page,
                    r#"<text x="{}" y="{}">{t}</text>"#,
                    x1 + 2.0,
                    y + 10.0
                );
            }
        }
        if ttl > 0 && hold.end > hold.start + ttl {
            let x = scale.x(hold.start + ttl);
            let _ = write!(
                page,
                r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#111" stroke-width="1.5"><title>lease ran out</title></line>"##,
                y - 2.0,
                y + 14.0
            );
        }
    }
    let stale: std::collections::HashSet<u64> = results
        .stale_accesses
        .iter()
        .flat_map(|s| s.violations.iter().map(|v| v.access.index))
        .collect();
    for access in &model.accesses {
        let Some(lane) = lane_of.get(&access.process) else {
            continue;
        };
        let y = top + LANE * *lane as f64 + 1.0;
        let x = scale.x(access.time);
        let (color, wide) = if stale.contains(&access.index) {
            ("#dc2626", 3)
        } else if !access.accepted {
            ("#f97316", 2)
        } else {
            ("#1e3a8a", 1)
        };
        let kind = match access.kind {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
        };
        let _ = write!(
            page,
            r#"<rect id="op-{}" x="{x}" y="{y}" width="{wide}" height="16" fill="{color}"><title>{kind} by client {} at {}</title></rect>"#,
            access.index,
            access.process,
            seconds(access.time)
        );
    }
    let _ = writeln!(page, "</svg></div>");
}

/// Successful acquires: (time of the ok, latency in ns).
fn acquire_latencies(ops: &[Op]) -> Vec<(u64, u64)> {
    let mut invoked: BTreeMap<u64, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for op in ops {
        let (Process::Client(p), F::Acquire) = (&op.process, op.f) else {
            continue;
        };
        match op.kind {
            OpType::Invoke => {
                invoked.insert(*p, op.time);
            }
            OpType::Ok => {
                if let Some(start) = invoked.remove(p) {
                    out.push((op.time, op.time.saturating_sub(start)));
                }
            }
            _ => {
                invoked.remove(p);
            }
        }
    }
    out
}

/// Latency percentile `q` (0 to 1) of successful acquires, in ns.
pub fn acquire_latency_percentile(ops: &[Op], q: f64) -> Option<u64> {
    let mut latencies: Vec<u64> = acquire_latencies(ops).into_iter().map(|(_, l)| l).collect();
    if latencies.is_empty() {
        return None;
    }
    latencies.sort_unstable();
    let i = ((latencies.len() - 1) as f64 * q).round() as usize;
    Some(latencies[i])
}

fn latency(page: &mut String, ops: &[Op], model: &Model) {
    let points = acquire_latencies(ops);
    let scale = Scale::new(model.end, 900.0);
    let height = 180.0;
    let top = 15.0;
    let max = acquire_latency_percentile(ops, 0.99).unwrap_or(1).max(1) as f64 * 1.2;
    let _ = writeln!(
        page,
        r#"<svg id="latency" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}">"#,
        LEFT + 920.0,
        height + top + 10.0
    );
    scale.axis(page, top, height);
    scale.faults(page, model, top, height);
    let _ = write!(
        page,
        r#"<text x="4" y="{}">{:.0} ms</text><text x="4" y="{}">0</text>"#,
        top + 10.0,
        max / 1e6,
        top + height
    );
    for (t, l) in points {
        let y = top + height - (l as f64 / max).min(1.0) * height;
        let _ = write!(
            page,
            r##"<rect x="{}" y="{:.0}" width="2" height="2" fill="#1d4ed8"/>"##,
            scale.x(t),
            y
        );
    }
    let _ = writeln!(page, "</svg>");
}

fn throughput(page: &mut String, ops: &[Op], model: &Model) {
    let seconds_total = (model.end / 1_000_000_000 + 1) as usize;
    let mut bins = vec![0u64; seconds_total];
    for (t, _) in acquire_latencies(ops) {
        bins[(t / 1_000_000_000) as usize] += 1;
    }
    let scale = Scale::new(seconds_total as u64 * 1_000_000_000, 900.0);
    let height = 150.0;
    let top = 15.0;
    let max = bins.iter().copied().max().unwrap_or(1).max(1) as f64;
    let _ = writeln!(
        page,
        r#"<svg id="throughput" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}">"#,
        LEFT + 920.0,
        height + top + 10.0
    );
    scale.axis(page, top, height);
    scale.faults(page, model, top, height);
    let _ = write!(page, r#"<text x="4" y="{}">{max}/s</text>"#, top + 10.0);
    for (i, count) in bins.iter().enumerate() {
        let x = scale.x(i as u64 * 1_000_000_000);
        let w = (scale.x((i as u64 + 1) * 1_000_000_000) - x - 1.0).max(1.0);
        let h = *count as f64 / max * height;
        let _ = write!(
            page,
            r##"<rect x="{x}" y="{:.0}" width="{w}" height="{h:.0}" fill="#0f766e"><title>{count} at {i} s</title></rect>"##,
            top + height - h
        );
    }
    let _ = writeln!(page, "</svg>");
}

fn parameters(page: &mut String, config: &Value, command: &str) {
    let _ = writeln!(
        page,
        "<h2>Reproduce</h2><pre>{}</pre><p>The run's fault schedule is in <code>schedule.json</code>; \
         add <code>--schedule schedule.json</code> to replay it exactly.</p><h2>Parameters</h2><table>",
        escape(command)
    );
    if let Some(map) = config.as_object() {
        for (k, v) in map {
            if k == "command" {
                continue;
            }
            let _ = writeln!(
                page,
                "<tr><th>{}</th><td>{}</td></tr>",
                escape(k),
                escape(&v.to_string())
            );
        }
    }
    let _ = writeln!(page, "</table>");
}

/// JUnit XML: one test case per checker; a failure carries the story of its first violation.
pub fn junit(name: &str, results: &Results) -> String {
    let mut cases = Vec::new();
    let story_of = |kinds: &[&str]| {
        results
            .stories
            .iter()
            .find(|s| kinds.contains(&s.kind.as_str()))
            .map(|s| s.one_line())
            .unwrap_or_default()
    };
    if let Some(m) = &results.malformed {
        cases.push((
            "history".to_string(),
            Some(("error", format!("malformed history: {m}"), String::new())),
        ));
    }
    if let Some(o) = &results.overlapping_holders {
        let failure = (!o.overlaps.is_empty()).then(|| {
            (
                "failure",
                format!("{} overlapping holders", o.overlaps.len()),
                story_of(&["overlap"]),
            )
        });
        cases.push(("overlapping holders".to_string(), failure));
    }
    if let Some(s) = &results.stale_accesses {
        let failure = (!s.violations.is_empty()).then(|| {
            (
                "failure",
                format!(
                    "{} stale writes and {} stale reads accepted",
                    s.stale_writes, s.stale_reads
                ),
                story_of(&["stale-write", "stale-read"]),
            )
        });
        cases.push(("stale writes accepted".to_string(), failure));
    }
    let failures = cases
        .iter()
        .filter(|(_, f)| matches!(f, Some(("failure", _, _))))
        .count();
    let errors = cases
        .iter()
        .filter(|(_, f)| matches!(f, Some(("error", _, _))))
        .count();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"lockpick {}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\">\n",
        escape(name),
        cases.len()
    );
    for (case, outcome) in cases {
        let _ = write!(
            xml,
            "<testcase classname=\"lockpick.{}\" name=\"{}\"",
            escape(name),
            escape(&case)
        );
        match outcome {
            None => xml.push_str("/>\n"),
            Some((tag, message, story)) => {
                let _ = write!(
                    xml,
                    ">\n<{tag} message=\"{}\">{}</{tag}>\n</testcase>\n",
                    escape(&message),
                    escape(&story)
                );
            }
        }
    }
    xml.push_str("</testsuite>\n</testsuites>\n");
    xml
}

/// Rewrites the store's index page: every run, newest first, with its verdict and a link.
pub fn write_index(store: &Path) -> Result<()> {
    let mut runs: Vec<(String, PathBuf, String, String)> = Vec::new();
    for group in fs::read_dir(store)?.flatten() {
        let Ok(entries) = fs::read_dir(group.path()) else {
            continue;
        };
        for run in entries.flatten() {
            let path = run.path();
            if path.is_symlink() || !path.is_dir() {
                continue;
            }
            let Ok(text) = fs::read_to_string(path.join(store::RESULTS)) else {
                continue;
            };
            let results: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let verdict = results["valid"].as_str().unwrap_or("unknown").to_string();
            let stamp = run.file_name().to_string_lossy().to_string();
            let name = group.file_name().to_string_lossy().to_string();
            runs.push((stamp, path, name, verdict));
        }
    }
    runs.sort_by(|a, b| b.0.cmp(&a.0));
    let mut page = String::from(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockpick runs</title>\
         <style>body{font:14px system-ui,sans-serif;margin:1.5em}td,th{border:1px solid #ddd;padding:.2em .5em}\
         table{border-collapse:collapse}.invalid{color:#b91c1c;font-weight:bold}.valid{color:#15803d}\
         .unknown{color:#a16207}</style></head><body><h1>lockpick runs</h1><table>\
         <tr><th>when</th><th>run</th><th>verdict</th></tr>\n",
    );
    for (stamp, path, name, verdict) in runs {
        let relative = path.strip_prefix(store).unwrap_or(&path).join(REPORT);
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td><a href=\"{}\">{}</a></td><td class=\"{}\">{}</td></tr>",
            escape(&stamp),
            escape(&relative.display().to_string()),
            escape(&name),
            escape(&verdict),
            escape(&verdict)
        );
    }
    page.push_str("</table></body></html>\n");
    // Written aside and renamed: cells of a `compare` finish at the same time.
    let temporary = store.join(format!(
        "{INDEX}.new-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    fs::write(&temporary, page).context("cannot write the store's index")?;
    fs::rename(&temporary, store.join(INDEX)).context("cannot write the store's index")
}
