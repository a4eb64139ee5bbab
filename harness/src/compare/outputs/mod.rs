//! What a comparison writes under `<store>/compare/<time>/`: `compare.md` (the full table, here),
//! `compare.json` (what the store's index reads, here), `compare.html` (`page`), `junit.xml`
//! (`junit`) and `summary.md` (`summary`), and the pieces they share: a cell's row and the link
//! to its report.

pub(crate) mod junit;
pub mod page;
pub(crate) mod publish;
pub(crate) mod report_to;
pub(crate) mod summary;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::compare::judge::cell::{Cell, Judgement, Outcome};
use crate::report;
use crate::report::counts::FIGURES;

pub use crate::store::{COMPARE_GRID as GRID, COMPARE_JSON as JSON, COMPARE_TABLE as TABLE};

/// `compare.json`.
#[derive(Serialize)]
pub struct Stored<'a> {
    pub seed: u64,
    pub matrix: Option<&'a Path>,
    pub interrupted: bool,
    pub exit_code: u8,
    pub cells: &'a [Cell],
    /// A shard's record for `lockpick merge` (absent from a whole comparison's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<&'a crate::compare::shards::record::ShardPart>,
    /// How many cells ran at once, why, and whether the cells' slowing lowered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<&'a crate::compare::pace::Pace>,
}

fn latency(ms: Option<f64>) -> String {
    ms.map_or("-".to_string(), |v| format!("{v:.1}"))
}

pub fn verdict_word(cell: &Cell) -> String {
    match &cell.outcome {
        Outcome::Ran(_) => cell.verdict_words().unwrap_or_default(),
        Outcome::NotApplicable { reason } => format!("n/a: {reason}"),
        Outcome::NotRun => "not run".to_string(),
    }
}

/// The link to a cell's report, from the comparison's folder.
pub fn report_link(from: &Path, cell: &Cell) -> Option<String> {
    cell.figures()
        .map(|f| relative(from, &f.dir.join(report::REPORT)))
}

/// The table's columns: the cell, its verdict, every count (`FIGURES`), then its timings,
/// expectation and servers.
pub fn header() -> Vec<&'static str> {
    let mut header = vec!["lock", "nemesis", "fencing", "verdict"];
    header.extend(FIGURES.iter().map(|f| f.title));
    header.extend([
        "acquisitions",
        "acquire p50 ms",
        "acquire p99 ms",
        "unavailability",
        "expected",
        "servers",
    ]);
    header
}

/// A row of the table, one string per column of [`header`].
pub fn row(cell: &Cell) -> Vec<String> {
    let n = &cell.name;
    let mut row = vec![
        n.lock.clone(),
        n.nemesis.clone(),
        n.fencing.clone(),
        verdict_word(cell),
    ];
    match cell.figures() {
        Some(f) => {
            row.extend(f.counts.figures().map(|(_, n)| n.to_string()));
            row.extend([
                f.acquisitions.to_string(),
                latency(f.p50_ms),
                latency(f.p99_ms),
                format!("{:.0}%", f.unavailability * 100.0),
            ]);
        }
        None => row.extend(std::iter::repeat_n("-".to_string(), FIGURES.len() + 4)),
    }
    row.push(match cell.judgement {
        Judgement::NotJudged => "-".to_string(),
        Judgement::Broken(_) => format!("{} (BROKEN)", cell.expected),
        _ => format!("{} ({})", cell.expected, cell.state().words()),
    });
    row.push(
        cell.figures()
            .map_or("-".to_string(), |f| f.servers.clone()),
    );
    row
}

/// `compare.md`: every cell, broken first.
pub fn table_markdown(cells: &[Cell], seed: u64, gate: &str) -> String {
    let header = header();
    let mut out = format!(
        "# lockpick compare: {gate} (seed {seed})\n\n| {} |\n|{}\n",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for cell in crate::compare::judge::state::by_state(cells) {
        let cells: Vec<String> = row(cell)
            .iter()
            .map(|c| crate::text::markdown::escape(c))
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// `target` as seen from the folder `from` (both under the same store), as a link that stays a
/// path whatever the folders are named.
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
    crate::text::html::relative_href(path.display().to_string())
}
