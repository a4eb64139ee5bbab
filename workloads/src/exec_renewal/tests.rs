use super::*;
use std::sync::mpsc;

const MS: u64 = 1_000_000;

fn report(renewed: Verdict, expires_ms: Option<u64>) -> RenewalReport {
    RenewalReport {
        renewed,
        expires_ms,
        sent_after_ms: None,
        since_id: None,
        valid_ms: None,
        error: None,
    }
}

fn listening(renewals: &Renewals) -> mpsc::Receiver<Lease> {
    let (sender, heard) = mpsc::channel();
    renewals.expect(Box::new(move |r: crate::lease::Renewal| {
        sender.send(r.lease).unwrap()
    }));
    heard
}

const GRANT: Lease = Lease {
    live_until: 1_000 * MS,
    expires_by: Some(1_100 * MS),
};

#[test]
fn a_reported_renewal_bounds_the_lease_from_the_moment_it_was_read() {
    let renewals = Renewals::new(RunClock::start());
    let heard = listening(&renewals);
    renewals.granted(GRANT);
    renewals.heard(700 * MS, report(Verdict::Ok, Some(1_000)));
    assert_eq!(
        heard.try_recv().unwrap(),
        Lease {
            live_until: 1_000 * MS,
            expires_by: Some(1_700 * MS)
        }
    );
}

#[test]
fn an_unknown_renewal_unbounds_the_lease_and_every_later_report() {
    let renewals = Renewals::new(RunClock::start());
    let heard = listening(&renewals);
    renewals.granted(GRANT);
    renewals.heard(700 * MS, report(Verdict::Unknown, None));
    renewals.heard(1_400 * MS, report(Verdict::Ok, Some(1_000)));
    let leases: Vec<Lease> = heard.try_iter().collect();
    assert_eq!(leases.len(), 2);
    assert!(leases.iter().all(|l| l.expires_by.is_none()), "{leases:?}");
}

/// A report that says when its renewal was sent: `ms` after request `id`.
fn sent(renewed: Verdict, id: u64, ms: u64) -> RenewalReport {
    RenewalReport {
        since_id: Some(id),
        sent_after_ms: Some(ms),
        valid_ms: Some(1_000),
        ..report(renewed, Some(1_000))
    }
}

#[test]
fn an_unknown_renewal_sent_after_the_lease_ended_leaves_it_bounded() {
    let renewals = Renewals::new(RunClock::start());
    let heard = listening(&renewals);
    renewals.request_sent(1);
    renewals.granted(GRANT);
    // Sent at least 2 s after request 1 (written just now, near 0): past the lease's end by
    // 1.1 s, so it cannot have extended it, and nothing is recorded.
    renewals.heard(2_500 * MS, sent(Verdict::Unknown, 1, 2_000));
    assert!(heard.try_recv().is_err());
    // Without the moment it was sent, the same report unbounds the lease.
    let renewals = Renewals::new(RunClock::start());
    let heard = listening(&renewals);
    renewals.granted(GRANT);
    renewals.heard(2_500 * MS, report(Verdict::Unknown, None));
    assert_eq!(heard.try_recv().unwrap().expires_by, None);
}

#[test]
fn a_renewal_that_says_when_it_was_sent_moves_live_until_from_then() {
    let renewals = Renewals::new(RunClock::start());
    let (sender, heard) = mpsc::channel();
    renewals.expect(Box::new(move |r: crate::lease::Renewal| {
        sender.send(r).unwrap()
    }));
    renewals.request_sent(1);
    renewals.granted(GRANT);
    renewals.heard(700 * MS, sent(Verdict::Ok, 1, 600));
    let renewal = heard.try_recv().unwrap();
    let sent_at = renewal.sent.expect("the moment it was sent");
    assert!((600 * MS..=700 * MS).contains(&sent_at), "{sent_at}");
    assert_eq!(renewal.lease.live_until, sent_at + 1_000 * MS);
    // An id it was never sent names nothing.
    renewals.heard(800 * MS, sent(Verdict::Ok, 9, 600));
    assert_eq!(heard.try_recv().unwrap().sent, None);
}

#[test]
fn reports_before_the_grant_wait_for_it_and_none_count_after_a_loss_or_stop() {
    let renewals = Renewals::new(RunClock::start());
    let heard = listening(&renewals);
    renewals.heard(50 * MS, report(Verdict::Ok, Some(1_000)));
    assert!(heard.try_recv().is_err());
    renewals.granted(GRANT);
    assert_eq!(heard.try_recv().unwrap().expires_by, Some(1_050 * MS));
    renewals.heard(700 * MS, report(Verdict::Fail, None));
    renewals.heard(800 * MS, report(Verdict::Ok, Some(1_000)));
    assert!(heard.try_recv().is_err());
    let heard = listening(&renewals);
    renewals.granted(GRANT);
    renewals.stop();
    renewals.heard(900 * MS, report(Verdict::Ok, Some(1_000)));
    assert!(heard.try_recv().is_err());
}

#[test]
fn a_program_s_reports_reach_the_lease_as_they_are_read_and_only_if_promised() {
    use crate::exec_session::Session;
    use std::time::Duration;
    let second = Duration::from_secs(1);
    // The report comes before the acquire's answer and after it, unasked.
    let script = |hello: &str| {
        let renewed = r#"echo '{"renewed": "ok", "expires_ms": 1000}'"#;
        vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            format!(
                "echo '{hello}'; read line; {renewed}; echo '{{\"id\": 1, \"result\": \"ok\"}}'; \
                 sleep 0.1; {renewed}; sleep 5"
            ),
        ]
    };
    let renewals = Renewals::new(RunClock::start());
    let heard = listening(&renewals);
    let program = script(r#"{"protocol": 1, "reports_renewals": true}"#);
    let mut session = Session::start(&program, &[], second, &renewals).unwrap();
    let answer = session.request("acquire", serde_json::json!({}), second);
    assert_eq!(answer.unwrap().result, Verdict::Ok);
    renewals.granted(GRANT);
    assert!(heard.recv_timeout(second).unwrap().expires_by.is_some());
    assert!(heard.recv_timeout(Duration::from_secs(10)).is_ok());
    session.kill();
    // Unpromised, a report is no protocol message.
    let heard = listening(&renewals);
    let program = script(r#"{"protocol": 1}"#);
    let mut session = Session::start(&program, &[], second, &renewals).unwrap();
    let broke = session.request("acquire", serde_json::json!({}), second);
    assert_eq!(broke.unwrap_err().kind(), "garbage");
    assert!(heard.try_recv().is_err());
    session.kill();
    // A library that renews on its own takes no extend.
    let program = script(r#"{"protocol": 1, "extend": true, "reports_renewals": true}"#);
    let refused = Session::start(&program, &[], second, &renewals)
        .err()
        .unwrap();
    assert_eq!(refused.kind(), "garbage");
}

#[test]
fn only_a_line_naming_renewed_is_a_report() {
    assert_eq!(
        renewal_report(r#"{"renewed": "ok", "expires_ms": 1000}"#),
        Some(Ok(report(Verdict::Ok, Some(1000))))
    );
    assert_eq!(renewal_report(r#"{"id": 1, "result": "ok"}"#), None);
    assert_eq!(renewal_report("not json"), None);
    assert!(matches!(
        renewal_report(r#"{"renewed": "ok", "token": 5}"#),
        Some(Err(_))
    ));
}
