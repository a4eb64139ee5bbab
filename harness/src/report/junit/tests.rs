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
        libraries: vec!["etcd clientv3 concurrency.Mutex".to_string()],
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

/// A two-client history with fencing tokens: `tokens` are the two grants' tokens.
fn history(tokens: [u64; 2]) -> Vec<Op> {
    let setup = json!({"lock": "etcd", "token": "revision", "ttl_ms": 1000, "fencing": "on",
        "nemesis": "none", "clients": 2, "seed": 1, "prefix": "lkp000000",
        "servers": ["10.0.0.10:2379"]});
    let mut ops = vec![Op::new(
        1,
        Process::Named(Process::HARNESS.into()),
        OpType::Info,
        F::Setup,
        setup,
    )];
    for (client, token) in tokens.into_iter().enumerate() {
        let c = client as u64;
        let (at, acquisition) = (100 * (c + 1), json!(format!("{c}.1")));
        let value = json!({"acquisition": acquisition});
        let granted = json!({"acquisition": acquisition, "token": token});
        let access = json!({"seq": c + 1, "process": c, "acquisition": acquisition,
            "token": token, "op": "write", "value": c + 1});
        ops.extend([
            Op::new(
                at,
                Process::Client(c),
                OpType::Invoke,
                F::Acquire,
                value.clone(),
            ),
            Op::new(at + 10, Process::Client(c), OpType::Ok, F::Acquire, granted),
            Op::new(
                at + 20,
                Process::Named(Process::RESOURCE.into()),
                OpType::Ok,
                F::Access,
                access,
            ),
            Op::new(
                at + 30,
                Process::Client(c),
                OpType::Invoke,
                F::Release,
                value.clone(),
            ),
            Op::new(at + 40, Process::Client(c), OpType::Ok, F::Release, value),
        ]);
    }
    let read = json!({"value": 2, "applied": 2});
    ops.push(Op::new(
        400,
        Process::Named(Process::HARNESS.into()),
        OpType::Ok,
        F::FinalRead,
        read,
    ));
    for (index, op) in ops.iter_mut().enumerate() {
        op.index = index as u64;
    }
    ops
}

/// Each case's name and its status word (`passed`, `failure`, `error`, `skipped`), read by an
/// XML parser.
fn statuses_in(xml: &str) -> Vec<(String, String)> {
    let report = quick_junit::Report::deserialize_from_str(xml).unwrap();
    let suite = &report.test_suites[0];
    suite
        .test_cases
        .iter()
        .map(|c| {
            let status = match &c.status {
                TestCaseStatus::Success { .. } => "passed",
                TestCaseStatus::NonSuccess { kind, .. } => match kind {
                    NonSuccessKind::Failure => "failure",
                    NonSuccessKind::Error => "error",
                },
                TestCaseStatus::Skipped { .. } => "skipped",
            };
            (c.name.to_string(), status.to_string())
        })
        .collect()
}

fn names(statuses: &[(&str, &str)]) -> Vec<(String, String)> {
    statuses
        .iter()
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect()
}

#[test]
fn a_valid_run_is_four_passing_cases_with_the_runs_facts() {
    let results = lockpick_checkers::check(&history([1, 2]));
    assert_eq!(
        results.valid,
        Validity::Valid,
        "{:?}",
        results.unknown_reasons
    );
    let xml = junit(&results, &facts()).unwrap();
    let properties = properties_in(&xml);
    for expected in [
        ("seed", "51"),
        ("lock", "etcd"),
        ("fencing", "on"),
        ("nemeses", "pause-holder"),
        ("server version n1", "etcd 3.5.9"),
        ("client library", "etcd clientv3 concurrency.Mutex"),
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
    assert_eq!((suite.tests, suite.failures, suite.errors), (5, 0, 0));
}

#[test]
fn a_run_whose_only_violation_is_a_reused_token_fails_its_verdict_and_token_cases() {
    let results = lockpick_checkers::check(&history([7, 7]));
    assert_eq!(results.valid, Validity::Invalid);
    let xml = junit(&results, &facts()).unwrap();
    assert_eq!(
        statuses_in(&xml),
        names(&[
            ("verdict", "failure"),
            ("overlapping holders", "passed"),
            ("stale writes accepted", "passed"),
            ("fencing tokens", "failure"),
            ("lock never jammed", "passed"),
        ])
    );
    assert!(xml.contains("INVALID: 1 token violations"), "{xml}");
}

#[test]
fn an_unknown_run_is_an_error_and_a_lock_without_tokens_skips_their_case() {
    let mut ops = history([1, 2]);
    ops.pop(); // no final read
    ops[0].value["token"] = json!("none");
    let results = lockpick_checkers::check(&ops);
    assert_eq!(results.valid, Validity::Unknown);
    let xml = junit(&results, &facts()).unwrap();
    assert_eq!(
        statuses_in(&xml),
        names(&[
            ("verdict", "error"),
            ("overlapping holders", "passed"),
            ("stale writes accepted", "passed"),
            ("fencing tokens", "skipped"),
            ("lock never jammed", "passed"),
        ])
    );
    assert!(
        xml.contains("UNKNOWN: not proven: the run ended before its final read"),
        "{xml}"
    );
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
