//! `summary.md`: the markdown a CI job posts on a pull request or in its step summary, written
//! by every run and every comparison. A lock × nemesis grid with a mark per cell, the totals
//! that matter (every count of `FIGURES`), the first violation's story on one line, and each
//! cell's figures and report link folded away, so that a 50-cell comparison still fits a
//! comment. When `$GITHUB_STEP_SUMMARY` names a file, the summary is appended to it too.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use lockpick_checkers::{Results, Validity};

use crate::config::RunConfig;
use crate::text::markdown::escape;

pub use crate::report::counts::Counts;
use crate::report::counts::FIGURES;

pub const SUMMARY: &str = "summary.md";

/// The longest story a summary quotes: a comment is read, not searched.
const STORY_CHARS: usize = 300;

/// Whether a cell met what it was expected to show (comparisons with expectations).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    Met,
    Broken(String),
    Unproven(String),
}

/// One cell of the grid.
#[derive(Clone, Debug)]
pub struct SummaryCell {
    pub lock: String,
    pub nemesis: String,
    pub fencing: String,
    /// `None`: the cell did not run, for `na_reason`.
    pub verdict: Option<Validity>,
    /// Over several repeats, how the verdicts add up (`5/5`, `3/5 (valid 2/5)`).
    pub repeats: Option<String>,
    pub na_reason: Option<String>,
    /// What it was expected to show, and whether it did (`None` for a single run).
    pub expected: Option<(String, Gate)>,
    pub counts: Counts,
    pub story: Option<String>,
    /// Its report, relative to the summary.
    pub report: Option<String>,
}

/// A cell's mark, with its repeats' tally when it has one.
fn shown(c: &SummaryCell) -> String {
    match &c.repeats {
        Some(tally) => format!("{} {tally}", mark(c.verdict)),
        None => mark(c.verdict).to_string(),
    }
}

fn mark(verdict: Option<Validity>) -> &'static str {
    match verdict {
        Some(Validity::Valid) => "✅ valid",
        Some(Validity::Invalid) => "❌ invalid",
        Some(Validity::Unknown) => "❔ unknown",
        None => "➖ n/a",
    }
}

fn gate_mark(gate: &Gate) -> &'static str {
    match gate {
        Gate::Met => "as expected",
        Gate::Broken(_) => "**NOT as expected**",
        Gate::Unproven(_) => "*unproven*",
    }
}

/// Foreign text, cut to its first `STORY_CHARS` characters and escaped as markdown text.
fn shorten(text: &str) -> String {
    if text.chars().count() <= STORY_CHARS {
        return escape(text);
    }
    let cut: String = text.chars().take(STORY_CHARS).collect();
    format!("{}…", escape(&cut))
}

/// The cell's lock, nemesis and fencing (names from a matrix or a flag), escaped.
fn cell_name(c: &SummaryCell) -> String {
    format!(
        "{} × {} (fencing {})",
        escape(&c.lock),
        escape(&c.nemesis),
        escape(&c.fencing)
    )
}

