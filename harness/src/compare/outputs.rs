//! What a comparison writes under `<store>/compare/<time>/`: `compare.md` (the full table),
//! `compare.html` (the lock × nemesis grid, coloured, linking each cell's report, then the
//! table), `junit.xml` (a suite per cell, one case: its expectation), `compare.json` (what the
//! store's index reads) and `summary.md` (for a pull request).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lockpick_checkers::Validity;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use serde::Serialize;

use super::cell::{Cell, Judgement, Outcome};
use crate::report;
use crate::summary_md::{Counts, Gate, SummaryCell};

pub use crate::store::{COMPARE_GRID as GRID, COMPARE_JSON as JSON, COMPARE_TABLE as TABLE};

/// `compare.json`.
#[derive(Serialize)]
pub struct Stored<'a> {
    pub seed: u64,
    pub matrix: Option<&'a Path>,
    pub interrupted: bool,
    pub exit_code: u8,
    pub cells: &'a [Cell],
}

fn latency(ms: Option<f64>) -> String {
    ms.map_or("-".to_string(), |v| format!("{v:.1}"))
}

fn verdict_word(cell: &Cell) -> String {
    match &cell.outcome {
        Outcome::Ran(_) => cell.verdict_words().unwrap_or_default(),
        Outcome::NotApplicable { reason } => format!("n/a: {reason}"),
    }
}

fn judgement_word(j: &Judgement) -> &'static str {
    match j {
        Judgement::Holds => "as expected",
        Judgement::Broken(_) => "NOT as expected",
        Judgement::Unproven(_) => "unproven",
        Judgement::NotJudged => "-",
    }
}

/// The link to a cell's report, from the comparison's folder.
fn report_link(from: &Path, cell: &Cell) -> Option<String> {
    cell.figures()
        .map(|f| relative(from, &f.dir.join(report::REPORT)))
}

pub const HEADER: [&str; 15] = [
    "lock",
    "nemesis",
    "fencing",
    "verdict",
    "overlapping holders",
    "stale writes accepted",
    "stale reads",
    "grants under a live lease",
    "token violations",
    "acquisitions",
    "acquire p50 ms",
    "acquire p99 ms",
    "unavailability",
    "expected",
    "servers",
];

/// A row of the table, one string per column of [`HEADER`].
fn row(cell: &Cell) -> Vec<String> {
    let n = &cell.name;
    let mut row = vec![
        n.lock.clone(),
        n.nemesis.clone(),
        n.fencing.clone(),
        verdict_word(cell),
    ];
    match cell.figures() {
        Some(f) => row.extend([
            f.counts.overlaps.to_string(),
            f.counts.stale_writes.to_string(),
            f.counts.stale_reads.to_string(),
            f.counts.grants_under_live_lease.to_string(),
            f.counts.token_violations.to_string(),
            f.acquisitions.to_string(),
            latency(f.p50_ms),
            latency(f.p99_ms),
            format!("{:.0}%", f.unavailability * 100.0),
        ]),
        None => row.extend(std::iter::repeat_n("-".to_string(), 9)),
    }
    row.push(match cell.judgement {
        Judgement::NotJudged => "-".to_string(),
        ref j => format!("{} ({})", cell.expected, judgement_word(j)),
    });
    row.push(
        cell.figures()
            .map_or("-".to_string(), |f| f.servers.clone()),
    );
    row
}

