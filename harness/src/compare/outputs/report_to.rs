//! `--report-to DIR`: a fixed place where a CI job finds `summary.md`, `junit.xml` and the other
//! outputs of the comparison, whatever happened. After a comparison they are copies of its own;
//! when it fails before any cell runs (a typo in the matrix, a machine that cannot run it),
//! `summary.md` and `junit.xml` say what went wrong, so the job posts that and its test report
//! shows one error, instead of a later step failing with "no such file". The exit code stays what it was (254 for bad input, 255 when lockpick failed).

use std::path::Path;

use anyhow::{Context, Result};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::bad_input::BadInput;
use crate::compare::shards::runs::RUNS;
use crate::report;
use crate::report::summary_md::{self, SUMMARY};
use crate::store::{COMPARE_GRID, COMPARE_JSON, COMPARE_TABLE};

/// Copies the comparison's outputs from its folder `from` into `to`: real files (never a link,
/// and never written through one), so that a CI artifact upload (which copies the store's
/// `latest` links as folders) takes them as they are, and `lockpick merge` can read a shard's.
pub fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("--report-to {}", to.display()))?;
    for file in [
        SUMMARY,
        report::JUNIT,
        COMPARE_JSON,
        COMPARE_GRID,
        COMPARE_TABLE,
    ] {
        let text = std::fs::read(from.join(file))
            .with_context(|| format!("--report-to: cannot read {file}"))?;
        crate::files::safe_write::replace(&to.join(file), text)
            .with_context(|| format!("--report-to {}: cannot write {file}", to.display()))?;
    }
    copy_kept_runs(from, to)
}

/// The runs a shard or a merge kept (`shard_runs`), folder by folder: what a merge judges a
/// shard by, and what the merged summary's `lockpick shrink runs/…` lines name.
fn copy_kept_runs(from: &Path, to: &Path) -> Result<()> {
    let runs = from.join(RUNS);
    if !runs.is_dir() {
        return Ok(());
    }
    let entries = std::fs::read_dir(&runs).with_context(|| format!("cannot read {runs:?}"))?;
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let into = to.join(RUNS).join(entry.file_name());
        std::fs::create_dir_all(&into)
            .with_context(|| format!("--report-to {}", into.display()))?;
        for file in std::fs::read_dir(entry.path())? {
            let file = file?;
            if !file.file_type()?.is_file() {
                continue;
            }
            let text = std::fs::read(file.path())?;
            crate::files::safe_write::replace(&into.join(file.file_name()), text)
                .with_context(|| format!("--report-to {}", into.display()))?;
        }
    }
    Ok(())
}

/// Writes into `to` what stopped the comparison, and publishes the summary as a comparison's.
pub fn failed(to: &Path, matrix: Option<&Path>, error: &anyhow::Error) -> Result<()> {
    let bad_input = error.downcast_ref::<BadInput>().is_some();
    let (kind, code) = if bad_input {
        ("bad input", 254)
    } else {
        ("lockpick failed", 255)
    };
    let message = format!("{error:#}");
    std::fs::create_dir_all(to).with_context(|| format!("--report-to {}", to.display()))?;
    let what = matrix.map_or("the flags".to_string(), |m| m.display().to_string());
    // The message quotes the input: one line in its fence, whatever that holds.
    let summary = format!(
        "## lockpick compare: gate not run: {kind} (exit {code})\n\n\
         The comparison stopped before any cell ran ({}):\n\n{}\n\n\
         Nothing was judged. {}\n",
        crate::text::markdown::escape(&what),
        crate::text::markdown::fenced(&message),
        if bad_input {
            "Fix the matrix or the flags: `lockpick compare --matrix <file> --check` checks \
             them without running anything."
        } else {
            "The machine or lockpick itself failed; the job's log has the rest."
        }
    );
    summary_md::publish(to, &summary)?;
    let mut report = Report::new("lockpick compare");
    let mut suite = TestSuite::new("lockpick compare");
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_type(kind);
    status.set_message(message.clone());
    status.set_description(format!("{message}\nexit {code}: nothing ran\n"));
    suite.add_test_case(TestCase::new(format!("the comparison of {what}"), status));
    report.add_test_suite(suite);
    let xml = crate::compare::outputs::junit::to_schema(&report.to_string()?)?;
    crate::files::safe_write::replace(&to.join(report::JUNIT), xml)
        .with_context(|| format!("--report-to {}: cannot write junit.xml", to.display()))?;
    Ok(())
}