/// The summary's markdown: `title`, the grid, totals, the first violation, then `notes`, which
/// are plain text (escaped here).
pub fn render(title: &str, cells: &[SummaryCell], notes: &[String]) -> String {
    let mut out = format!("## {}\n\n", escape(title));
    let nemeses: Vec<&str> = unique(cells.iter().map(|c| c.nemesis.as_str()));
    let fencings: BTreeSet<&str> = cells.iter().map(|c| c.fencing.as_str()).collect();
    let row_of = |c: &SummaryCell| {
        if fencings.len() > 1 {
            format!("{} (fencing {})", escape(&c.lock), escape(&c.fencing))
        } else {
            escape(&c.lock)
        }
    };
    let rows: Vec<String> = unique(
        cells
            .iter()
            .map(row_of)
            .collect::<Vec<_>>()
            .iter()
            .map(|s| s.as_str()),
    )
    .into_iter()
    .map(str::to_string)
    .collect();
    let only_fencing = match fencings.iter().next() {
        Some(f) if fencings.len() == 1 => format!(" (fencing {})", escape(f)),
        _ => String::new(),
    };
    let columns: Vec<String> = nemeses.iter().map(|n| escape(n)).collect();
    let _ = writeln!(out, "| lock{only_fencing} | {} |", columns.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(nemeses.len()));
    for row in &rows {
        let _ = write!(out, "| {row} |");
        for nemesis in &nemeses {
            let cell = cells
                .iter()
                .find(|c| &row_of(c) == row && c.nemesis == *nemesis);
            let text = match cell {
                None => " ".to_string(),
                Some(c) => match (&c.report, &c.expected) {
                    (Some(link), Some((_, gate))) => {
                        format!("[{}]({link}) · {}", shown(c), gate_mark(gate))
                    }
                    (Some(link), None) => format!("[{}]({link})", shown(c)),
                    (None, _) => shown(c),
                },
            };
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    totals(&mut out, cells);
    first_violation(&mut out, cells);
    for note in notes {
        let _ = writeln!(out, "\n{}", escape(note));
    }
    details(&mut out, cells);
    out
}

/// Items in first-seen order, once each.
fn unique<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

fn totals(out: &mut String, cells: &[SummaryCell]) {
    let mut counts = Counts::default();
    for c in cells {
        counts.add(c.counts);
    }
    let count = |v: Option<Validity>| cells.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        out,
        "\n**{} cell(s)**: {} valid, {} invalid, {} unknown, {} n/a · {}",
        cells.len(),
        count(Some(Validity::Valid)),
        count(Some(Validity::Invalid)),
        count(Some(Validity::Unknown)),
        count(None),
        counts.line()
    );
    let gates: Vec<&Gate> = cells
        .iter()
        .filter_map(|c| c.expected.as_ref().map(|e| &e.1))
        .collect();
    if !gates.is_empty() {
        let broken = gates
            .iter()
            .filter(|g| matches!(g, Gate::Broken(_)))
            .count();
        let unproven = gates
            .iter()
            .filter(|g| matches!(g, Gate::Unproven(_)))
            .count();
        let _ = writeln!(
            out,
            "\n**Expectations**: {} met, {broken} broken, {unproven} unproven",
            gates.len() - broken - unproven
        );
    }
}

/// The first broken expectation (else unproven one, else invalid cell), with its story.
fn first_violation(out: &mut String, cells: &[SummaryCell]) {
    let gate_of = |want: fn(&Gate) -> Option<&String>| {
        cells.iter().find_map(|c| {
            c.expected
                .as_ref()
                .and_then(|(_, g)| want(g))
                .map(|w| (c, w))
        })
    };
    let broken = gate_of(|g| match g {
        Gate::Broken(w) => Some(w),
        _ => None,
    });
    let unproven = gate_of(|g| match g {
        Gate::Unproven(w) => Some(w),
        _ => None,
    });
    let link = |c: &SummaryCell| {
        c.report
            .as_ref()
            .map_or(String::new(), |r| format!(" ([report]({r}))"))
    };
    if let Some((c, why)) = broken.or(unproven) {
        let _ = writeln!(
            out,
            "\n**First expectation not met**: {}: {}{}",
            cell_name(c),
            shorten(why),
            link(c)
        );
    } else if let Some(c) = cells.iter().find(|c| c.verdict == Some(Validity::Invalid)) {
        let story = c.story.as_deref().map_or(String::new(), |s| {
            // Already shortened to its first step, cause and violation: not cut further.
            format!(": {}", escape(s))
        });
        let _ = writeln!(
            out,
            "\n**First violation**: {}{story}{}",
            cell_name(c),
            link(c)
        );
    }
}

/// Every cell's figures, folded away.
fn details(out: &mut String, cells: &[SummaryCell]) {
    let titles: Vec<&str> = FIGURES.iter().map(|f| f.title).collect();
    let _ = writeln!(
        out,
        "\n<details><summary>Every cell</summary>\n\n| cell | verdict | expected | {} | report \
         |\n|---|---|---|{}---|",
        titles.join(" | "),
        "---|".repeat(titles.len())
    );
    for c in cells {
        let verdict = match (&c.na_reason, c.verdict) {
            (Some(reason), None) => format!("n/a: {}", shorten(reason)),
            _ => shown(c),
        };
        let expected = c.expected.as_ref().map_or("-".to_string(), |(e, g)| {
            format!("{} ({})", escape(e), gate_mark(g))
        });
        let report = c
            .report
            .as_ref()
            .map_or("-".to_string(), |r| format!("[report]({r})"));
        let counts: Vec<String> = c.counts.figures().map(|(_, n)| n.to_string()).collect();
        let _ = writeln!(
            out,
            "| {} | {verdict} | {expected} | {} | {report} |",
            cell_name(c),
            counts.join(" | ")
        );
    }
    out.push_str("\n</details>\n");
}

/// Where a finished run's summary goes: its folder always; `$GITHUB_STEP_SUMMARY` too when the
/// run stands alone. A comparison or a shrink runs many and publishes one summary for them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunSummary {
    Published,
    FolderOnly,
}

/// Writes `summary.md` into `dir` and appends it to `$GITHUB_STEP_SUMMARY` when that is set.
pub fn publish(dir: &Path, markdown: &str) -> Result<()> {
    crate::files::safe_write::replace(&dir.join(SUMMARY), markdown)
        .context("cannot write summary.md")?;
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let mut file = crate::files::safe_write::append(Path::new(&path))
            .with_context(|| format!("cannot open $GITHUB_STEP_SUMMARY ({path:?})"))?;
        writeln!(file, "{markdown}").context("cannot append to $GITHUB_STEP_SUMMARY")?;
    }
    Ok(())
}

/// A finished run's `summary.md`: its one cell.
pub fn write_run(
    dir: &Path,
    config: &RunConfig,
    results: &Results,
    summary: RunSummary,
) -> Result<()> {
    let cell = SummaryCell {
        lock: config.lock.label().to_string(),
        nemesis: config.nemesis_name(),
        fencing: config.fencing.name().to_string(),
        verdict: Some(results.valid),
        repeats: None,
        na_reason: None,
        expected: None,
        counts: Counts::of(results),
        story: results.stories.first().map(|s| s.shortened()),
        // A path relative to the run's folder is dead where a summary is read (a comment):
        // linked only where the CI publishes the store (see `links`).
        report: std::path::absolute(&config.store).ok().and_then(|store| {
            let links = super::links::Links::new(None, &store, |k| std::env::var(k).ok());
            links.to(&std::path::absolute(dir).ok()?.join(crate::report::REPORT))
        }),
    };
    let title = format!("lockpick run {} (seed {})", config.name(), config.seed);
    let mut notes: Vec<String> = results
        .unknown_reasons
        .iter()
        .map(|r| format!("Not proven: {r}"))
        .collect();
    if let Some(note) = results.lease_claims.as_ref().and_then(|c| c.note()) {
        notes.push(format!("Told: {note}"));
    }
    let markdown = render(&title, &[cell], &notes);
    if summary == RunSummary::Published {
        publish(dir, &markdown)
    } else {
        crate::files::safe_write::replace(&dir.join(SUMMARY), markdown)
            .context("cannot write summary.md")
    }
}

#[cfg(test)]
mod tests;