pub fn table_markdown(cells: &[Cell], seed: u64) -> String {
    let mut out = format!(
        "# lockpick compare (seed {seed})\n\n| {} |\n|{}\n",
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for cell in cells {
        let cells: Vec<String> = row(cell)
            .iter()
            .map(|c| crate::markdown_text::escape(c))
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// The grid's cells for `summary.md`, with links relative to `dir`.
pub fn summary_cells(cells: &[Cell], dir: &Path) -> Vec<SummaryCell> {
    cells
        .iter()
        .map(|c| SummaryCell {
            lock: c.name.lock.clone(),
            nemesis: c.name.nemesis.clone(),
            fencing: c.name.fencing.clone(),
            verdict: c.figures().map(|f| f.verdict),
            repeats: c
                .verdict_words()
                .filter(|_| !c.repeats.is_empty())
                .and_then(|w| w.split_once(' ').map(|(_, tally)| tally.to_string())),
            na_reason: match &c.outcome {
                Outcome::NotApplicable { reason } => Some(reason.clone()),
                Outcome::Ran(_) => None,
            },
            expected: match &c.judgement {
                Judgement::Holds => Some(Gate::Met),
                Judgement::Broken(w) => Some(Gate::Broken(w.clone())),
                Judgement::Unproven(w) => Some(Gate::Unproven(w.clone())),
                Judgement::NotJudged => None,
            }
            .map(|g| (c.expected.clone(), g)),
            counts: c.figures().map_or(Counts::default(), |f| f.counts),
            story: c.figures().and_then(|f| f.first_story.clone()),
            report: report_link(dir, c),
        })
        .collect()
}

/// `compare.html`: the grid, then the table.
pub fn page(cells: &[Cell], seed: u64, dir: &Path, notes: &[String]) -> String {
    let title = format!("lockpick compare (seed {seed})");
    let mut nemeses: Vec<&str> = Vec::new();
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for c in cells {
        if !nemeses.contains(&c.name.nemesis.as_str()) {
            nemeses.push(&c.name.nemesis);
        }
        let row = (c.name.lock.as_str(), c.name.fencing.as_str());
        if !rows.contains(&row) {
            rows.push(row);
        }
    }
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) }
                style { (PreEscaped(report::STYLE)) (PreEscaped(GRID_STYLE)) }
            }
            body {
                h1 { (title) }
                @for note in notes { p { (note) } }
                table.grid {
                    tr {
                        th { "lock (fencing)" }
                        @for nemesis in &nemeses { th { (nemesis) } }
                    }
                    @for (lock, fencing) in &rows {
                        tr {
                            th { (lock) " (" (fencing) ")" }
                            @for nemesis in &nemeses {
                                @let cell = cells.iter().find(|c| c.name.lock == *lock
                                    && c.name.fencing == *fencing && c.name.nemesis == *nemesis);
                                @match cell {
                                    Some(c) => (grid_cell(c, dir)),
                                    None => td {},
                                }
                            }
                        }
                    }
                }
                h2 { "Every cell" }
                table {
                    tr { @for h in HEADER { th { (h) } } }
                    @for c in cells {
                        @let r = row(c);
                        tr {
                            @for (i, text) in r.iter().enumerate() {
                                @if i == 3 {
                                    td class=(class_of(c)) {
                                        @match report_link(dir, c) {
                                            Some(link) => a href=(link) { (text) },
                                            None => (text),
                                        }
                                    }
                                } @else {
                                    td { (text) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}

/// The grid's own few rules, on top of the shared stylesheet.
const GRID_STYLE: &str = "
table.grid td { vertical-align: top; min-width: 9em; }
table.grid td.valid { background: #dcfce7; }
table.grid td.invalid { background: #fee2e2; }
table.grid td.unknown { background: #fef9c3; }
table.grid td.na { background: #f4f4f5; color: #555; }
table.grid .counts, table.grid .expected { font-size: .85em; color: #333; font-weight: normal; }
table.grid .broken { color: #b91c1c; font-weight: bold; }
";

fn class_of(c: &Cell) -> &'static str {
    match c.figures().map(|f| f.verdict) {
        Some(Validity::Valid) => "valid",
        Some(Validity::Invalid) => "invalid",
        Some(Validity::Unknown) => "unknown",
        None => "na",
    }
}

fn grid_cell(c: &Cell, dir: &Path) -> Markup {
    html! {
        td class=(class_of(c)) title=(c.name.to_string()) {
            @match (c.figures(), report_link(dir, c)) {
                (Some(f), Some(link)) => {
                    a href=(link) { span class=(format!("verdict {}", class_of(c))) { (verdict_word(c)) } }
                    div.counts {
                        "overlaps " (f.counts.overlaps) " · stale writes " (f.counts.stale_writes)
                        " · stale reads " (f.counts.stale_reads)
                        " · grants under a live lease " (f.counts.grants_under_live_lease)
                        " · token violations " (f.counts.token_violations)
                    }
                }
                _ => { (verdict_word(c)) }
            }
            @if !matches!(c.judgement, Judgement::NotJudged) {
                div.expected class=[matches!(c.judgement, Judgement::Broken(_)).then_some("broken")] {
                    "expected " (c.expected) ": " (judgement_word(&c.judgement))
                }
            }
        }
    }
}

/// `junit.xml`: a suite per cell (named by its lock, nemesis and fencing) with one case, its
/// expectation; a broken one fails with the evidence, an unproven one is an error, an n/a cell
/// is skipped with its reason.
pub fn junit(cells: &[Cell], seed: u64, dir: &Path) -> Result<String, quick_junit::SerializeError> {
    let mut report = Report::new("lockpick compare");
    for c in cells {
        let n = &c.name;
        let mut suite = TestSuite::new(format!(
            "lockpick {} × {} fencing {}",
            n.lock, n.nemesis, n.fencing
        ));
        let status = match (&c.judgement, &c.outcome) {
            (_, Outcome::NotApplicable { reason }) => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!("n/a: {reason}"));
                s
            }
            (Judgement::Broken(why), _) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(why.clone());
                s
            }
            (Judgement::Unproven(why), _) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_message(why.clone());
                s
            }
            _ => TestCaseStatus::success(),
        };
        let mut case = TestCase::new(format!("expected {}", c.expected), status);
        case.set_classname(format!(
            "lockpick.{}.{}.fencing-{}",
            n.lock, n.nemesis, n.fencing
        ));
        let mut properties = vec![
            Property::new("lock", &n.lock),
            Property::new("nemesis", &n.nemesis),
            Property::new("fencing", &n.fencing),
            Property::new("seed", seed.to_string()),
            Property::new("verdict", verdict_word(c)),
        ];
        if !c.repeats.is_empty() {
            let seeds: Vec<String> = c.repeats.iter().map(|r| r.seed.to_string()).collect();
            properties.push(Property::new("seeds", seeds.join(",")));
        }
        if let Some(f) = c.figures() {
            properties.push(Property::new("servers", &f.servers));
            case.set_time(f.took);
            suite.set_time(f.took);
            let k = f.counts;
            properties.extend([
                Property::new("overlapping holders", k.overlaps.to_string()),
                Property::new("stale writes accepted", k.stale_writes.to_string()),
                Property::new("stale reads", k.stale_reads.to_string()),
                Property::new(
                    "grants under a live lease",
                    k.grants_under_live_lease.to_string(),
                ),
                Property::new("token violations", k.token_violations.to_string()),
                Property::new("report", relative(dir, &f.dir.join(report::REPORT))),
            ]);
        }
        suite.add_properties(properties.clone());
        case.add_properties(properties);
        suite.add_test_case(case);
        report.add_test_suite(suite);
    }
    report.to_string()
}

/// `target` as seen from the folder `from` (both under the same store).
pub fn relative(from: &Path, target: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = target.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for c in &to[common..] {
        path.push(c);
    }
    path.display().to_string()
}
