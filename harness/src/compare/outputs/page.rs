//! `compare.html`: the gate's outcome in the title, the cells that broke their expectation and
//! those that could not prove it listed first with their evidence and the matrix's `why`, then
//! the grid (coloured by where each cell stands, not by its verdict: a known-unsafe cell that
//! showed its violation held), then every cell in a table, broken first.
//!
//! The grid fits a 1400 px screen at any size: it has a column per nemesis, or, when there are
//! more nemeses than rows, a column per lock (transposed), and fixed columns whose text wraps.

use std::path::Path;

use lockpick_checkers::Validity;
use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::compare::judge::cell::Cell;
use crate::compare::judge::state::{by_state, State, Tally};
use crate::compare::outputs::{header, report_link, row, verdict_word};
use crate::report;

/// `compare.html` for `cells`, with links relative to the comparison's folder `dir`.
pub fn render(
    cells: &[Cell],
    seed: u64,
    dir: &Path,
    notes: &[String],
    interrupted: bool,
) -> String {
    let tally = Tally::of(cells);
    let title = format!(
        "lockpick compare: {} (seed {seed})",
        tally.gate(interrupted)
    );
    let grid = Grid::of(cells);
    let listed = |state: State| -> Vec<&Cell> {
        by_state(cells)
            .into_iter()
            .filter(|c| c.state() == state)
            .collect()
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) }
                style { (PreEscaped(report::STYLE)) (PreEscaped(GRID_STYLE)) }
            }
            body {
                h1 #gate data-gate=(gate_class(&tally, interrupted)) { (title) }
                p #tally { (cells.len()) " cells: " (tally.line()) }
                @for note in notes { p.note { (note) } }
                (listing("broken", "Broken: off their expectation", &listed(State::Broken), dir))
                (listing("not-proven", "Not proven", &listed(State::NotProven), dir))
                h2 { "The grid" }
                p.legend {
                    span.key.broken { "broken" } span.key.not-proven { "not proven" }
                    span.key.held { "held (as expected, whatever the verdict)" }
                    span.key.na { "n/a or not run" }
                }
                (grid.render(cells, dir))
                h2 { "Every cell" }
                div.scroll {
                    table #cells {
                        tr { th { "state" } @for h in header() { th { (h) } } th { "why expected" } }
                        @for c in by_state(cells) {
                            tr class=(c.state().class()) {
                                td.state { (c.state().words()) }
                                @for (i, text) in row(c).iter().enumerate() {
                                    @if i == 3 {
                                        td class=(verdict_class(c)) {
                                            @match report_link(dir, c) {
                                                Some(link) => a href=(link) { (text) },
                                                None => (text),
                                            }
                                        }
                                    } @else {
                                        td { (text) }
                                    }
                                }
                                td { (c.why_expected.as_deref().unwrap_or("-")) }
                            }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}

fn gate_class(tally: &Tally, interrupted: bool) -> &'static str {
    if tally.broken > 0 {
        "failed"
    } else if interrupted || tally.not_proven > 0 {
        "not-proven"
    } else {
        "passed"
    }
}

/// The cells in one state, each with its evidence and why it was expected, or nothing.
fn listing(id: &str, heading: &str, cells: &[&Cell], dir: &Path) -> Markup {
    html! {
        @if !cells.is_empty() {
            section id=(id) {
                h2 { (heading) " (" (cells.len()) ")" }
                ul {
                    @for c in cells {
                        li class=(c.state().class()) {
                            @match report_link(dir, c) {
                                Some(link) => a.cell href=(link) { (c.name.to_string()) },
                                None => span.cell { (c.name.to_string()) },
                            }
                            ": " span.evidence { (evidence(c)) }
                            @if let Some(why) = &c.why_expected {
                                div.why { "expected " (c.expected) " because " (why) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn evidence(c: &Cell) -> &str {
    match &c.judgement {
        crate::compare::judge::cell::Judgement::Broken(w)
        | crate::compare::judge::cell::Judgement::Unproven(w) => w,
        _ => "",
    }
}

/// Which way the grid is drawn: its row and column labels, and for each a test of a cell.
struct Grid {
    /// `(lock, fencing)` pairs.
    locks: Vec<(String, String)>,
    nemeses: Vec<String>,
    /// A row per nemesis and a column per lock, when nemeses outnumber locks.
    transposed: bool,
}

impl Grid {
    fn of(cells: &[Cell]) -> Grid {
        let mut locks: Vec<(String, String)> = Vec::new();
        let mut nemeses: Vec<String> = Vec::new();
        for c in cells {
            let lock = (c.name.lock.clone(), c.name.fencing.clone());
            if !locks.contains(&lock) {
                locks.push(lock);
            }
            if !nemeses.contains(&c.name.nemesis) {
                nemeses.push(c.name.nemesis.clone());
            }
        }
        let transposed = nemeses.len() > locks.len();
        Grid {
            locks,
            nemeses,
            transposed,
        }
    }

    fn render(&self, cells: &[Cell], dir: &Path) -> Markup {
        let lock_label = |(lock, fencing): &(String, String)| format!("{lock} (fencing {fencing})");
        let (rows, columns): (Vec<String>, Vec<String>) = if self.transposed {
            (
                self.nemeses.clone(),
                self.locks.iter().map(lock_label).collect(),
            )
        } else {
            (
                self.locks.iter().map(lock_label).collect(),
                self.nemeses.clone(),
            )
        };
        let find = |r: usize, col: usize| {
            let (lock, nemesis) = if self.transposed {
                (&self.locks[col], &self.nemeses[r])
            } else {
                (&self.locks[r], &self.nemeses[col])
            };
            cells.iter().find(|c| {
                c.name.lock == lock.0 && c.name.fencing == lock.1 && c.name.nemesis == *nemesis
            })
        };
        let corner = if self.transposed {
            "nemesis \\ lock"
        } else {
            "lock \\ nemesis"
        };
        html! {
            table.grid data-transposed=(self.transposed) {
                colgroup { col.label; @for _ in &columns { col; } }
                tr { th { (corner) } @for column in &columns { th { (column) } } }
                @for (r, label) in rows.iter().enumerate() {
                    tr {
                        th { (label) }
                        @for col in 0..columns.len() {
                            @match find(r, col) {
                                Some(c) => (grid_cell(c, dir)),
                                None => td {},
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The grid's own few rules, on top of the shared stylesheet.
const GRID_STYLE: &str = "
table.grid { table-layout: fixed; width: 100%; max-width: 100%; }
table.grid col.label { width: 9em; }
table.grid td, table.grid th { vertical-align: top; overflow-wrap: anywhere; font-size: .9em; }
table.grid td { font-weight: normal; }
table.grid td.held { background: #dcfce7; }
table.grid td.broken { background: #fecaca; outline: 3px solid #b91c1c; outline-offset: -3px; }
table.grid td.not-proven { background: #fef9c3; }
table.grid td.na, table.grid td.not-run { background: #f4f4f5; color: #555; }
table.grid .state { font-weight: bold; }
table.grid td.broken .state { color: #b91c1c; }
table.grid .counts, table.grid .expected, table.grid .why { font-size: .85em; color: #333; }
table.grid .why { font-style: italic; }
.key { padding: .1em .5em; margin-right: .6em; }
.key.held { background: #dcfce7; } .key.broken { background: #fecaca; }
.key.not-proven { background: #fef9c3; } .key.na { background: #f4f4f5; }
section#broken li { color: #991b1b; margin: .3em 0; }
section#not-proven li { color: #854d0e; margin: .3em 0; }
li .why { color: #374151; font-style: italic; }
h1#gate[data-gate=failed] { color: #b91c1c; }
h1#gate[data-gate=passed] { color: #15803d; }
h1#gate[data-gate=not-proven] { color: #a16207; }
tr.broken td.state { color: #b91c1c; font-weight: bold; }
";

fn verdict_class(c: &Cell) -> &'static str {
    match c.figures().map(|f| f.verdict) {
        Some(Validity::Valid) => "valid",
        Some(Validity::Invalid) => "invalid",
        Some(Validity::Unknown) => "unknown",
        None => "na",
    }
}

fn grid_cell(c: &Cell, dir: &Path) -> Markup {
    let state = c.state();
    html! {
        td class=(format!("{} {}", state.class(), verdict_class(c))) title=(c.name.to_string())
            data-state=(state.class()) {
            div.state { (state.words()) }
            @match (c.figures(), report_link(dir, c)) {
                (Some(f), Some(link)) => {
                    a href=(link) { span class=(format!("verdict {}", verdict_class(c))) { (f.verdict) } }
                    div.counts { (f.counts.line()) }
                }
                _ => { div.verdict-word { (verdict_word(c)) } }
            }
            @if !matches!(state, State::NotApplicable | State::NotRun) {
                div.expected { "expected " (c.expected) }
            }
            @if let Some(why) = &c.why_expected {
                div.why { (why) }
            }
        }
    }
}
