//! `junit.xml`, for CI dashboards: one test suite for the run (its duration, start time and the
//! facts that reproduce it as properties) and one test case per checker; a failure carries the
//! story of the checker's first violation.

use lockpick_checkers::Results;
use quick_junit::{
    NonSuccessKind, Property, Report, SerializeError, TestCase, TestCaseStatus, TestSuite,
};

use super::RunFacts;

/// The run's JUnit XML.
pub fn junit(results: &Results, facts: &RunFacts) -> Result<String, SerializeError> {
    let name = facts.name();
    let mut suite = TestSuite::new(format!("lockpick {name}"));
    suite.set_time(facts.duration);
    suite.add_properties(properties(facts));
    for (case, status) in cases(results) {
        let mut case = TestCase::new(case, status);
        case.set_classname(format!("lockpick.{name}"));
        suite.add_test_case(case);
    }
    let mut report = Report::new("lockpick");
    report.set_time(facts.duration);
    if let Some(started) = facts.started {
        suite.set_timestamp(started);
        report.set_timestamp(started);
    }
    report.add_test_suite(suite);
    report.to_string()
}

/// What it takes to run the same test again, and what it ran against.
fn properties(facts: &RunFacts) -> Vec<Property> {
    let mut properties = vec![Property::new("lock", &facts.lock)];
    if let Some(seed) = facts.seed {
        properties.push(Property::new("seed", seed.to_string()));
    }
    if let Some(fencing) = &facts.fencing {
        properties.push(Property::new("fencing", fencing));
    }
    properties.push(Property::new("nemeses", facts.nemesis_name()));
    if let Some(clients) = facts.clients {
        properties.push(Property::new("clients", clients.to_string()));
    }
    for (server, version) in &facts.server_versions {
        properties.push(Property::new(format!("server version {server}"), version));
    }
    for (what, which) in &facts.servers {
        properties.push(Property::new(what, which));
    }
    properties
}

/// One case per checker that ran, plus one error if the history could not be read.
fn cases(results: &Results) -> Vec<(&'static str, TestCaseStatus)> {
    let story_of = |kinds: &[&str]| {
        results
            .stories
            .iter()
            .find(|s| kinds.contains(&s.kind.as_str()))
            .map(|s| s.one_line())
            .unwrap_or_default()
    };
    let failed = |kind, message: String, story: String| {
        let mut status = TestCaseStatus::non_success(kind);
        status.set_message(message).set_description(story);
        status
    };
    let mut cases = Vec::new();
    if let Some(m) = &results.malformed {
        let message = format!("malformed history: {m}");
        cases.push((
            "history",
            failed(NonSuccessKind::Error, message, String::new()),
        ));
    }
    if let Some(o) = &results.overlapping_holders {
        let status = if o.overlaps.is_empty() {
            TestCaseStatus::success()
        } else {
            let message = format!("{} overlapping holders", o.overlaps.len());
            failed(NonSuccessKind::Failure, message, story_of(&["overlap"]))
        };
        cases.push(("overlapping holders", status));
    }
    if let Some(s) = &results.stale_accesses {
        let status = if s.violations.is_empty() {
            TestCaseStatus::success()
        } else {
            let message = format!(
                "{} stale writes and {} stale reads accepted",
                s.stale_writes, s.stale_reads
            );
            failed(
                NonSuccessKind::Failure,
                message,
                story_of(&["stale-write", "stale-read"]),
            )
        };
        cases.push(("stale writes accepted", status));
    }
    if let Some(l) = &results.liveness {
        let status = if l.jams.is_empty() {
            TestCaseStatus::success()
        } else {
            let message = format!(
                "the lock jammed {} time(s): refused to everyone while certainly free for over {} ms",
                l.jams.len(),
                l.bound_ms
            );
            failed(NonSuccessKind::Failure, message, story_of(&["jam"]))
        };
        cases.push(("lock never jammed", status));
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::DateTime;
    use lockpick_checkers::{Op, OpType, Process, F};
    use serde_json::json;
    use std::time::Duration;

    fn facts() -> RunFacts {
        RunFacts {
            lock: "etcd".to_string(),
            nemeses: vec!["pause-holder".to_string()],
            fencing: Some("on".to_string()),
            seed: Some(51),
            clients: Some(3),
            server_versions: vec![("n1".to_string(), "etcd 3.5.9".to_string())],
            servers: Vec::new(),
            started: DateTime::parse_from_rfc3339("2025-01-02T03:04:05Z").ok(),
            duration: Duration::from_millis(6500),
            parameters: Default::default(),
        }
    }

    /// (name, value) of each property in `xml`, read by an XML parser.
    fn properties_in(xml: &str) -> Vec<(String, String)> {
        let mut reader = quick_xml::Reader::from_str(xml);
        let mut out = Vec::new();
        loop {
            match reader.read_event().expect("junit.xml is well-formed XML") {
                quick_xml::events::Event::Empty(e) | quick_xml::events::Event::Start(e)
                    if e.name().as_ref() == b"property" =>
                {
                    let attr = |n: &str| {
                        let a = e.try_get_attribute(n).unwrap().unwrap();
                        a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                            .unwrap()
                            .to_string()
                    };
                    out.push((attr("name"), attr("value")));
                }
                quick_xml::events::Event::Eof => return out,
                _ => {}
            }
        }
    }

    #[test]
    fn a_clean_run_is_passing_cases_with_the_runs_facts() {
        let xml = junit(&lockpick_checkers::check(&[]), &facts()).unwrap();
        let properties = properties_in(&xml);
        for expected in [
            ("seed", "51"),
            ("lock", "etcd"),
            ("fencing", "on"),
            ("nemeses", "pause-holder"),
            ("server version n1", "etcd 3.5.9"),
        ] {
            let found = properties
                .iter()
                .any(|(n, v)| (n.as_str(), v.as_str()) == expected);
            assert!(found, "{expected:?} missing from {properties:?}");
        }
        let report = quick_junit::Report::deserialize_from_str(&xml).unwrap();
        let suite = &report.test_suites[0];
        assert_eq!(suite.time, Some(Duration::from_millis(6500)));
        assert_eq!(suite.timestamp, facts().started);
        assert_eq!((suite.tests, suite.failures, suite.errors), (3, 0, 0));
    }

    #[test]
    fn a_malformed_history_is_an_error_case_and_facts_without_versions_have_none() {
        let bad = Op::new(
            0,
            Process::Client(0),
            OpType::Ok,
            F::Release,
            json!({"acquisition": "x"}),
        );
        let mut facts = facts();
        facts.server_versions.clear();
        let xml = junit(&lockpick_checkers::check(&[bad]), &facts).unwrap();
        let report = quick_junit::Report::deserialize_from_str(&xml).unwrap();
        assert_eq!(report.test_suites[0].errors, 1);
        assert!(!properties_in(&xml)
            .iter()
            .any(|(n, _)| n.starts_with("server version")));
    }
}
