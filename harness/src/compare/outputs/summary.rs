//! `summary.md` of a comparison: what a reviewer reads in a pull-request comment. The gate's
//! outcome first, then the cells that broke their expectation and those that could not prove
//! it, each with its evidence (its story shortened: first step, cause, violation) and the
//! matrix's `why`; then the grid, marked by where each cell stands (a known-unsafe cell that
//! showed its violation held, so it is not marked like the one that broke the gate); then every
//! cell folded away. Links go where [`Links`] says, never to a path relative to the store.
//!
//! It stays under [`LIMIT`] characters at any size (GitHub refuses comments over 65,536): each
//! part is added only while it fits, and what does not fit is counted instead.

use std::fmt::Write as _;
use std::path::Path;

use lockpick_checkers::Validity;

use crate::compare::judge::cell::Cell;
use crate::compare::judge::state::{by_state, State, Tally};
use crate::compare::shrink_cells::{confirmed_words, CellShrink};
use crate::report;
use crate::report::counts::FIGURES;
use crate::report::links::Links;
use crate::report::summary_md::Counts;
use crate::text::markdown::{code, escape};
use crate::text::shell;

/// The most characters a summary has.
pub const LIMIT: usize = 60_000;
/// Kept free for the closing lines that say what was left out.
const RESERVE: usize = 1_000;

pub struct Summary<'a> {
    pub cells: &'a [Cell],
    pub seed: u64,
    pub notes: &'a [String],
    pub interrupted: bool,
    /// The comparison's folder.
    pub dir: &'a Path,
    pub links: &'a Links,
    /// What `--shrink` made of the broken cells (empty without it).
    pub shrinks: &'a [CellShrink],
}

fn mark(c: &Cell) -> String {
    // With repeats, the tally too ("invalid 3/3").
    let word = c.verdict_words().unwrap_or_else(|| "n/a".to_string());
    match c.state() {
        State::Held => format!("✅ {word}"),
        State::Broken => format!("❌ **{word}**"),
        State::NotProven => format!("❔ {word}"),
        State::NotApplicable => "➖ n/a".to_string(),
        State::NotRun => "⏸ not run".to_string(),
    }
}

