//! Writing a finished comparison into a new folder `<store>/compare/<time>/`: every output of
//! `outputs` from the judged cells, the same for `compare` and for `merge` (whose cells come
//! from the shards' folders), then the store's index and the terminal's table.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{junit, page, summary};
use crate::compare::judge::cell::{Cell, Judgement};
use crate::compare::judge::state::Tally;
use crate::compare::outputs::{self, GRID, JSON, TABLE};
use crate::compare::shards::record::ShardPart;
use crate::report;
use crate::report::links::Links;
use crate::report::summary_md;
use crate::text::markdown;
use crate::text::shell;
use crate::text::terminal::field;

/// What a comparison's outputs say besides its cells.
pub struct Comparison<'a> {
    pub store: &'a Path,
    pub seed: u64,
    /// The seed of each repeat.
    pub seeds: &'a [u64],
    /// The matrix file that gave the expectations, as it was named.
    pub from_matrix: Option<&'a Path>,
    pub interrupted: bool,
    /// Cells that ran to their end, of those that could run.
    pub ran: usize,
    pub runnable: usize,
    pub exit_code: u8,
    /// A shard's record for `lockpick merge`; `None` for a whole comparison.
    pub shard: Option<&'a ShardPart>,
    /// How many cells ran at once and why (`None` for `merge`, which runs none).
    pub parallelism: Option<&'a crate::compare::pace::Pace>,
}

/// 2 when interrupted; else 1 if any expectation broke, 2 if any is unproven, 0 otherwise.
pub fn exit_code(cells: &[Cell], interrupted: bool) -> u8 {
    let any = |f: fn(&Judgement) -> bool| cells.iter().any(|c| f(&c.judgement));
    if interrupted {
        2
    } else if any(|j| matches!(j, Judgement::Broken(_))) {
        1
    } else if any(|j| matches!(j, Judgement::Unproven(_))) {
        2
    } else {
        0
    }
}

/// The lines every output adds below its cells: plain text (each output escapes them).
fn notes(c: &Comparison, cells: &[Cell]) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(matrix) = c.from_matrix {
        notes.push(format!("Expectations from {}.", matrix.display()));
    }
    if c.seeds.len() > 1 {
        let seeds: Vec<String> = c.seeds.iter().map(|s| s.to_string()).collect();
        notes.push(format!(
            "{} repeats of every cell, seeds {}.",
            c.seeds.len(),
            seeds.join(", ")
        ));
    }
    if let Some(part) = c.shard {
        notes.push(format!(
            "Shard {}/{}: {} of the matrix's {} cells (lockpick merge joins the shards).",
            part.k,
            part.n,
            part.results.len(),
            part.plan.len()
        ));
    }
    if c.interrupted {
        notes.push(format!(
            "interrupted: {} of {} cells ran to their end",
            c.ran, c.runnable
        ));
    }
    // Told, not judged: a cell's verdict does not rest on the reported bounds.
    for cell in cells {
        if let Some(told) = cell.figures().and_then(|f| f.told.as_ref()) {
            notes.push(format!("{}: told: {told}.", cell.name));
        }
    }
    notes
}

/// `summary.md` of the comparison written in `dir`, with the shrinks of its broken cells.
pub fn summary(
    c: &Comparison,
    cells: &[Cell],
    links: &Links,
    dir: &Path,
    shrinks: &[crate::compare::shrink_cells::CellShrink],
) -> String {
    summary::Summary {
        cells,
        seed: c.seed,
        notes: &notes(c, cells),
        interrupted: c.interrupted,
        dir,
        links,
        shrinks,
    }
    .render()
}

/// A new folder for a comparison's outputs, `<store>/compare/<time>/`.
pub fn folder(store: &Path) -> Result<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let dir = store.join("compare").join(stamp);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {dir:?}"))?;
    Ok(dir)
}

/// Writes every output of the comparison into `dir` (from [`folder`]). `summary.md` is
/// published (to `$GITHUB_STEP_SUMMARY` too) when `publish_summary`, else only written, for the
/// shrinks to publish it.
pub fn write(
    c: &Comparison,
    cells: &[Cell],
    links: &Links,
    dir: &Path,
    publish_summary: bool,
) -> Result<()> {
    let notes = notes(c, cells);
    let seed = c.seed;
    let gate = Tally::of(cells).gate(c.interrupted);
    let mut table = outputs::table_markdown(cells, seed, &gate);
    for note in &notes {
        table.push_str(&format!("\n{}\n", markdown::escape(note)));
    }
    crate::files::safe_write::replace(&dir.join(TABLE), &table)?;
    let page = page::render(cells, seed, dir, &notes, c.interrupted);
    crate::files::safe_write::replace(&dir.join(GRID), page)?;
    let xml = junit::render(cells, seed, dir).context("cannot render junit.xml")?;
    crate::files::safe_write::replace(
        &dir.join(report::JUNIT),
        crate::text::xml::well_formed(xml),
    )?;
    let stored = outputs::Stored {
        seed,
        matrix: c.from_matrix,
        interrupted: c.interrupted,
        exit_code: c.exit_code,
        cells,
        shard: c.shard,
        parallelism: c.parallelism,
    };
    crate::files::safe_write::replace(
        &dir.join(JSON),
        serde_json::to_string_pretty(&stored)? + "\n",
    )?;
    let summary = summary(c, cells, links, dir, &[]);
    if publish_summary {
        summary_md::publish(dir, &summary)?;
    } else {
        crate::files::safe_write::replace(&dir.join(summary_md::SUMMARY), summary)?;
    }
    report::write_index(c.store)?;
    // The table is markdown-escaped already (one line per cell, no control characters).
    crate::text::stdout::print(&table);
    // Names, reasons and folders (from a matrix, a history, a shard's compare.json) are shown
    // each on its own line; commands are quoted to run exactly their words when pasted.
    for c in cells {
        let name = field(&c.name.to_string());
        match &c.judgement {
            Judgement::Broken(why) => crate::say!("NOT AS EXPECTED: {name}: {}", field(why)),
            Judgement::Unproven(why) => crate::say!("UNPROVEN: {name}: {}", field(why)),
            _ => {}
        }
        let broken = matches!(c.judgement, Judgement::Broken(_));
        if let Some(f) = c.figures().filter(|f| broken && f.command.len() >= 2) {
            let schedule = f.dir.join(crate::store::SCHEDULE).display().to_string();
            let command = crate::shrink::reproduce_command(&f.command, &schedule);
            crate::say!("reproduce {name}: {}", shell::command(&command));
        }
        if let Some(f) = (c.figures()).filter(|f| f.verdict == lockpick_checkers::Validity::Invalid)
        {
            let shrink = [
                "lockpick".to_string(),
                "shrink".to_string(),
                f.dir.display().to_string(),
            ];
            crate::say!(
                "smallest failing schedule of {name}: {}",
                shell::command(&shrink)
            );
        }
    }
    crate::say!("\nwritten to {}", field(&dir.display().to_string()));
    Ok(())
}
