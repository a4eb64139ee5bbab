//! `junit.xml` of a comparison, valid against the JUnit 10 schema (`junit-10.xsd`, the one
//! Jenkins, GitLab and most readers follow): a suite per cell, with the cell's properties, and
//! one case named by the cell and its expectation. A broken expectation is a `<failure>`, a
//! cell that could not prove it an `<error>`, each with a `type` and its evidence (the story)
//! as the element's text, which is what GitLab shows; a cell that did not run (n/a, or not
//! reached when the comparison was interrupted) is skipped with the reason, so the report
//! always lists every cell.

use std::path::Path;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use quick_xml::events::{BytesStart, Event};

use crate::compare::judge::cell::{Cell, Judgement, Outcome};
use crate::compare::outputs::{relative, verdict_word};
use crate::report;

/// The `type` of a failed case: the cell did not show what it was expected to show.
pub const BROKEN_TYPE: &str = "expectation broken";
/// The `type` of an errored case: the run could not give the proof the expectation needs.
pub const NOT_PROVEN_TYPE: &str = "not proven";

pub fn render(cells: &[Cell], seed: u64, dir: &Path) -> anyhow::Result<String> {
    let mut report = Report::new("lockpick compare");
    for c in cells {
        report.add_test_suite(suite(c, seed, dir));
    }
    to_schema(&report.to_string()?)
}

/// One cell's suite: its case, and the cell's properties on the suite.
fn suite(c: &Cell, seed: u64, dir: &Path) -> TestSuite {
    let n = &c.name;
    let mut suite = TestSuite::new(format!(
        "lockpick {} × {} fencing {}",
        n.lock, n.nemesis, n.fencing
    ));
    let report_path = c
        .figures()
        .map(|f| relative(dir, &f.dir.join(report::REPORT)));
    let status = status(c, report_path.as_deref());
    let mut case = TestCase::new(format!("{}: expected {}", c.name, c.expected), status);
    case.set_classname(format!(
        "lockpick.{}.{}.fencing-{}",
        n.lock, n.nemesis, n.fencing
    ));
    if let Some(f) = c.figures() {
        case.set_time(f.took);
        suite.set_time(f.took);
    }
    // Properties belong to the suite: the schema has none inside a test case.
    suite.add_properties(properties(c, seed, report_path));
    suite.add_test_case(case);
    suite
}

/// The case's status, from the cell's judgement: its own step because only a broken or
/// unproven cell carries a body, the evidence a CI page shows.
fn status(c: &Cell, report_path: Option<&str>) -> TestCaseStatus {
    let body = |why: &str| {
        let mut text = format!("{}: {why}\n", c.name);
        if let Some(expected_because) = &c.why_expected {
            text.push_str(&format!(
                "expected {} because {expected_because}\n",
                c.expected
            ));
        }
        if let Some(path) = report_path {
            text.push_str(&format!("report: {path}\n"));
        }
        text
    };
    match (&c.judgement, &c.outcome) {
        (_, Outcome::NotApplicable { reason }) => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("n/a: {reason}"));
            s
        }
        (_, Outcome::NotRun) => {
            let mut s = TestCaseStatus::skipped();
            s.set_message("not run: the comparison was interrupted before this cell ended");
            s
        }
        (Judgement::Broken(why), _) => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_type(BROKEN_TYPE);
            s.set_message(why.clone());
            s.set_description(body(why));
            s
        }
        (Judgement::Unproven(why), _) => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_type(NOT_PROVEN_TYPE);
            s.set_message(why.clone());
            s.set_description(body(why));
            s
        }
        _ => TestCaseStatus::success(),
    }
}

/// The cell's properties, in the order a reader scans them: its own step because they are
/// the suite's, what the cell is and what it measured, whatever its case says.
fn properties(c: &Cell, seed: u64, report_path: Option<String>) -> Vec<Property> {
    let n = &c.name;
    let mut properties = vec![
        Property::new("lock", &n.lock),
        Property::new("nemesis", &n.nemesis),
        Property::new("fencing", &n.fencing),
        Property::new("seed", seed.to_string()),
        Property::new("verdict", verdict_word(c)),
        Property::new("expected", &c.expected),
        Property::new("state", c.state().words()),
    ];
    if let Some(why) = &c.why_expected {
        properties.push(Property::new("why expected", why));
    }
    if let Some(f) = c.figures() {
        properties.push(Property::new("servers", &f.servers));
        if let Some(told) = &f.told {
            properties.push(Property::new("told", told));
        }
        let counts = f.counts.figures();
        properties.extend(counts.map(|(f, n)| Property::new(f.title, n.to_string())));
    }
    if let Some(path) = report_path {
        properties.push(Property::new("report", path));
    }
    properties
}

/// The report as the schema has it: quick-junit writes a `skipped` count on `<testsuites>`,
/// which junit-10.xsd does not allow there (it does on each `<testsuite>`), so it is dropped.
pub fn to_schema(xml: &str) -> anyhow::Result<String> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut writer = quick_xml::Writer::new(Vec::new());
    loop {
        match reader.read_event()? {
            Event::Eof => break,
            Event::Start(e) if e.name().as_ref() == b"testsuites" => {
                let mut kept = BytesStart::new("testsuites");
                for a in e.attributes() {
                    let a = a?;
                    if a.key.as_ref() != b"skipped" {
                        kept.push_attribute(a);
                    }
                }
                writer.write_event(Event::Start(kept))?;
            }
            event => writer.write_event(event)?,
        }
    }
    Ok(String::from_utf8(writer.into_inner())?)
}