impl Summary<'_> {
    fn report_link(&self, c: &Cell) -> Option<String> {
        self.links.to(&c.figures()?.dir.join(report::REPORT))
    }

    /// The summary, each part added while it fits under [`LIMIT`].
    pub fn render(&self) -> String {
        let mut out = self.headline();
        let mut left_out: Vec<String> = Vec::new();
        self.off_expectation(&mut out, &mut left_out);
        self.fitted_grid(&mut out, &mut left_out);
        self.details(&mut out, &mut left_out);
        self.where_reports_are(&mut out);
        if !left_out.is_empty() {
            let _ = writeln!(
                out,
                "\nNot shown, to fit a comment: {}. Every cell is in `{}` and `{}` beside this \
                 summary.",
                left_out.join(", "),
                crate::compare::outputs::TABLE,
                crate::compare::outputs::JSON,
            );
        }
        out
    }

    /// The gate, the counts and the notes: their own step because they are always shown,
    /// whatever the size.
    fn headline(&self) -> String {
        let tally = Tally::of(self.cells);
        let mut out = format!(
            "## lockpick compare: {} (seed {})\n\n",
            tally.gate(self.interrupted),
            self.seed
        );
        let mut counts = Counts::default();
        for f in self.cells.iter().filter_map(|c| c.figures()) {
            counts.add(f.counts);
        }
        let verdicts = |v: Validity| {
            self.cells
                .iter()
                .filter(|c| c.figures().is_some_and(|f| f.verdict == v))
                .count()
        };
        let _ = writeln!(
            out,
            "**{} cells**: {}. Verdicts: {} valid, {} invalid, {} unknown · {}",
            self.cells.len(),
            tally.line(),
            verdicts(Validity::Valid),
            verdicts(Validity::Invalid),
            verdicts(Validity::Unknown),
            counts.line()
        );
        for note in self.notes {
            let _ = writeln!(out, "\n{}", escape(note));
        }
        out
    }

    /// The broken cells, then the unproven ones, each with its evidence: their own step
    /// because they come first and take the room before the grid does.
    fn off_expectation(&self, out: &mut String, left_out: &mut Vec<String>) {
        for (state, heading) in [
            (State::Broken, "❌ Broken: off their expectation"),
            (State::NotProven, "❔ Not proven"),
        ] {
            let cells: Vec<&Cell> = by_state(self.cells)
                .into_iter()
                .filter(|c| c.state() == state)
                .collect();
            if cells.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n### {heading} ({})\n", cells.len());
            let mut shown = 0;
            for c in &cells {
                let item = self.item(c);
                if out.len() + item.len() > LIMIT - RESERVE {
                    break;
                }
                out.push_str(&item);
                shown += 1;
            }
            if shown < cells.len() {
                left_out.push(format!(
                    "{} more {} cells",
                    cells.len() - shown,
                    state.words()
                ));
            }
        }
    }

    /// The grid, linked if that fits, else unlinked, else left out: its own step because it
    /// is the one part that has a smaller form.
    fn fitted_grid(&self, out: &mut String, left_out: &mut Vec<String>) {
        let grid = self.grid(true);
        let grid = if out.len() + grid.len() <= LIMIT - RESERVE {
            grid
        } else {
            self.grid(false)
        };
        if out.len() + grid.len() <= LIMIT - RESERVE {
            out.push_str(&grid);
        } else {
            left_out.push("the grid".to_string());
        }
    }

    /// One broken or unproven cell, as a list item.
    fn item(&self, c: &Cell) -> String {
        let evidence = c.evidence_short.as_deref().unwrap_or("");
        let mut item = format!(
            "- **{}**: {}",
            escape(&c.name.to_string()),
            escape(evidence)
        );
        if let Some(link) = self.report_link(c) {
            let _ = write!(item, " ([report]({link}))");
        }
        item.push('\n');
        if let Some(why) = &c.why_expected {
            let _ = writeln!(
                item,
                "  - expected {} because: {}",
                escape(&c.expected),
                escape(why)
            );
        }
        if c.state() == State::Broken {
            self.reproduction(c, &mut item);
        }
        item
    }

    /// A path as the commands name it: within the comparison's folder for a run it kept (a
    /// merge's, `runs/…`: the published artifact holds them there), else within the store.
    fn place(&self, path: &Path) -> String {
        match path.strip_prefix(self.dir) {
            Ok(within) => within.display().to_string(),
            Err(_) => self.links.path_in_store(path),
        }
    }

    /// A path of the store as the commands name it (see [`Summary::place`]), linked where the
    /// store is published.
    fn file(&self, path: &Path) -> (String, String) {
        let within = self.place(path);
        let name = path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().to_string());
        let link =
            (self.links.to(path)).map_or(String::new(), |l| format!(" ([{}]({l}))", escape(&name)));
        (within, link)
    }

    /// How to reproduce a broken cell, and shrink it (or what `--shrink` made of it). Paths are
    /// within the store, as the other links are.
    fn reproduction(&self, c: &Cell, item: &mut String) {
        let Some(f) = c.figures() else {
            return;
        };
        if f.command.len() >= 2 {
            let (schedule, link) = self.file(&f.dir.join(crate::store::SCHEDULE));
            let command = crate::shrink::reproduce_command(&f.command, &schedule);
            let _ = writeln!(
                item,
                "  - reproduce with {}{link}",
                code(&shell::command(&command))
            );
        }
        let shrink = self.shrinks.iter().find(|s| s.name == c.name);
        if f.verdict == Validity::Invalid && shrink.is_none() {
            let words = [
                "lockpick".to_string(),
                "shrink".to_string(),
                self.place(&f.dir),
            ];
            let _ = writeln!(item, "  - shrink with {}", code(&shell::command(&words)));
        }
        match shrink.map(|s| &s.outcome) {
            Some(Ok(shrunk)) => {
                let (schedule, link) = self.file(&shrunk.schedule);
                let absolute = shrunk.schedule.display().to_string();
                let command: Vec<String> = (shrunk.command.iter())
                    .map(|w| {
                        if *w == absolute {
                            schedule.clone()
                        } else {
                            w.clone()
                        }
                    })
                    .collect();
                let _ = writeln!(
                    item,
                    "  - shrunk from {} to {}: {}in {} runs, {:.0} s{}; replay with {}{link}",
                    shrunk.from,
                    shrunk.to,
                    confirmed_words(shrunk),
                    shrunk.runs,
                    shrunk.seconds,
                    shrunk.stopped.as_ref().map_or(String::new(), |why| format!(
                        " (stopped early: {})",
                        escape(why)
                    )),
                    code(&shell::command(&command))
                );
            }
            Some(Err(why)) => {
                let _ = writeln!(item, "  - not shrunk: {}", escape(why));
            }
            None => {}
        }
    }

    /// The lock × nemesis grid, each cell marked by its state; broken and unproven cells link
    /// their reports, if `linked`.
    fn grid(&self, linked: bool) -> String {
        let mut nemeses: Vec<&str> = Vec::new();
        let mut rows: Vec<(&str, &str)> = Vec::new();
        for c in self.cells {
            if !nemeses.contains(&c.name.nemesis.as_str()) {
                nemeses.push(&c.name.nemesis);
            }
            let row = (c.name.lock.as_str(), c.name.fencing.as_str());
            if !rows.contains(&row) {
                rows.push(row);
            }
        }
        let mut out = String::from(
            "\n### The grid\n\n✅ held (as expected, whatever the verdict: a known-unsafe cell \
             that showed its violation held) · ❌ broken · ❔ not proven · ➖ n/a\n\n",
        );
        let columns: Vec<String> = nemeses.iter().map(|n| escape(n)).collect();
        let _ = writeln!(out, "| lock (fencing) | {} |", columns.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|".repeat(nemeses.len()));
        for (lock, fencing) in rows {
            let _ = write!(out, "| {} ({}) |", escape(lock), escape(fencing));
            for nemesis in &nemeses {
                let cell = self.cells.iter().find(|c| {
                    c.name.lock == lock && c.name.fencing == fencing && c.name.nemesis == *nemesis
                });
                let text = match cell {
                    None => String::new(),
                    // Held cells are not linked: their reports are a click away in
                    // compare.html, and a link costs more of the comment than the cell.
                    Some(c) => match self
                        .report_link(c)
                        .filter(|_| linked && c.state() < State::Held)
                    {
                        Some(link) => format!("[{}]({link})", mark(c)),
                        None => mark(c),
                    },
                };
                let _ = write!(out, " {text} |");
            }
            out.push('\n');
        }
        out
    }

    /// Every cell, broken first, folded away; rows only while they fit.
    fn details(&self, out: &mut String, left_out: &mut Vec<String>) {
        let closing = "\n</details>\n";
        let titles: Vec<&str> = FIGURES.iter().map(|f| f.title).collect();
        let _ = writeln!(
            out,
            "\n<details><summary>Every cell</summary>\n\n| cell | state | verdict | expected | \
             why expected | {} |\n|---|---|---|---|---|{}",
            titles.join(" | "),
            "---|".repeat(titles.len())
        );
        let cells = by_state(self.cells);
        let mut shown = 0;
        for c in &cells {
            let k = c.figures().map_or(Counts::default(), |f| f.counts);
            let verdict = match (&c.outcome, c.figures()) {
                (crate::compare::judge::cell::Outcome::NotApplicable { reason }, _) => {
                    format!("n/a: {reason}")
                }
                (_, Some(_)) => c.verdict_words().unwrap_or_default(),
                _ => "-".to_string(),
            };
            // Unlinked: the grid above links each report, and a row stays short.
            let name = c.name.to_string();
            let counts: Vec<String> = k.figures().map(|(_, n)| n.to_string()).collect();
            let row = format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                escape(&name),
                c.state().words(),
                escape(&verdict),
                escape(&c.expected),
                escape(c.why_expected.as_deref().unwrap_or("-")),
                counts.join(" | ")
            );
            if out.len() + row.len() + closing.len() > LIMIT - RESERVE {
                break;
            }
            out.push_str(&row);
            shown += 1;
        }
        if shown < cells.len() {
            left_out.push(format!(
                "{} rows of the table of every cell",
                cells.len() - shown
            ));
        }
        out.push_str(closing);
    }

    /// Where the reports are: linked, or their folder in the artifacts.
    fn where_reports_are(&self, out: &mut String) {
        let page = self.dir.join(crate::compare::outputs::GRID);
        match self.links.to(&page) {
            Some(link) => {
                let _ = writeln!(out, "\nThe grid with every report: [compare.html]({link})");
            }
            None => {
                let _ = write!(
                    out,
                    "\nThe grid with every report: {} in the store",
                    code(&self.links.path_in_store(&page))
                );
                match &self.links.elsewhere {
                    Some(run) => {
                        let _ = writeln!(out, ", among the artifacts of {run}");
                    }
                    None => out.push_str(" (give `--link-base` to link the reports)\n"),
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
