//! `junit.xml`, for CI dashboards: one test suite for the run (its duration, start time and the
//! facts that reproduce it as properties), a test case for the verdict (a failure when invalid,
//! an error when unknown) and one per checker (`Results::checkers`: overlaps, stale writes,
//! fencing tokens, jams); a failure carries the story of the checker's first violation.

use lockpick_checkers::checks::Finding;
use lockpick_checkers::{Results, Validity};
use quick_junit::{
    NonSuccessKind, Property, Report, SerializeError, TestCase, TestCaseStatus, TestSuite,
};

use super::counts::Counts;
use super::RunFacts;

/// The run's JUnit XML.
pub fn junit(results: &Results, facts: &RunFacts) -> Result<String, SerializeError> {
    let name = facts.name();
    let mut suite = TestSuite::new(format!("lockpick {name}"));
    suite.set_time(facts.duration);
    suite.add_properties(properties(facts));
    let told = results.lease_claims.as_ref().and_then(|c| c.note());
    for (case, status) in cases(results) {
        let verdict = case == "verdict";
        let mut case = TestCase::new(case, status);
        // Told beside the verdict, which it does not change (see `lease_claims`).
        if let Some(note) = told.as_ref().filter(|_| verdict) {
            case.set_system_out(format!("told: {note}"));
        }
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
    for library in &facts.libraries {
        properties.push(Property::new("client library", library));
    }
    for (what, which) in &facts.servers {
        properties.push(Property::new(what, which));
    }
    properties
}

/// The case for the verdict itself, then one per checker that ran. The verdict's case is what a
/// CI view must not show green unless the run proved it: INVALID is a failure, UNKNOWN an error
/// (the run could not prove anything), each with its reasons.
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
    let mut cases = vec![("verdict", verdict_case(results))];
    for checker in results.checkers() {
        let status = match checker.finding() {
            Finding::Held => TestCaseStatus::success(),
            Finding::Broken(line) => failed(
                NonSuccessKind::Failure,
                line,
                story_of(checker.story_kinds()),
            ),
            Finding::NotChecked(why) => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(why);
                status
            }
        };
        cases.push((checker.name(), status));
    }
    cases
}

/// The verdict as a case: passing only when VALID.
fn verdict_case(results: &Results) -> TestCaseStatus {
    match results.valid {
        Validity::Valid => TestCaseStatus::success(),
        Validity::Invalid => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let counts = Counts::of(results);
            let found: Vec<String> = counts
                .figures()
                .filter(|(f, n)| f.violation && *n > 0)
                .map(|(f, n)| format!("{n} {}", f.title))
                .collect();
            status
                .set_type("invalid")
                .set_message(format!("INVALID: {}", found.join(", ")))
                .set_description(
                    results
                        .stories
                        .first()
                        .map(|s| s.one_line())
                        .unwrap_or_default(),
                );
            status
        }
        Validity::Unknown => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status.set_type("unknown").set_message(format!(
                "UNKNOWN: not proven: {}",
                results.unknown_reasons.join("; ")
            ));
            status
        }
    }
}

#[cfg(test)]
mod tests;
