//! The reports of a run: `report.html` (one self-contained page, no network: the verdict, a
//! headline in words of what a reader must not miss, the story of the first violation, a
//! holder timeline with fault windows, acquire latency and throughput on the same time axis,
//! every violation grouped by fault window, and how to reproduce the run), `junit.xml` (one
//! test case per checker) and the store's `index.html`.
//!
//! This module loads a run and writes the files; each part of a report has its own file:
//! `history_facts` (what the report reads off the history beside the checkers' model: setup,
//! times, acquire latencies), `facts` (what the run says about itself), `page` (the HTML, with
//! maud, which escapes), `headline` (the sentences under the verdict), `violations` (every
//! violation, numbered once for the page), `timeline` and `svg` (the drawings), `human_units`
//! (durations as people say them), `junit`, `index`, and `links` (where summary.md links to). One stylesheet, [`STYLE`], serves the report, the index
//! and `compare.html`. The page stays under 2 MB at any history length (`size_tests`).

pub mod counts;
mod facts;
mod headline;
mod history_facts;
mod human_units;
mod index;
mod junit;
pub mod links;
mod page;
pub mod summary;
pub mod summary_md;
mod svg;
mod timeline;
mod violations;

use std::path::Path;

use anyhow::{Context, Result};
use lockpick_checkers::model::Model;
use lockpick_checkers::Results;

use crate::bad_input::{open_history, read_run_file_if_any, Links, MAX_RUN_FILE_BYTES};
use crate::files::safe_write;
use crate::store;
pub use facts::RunFacts;
pub use history_facts::HistoryFacts;

pub const REPORT: &str = "report.html";
pub const JUNIT: &str = "junit.xml";
pub const INDEX: &str = "index.html";

/// The stylesheet every page lockpick writes embeds (pages stay single files).
pub const STYLE: &str = include_str!("style.css");

/// A checked run: the checkers' results, the model they judged, what the report reads off
/// the history beside it, and the run's own record of itself. Nothing holds the history's
/// lines.
pub struct Loaded {
    pub results: Results,
    pub model: Model,
    pub history: HistoryFacts,
    /// `config.json` (`Null` when the folder has none, or it is not JSON).
    pub config: serde_json::Value,
    /// `command.txt`, trimmed (empty when the folder has none).
    pub command: String,
}

/// Reads a run folder's history and checks it, streaming: the check builds the model line by
/// line, and a second pass reads the report's few facts, so memory follows the model's size
/// rather than the file's. Every file is the folder's, so hostile input: a link, a FIFO, a
/// device or a file over its bound is refused (bad input) before it is read.
pub fn load(dir: &Path) -> Result<Loaded> {
    let path = dir.join(store::HISTORY);
    let open = || open_history(&path, Links::Refuse).map(std::io::BufReader::new);
    let config = read_run_file_if_any(dir, store::CONFIG, MAX_RUN_FILE_BYTES)?
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(serde_json::Value::Null);
    let command = read_run_file_if_any(dir, store::COMMAND, MAX_RUN_FILE_BYTES)?
        .map(|text| text.trim().to_string())
        .unwrap_or_default();
    let (results, model) = lockpick_checkers::check_reader_with_model(open()?);
    let history = HistoryFacts::read(open()?);
    Ok(Loaded {
        results,
        model,
        history,
        config,
        command,
    })
}

/// Writes `report.html` and `junit.xml` into a run folder.
pub fn write_run_reports(dir: &Path, loaded: &Loaded) -> Result<()> {
    let results = &loaded.results;
    let facts = RunFacts::gather(dir, &loaded.config, &loaded.history);
    let html = page::render_model(&loaded.model, results, &facts, &loaded.command);
    safe_write::replace(&dir.join(REPORT), html).context("cannot write the report")?;
    let xml = junit::junit(results, &facts).context("cannot render junit.xml")?;
    safe_write::replace(&dir.join(JUNIT), crate::text::xml::well_formed(xml))
        .context("cannot write junit.xml")?;
    Ok(())
}

/// Rewrites the store's index page: every run, newest first, with its verdict and a link.
pub fn write_index(store: &Path) -> Result<()> {
    let page = index::render(store, &index::runs(store)?, &index::compares(store));
    // Written aside and renamed: cells of a `compare` finish at the same time.
    safe_write::replace(&store.join(INDEX), page).context("cannot write the store's index")
}

#[cfg(test)]
#[path = "size_tests.rs"]
mod size_tests;

#[cfg(test)]
#[path = "every_checker_tests.rs"]
mod every_checker_tests;
