//! `lockpick compare --check` and `--list`: the matrix checked and its cells listed, nothing run.
//! `--list --json` prints the runnable cells as a CI job matrix (GitHub's `strategy.matrix`
//! takes it through `fromJSON`): each entry carries the flags that run that one cell against
//! the same file (`--locks … --nemeses … --fencing …`), so its expectation still comes from it.

use serde::Serialize;

use crate::compare::plan::Plan;

#[derive(Serialize)]
struct Entry<'a> {
    /// The cell's name, for a job's title.
    name: String,
    lock: &'a str,
    nemesis: &'a str,
    fencing: &'a str,
    expect: String,
    /// The flags that narrow the comparison to this cell, as one shell-quoted string.
    args: String,
}

/// `{"include": [...]}`: n/a cells are left out, as a job for them would have nothing to run.
pub fn json(plan: &Plan) -> String {
    let include: Vec<Entry> = plan
        .cells
        .iter()
        .filter(|c| c.configs.is_ok())
        .map(|c| Entry {
            name: c.name.to_string(),
            lock: &c.name.lock,
            nemesis: &c.name.nemesis,
            fencing: &c.name.fencing,
            expect: c.expected.words(),
            args: shell_words::join([
                "--locks",
                &c.name.lock,
                "--nemeses",
                &c.name.nemesis,
                "--fencing",
                &c.name.fencing,
            ]),
        })
        .collect();
    serde_json::json!({ "include": include }).to_string()
}

/// One line per cell: its name and what it is expected to show (or why it cannot run).
pub fn lines(plan: &Plan) -> Vec<String> {
    plan.cells
        .iter()
        .map(|c| match &c.configs {
            Ok(_) => format!("{}: expected {}", c.name, c.expected.words()),
            Err(reason) => format!("{}: n/a: {reason}", c.name),
        })
        .collect()
}

/// What `--check` says after the cells: that the matrix is sound, and how big.
pub fn checked(plan: &Plan) -> String {
    let runnable = plan.cells.iter().filter(|c| c.configs.is_ok()).count();
    let source = plan
        .from_matrix
        .as_ref()
        .map_or("the flags".to_string(), |p| p.display().to_string());
    let count = plan.cells.len();
    format!(
        "{source}: the matrix is sound: {count} {} ({} n/a), seed {}, {} at a time ({}); \
         nothing was run",
        if count == 1 { "cell" } else { "cells" },
        plan.cells.len() - runnable,
        plan.seed,
        plan.parallel,
        plan.parallelism.reason
    )
}
