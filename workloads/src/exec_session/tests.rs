use super::*;
use crate::clock::RunClock;

fn shell(script: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), script.into()]
}

fn renewals() -> Renewals {
    Renewals::new(RunClock::start())
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn an_answer_comes_back_with_its_fields() {
    let program = shell(
        r#"echo '{"protocol": 1, "extend": true}'; read line;
           echo '{"id": 1, "result": "ok", "token": 7, "valid_ms": 900}'"#,
    );
    let mut session = Session::start(&program, &[], SECOND, &renewals()).unwrap();
    assert!(session.extends);
    let answer = session
        .request("acquire", json!({"wait_ms": 5}), SECOND)
        .unwrap();
    assert_eq!(answer.result, Verdict::Ok);
    assert_eq!((answer.token, answer.valid_ms), (Some(7), Some(900)));
    session.kill();
}

#[test]
fn a_late_answer_to_a_request_given_up_on_is_skipped() {
    // Request 1 is answered only after it was given up on; request 2 still gets its own.
    let program = shell(
        r#"echo '{"protocol": 1, "extend": true}'; read one; sleep 0.4;
           echo '{"id": 1, "result": "ok"}'; read two; echo '{"id": 2, "result": "fail"}'"#,
    );
    let mut session = Session::start(&program, &[], SECOND, &renewals()).unwrap();
    let slow = Duration::from_millis(100);
    let silent = session.request("extend", json!({}), slow).unwrap_err();
    assert!(matches!(silent, Breakage::Silent(_)), "{silent:?}");
    let answer = session.request("release", json!({}), SECOND).unwrap();
    assert_eq!((answer.id, answer.result), (2, Verdict::Fail));
    session.kill();
}

#[test]
fn another_version_is_refused() {
    let program = shell(r#"echo '{"protocol": 2}'; sleep 5"#);
    let refused = Session::start(&program, &[], SECOND, &renewals())
        .err()
        .unwrap();
    assert_eq!(refused, Breakage::WrongVersion(json!(2)));
}

#[test]
fn a_wrong_id_a_death_and_silence_are_breakages() {
    let hello = r#"echo '{"protocol": 1}'; read line;"#;
    let cases = [
        (r#"echo '{"id": 9, "result": "ok"}'"#, "garbage"),
        ("exit 4", "died"),
        ("sleep 5", "silent"),
    ];
    for (then, kind) in cases {
        let program = shell(&format!("{hello} {then}"));
        let mut session = Session::start(&program, &[], SECOND, &renewals()).unwrap();
        let broke = session
            .request("release", json!({}), Duration::from_millis(300))
            .unwrap_err();
        assert_eq!(broke.kind(), kind, "{broke}");
        session.kill();
    }
}

#[test]
fn a_grant_by_a_server_the_program_was_not_given_is_a_breakage() {
    // The program is told of two servers; it names them, then one it was never given.
    let env = [(
        "LOCKPICK_SERVERS".to_string(),
        "10.1.0.1:6379,10.1.0.2:6379".to_string(),
    )];
    let program = shell(
        r#"echo '{"protocol": 1}'; read one;
           echo '{"id": 1, "result": "ok", "granted_by": ["10.1.0.2:6379", "10.1.0.1:6379"]}';
           read two; echo '{"id": 2, "result": "fail", "kind": "not-ours"}';
           read three; echo '{"id": 3, "result": "ok", "granted_by": ["10.9.9.9:6379"]}'"#,
    );
    let mut session = Session::start(&program, &env, SECOND, &renewals()).unwrap();
    let granted = session
        .request("acquire", json!({"wait_ms": 5}), SECOND)
        .unwrap();
    assert_eq!(
        granted.granted_by.unwrap(),
        ["10.1.0.2:6379", "10.1.0.1:6379"]
    );
    let lost = session.request("release", json!({}), SECOND).unwrap();
    assert_eq!(
        lost.kind,
        Some(crate::lock_client::ReleaseFailKind::NotOurs)
    );
    let foreign = session.request("acquire", json!({"wait_ms": 5}), SECOND);
    assert!(
        matches!(&foreign, Err(Breakage::Garbage { why, .. }) if why.contains("not one of")),
        "{foreign:?}"
    );
    session.kill();
}

#[test]
fn a_line_over_the_bound_is_refused_as_garbage_naming_the_bound() {
    // 10 MB with no newline, then what would be a proper answer.
    let program = shell(
        r#"echo '{"protocol": 1}'; read line;
           head -c 10000000 /dev/zero | tr '\0' x; echo '{"id": 1, "result": "ok"}'"#,
    );
    let mut session = Session::start(&program, &[], SECOND, &renewals()).unwrap();
    let broke = session
        .request("acquire", json!({"wait_ms": 5}), 5 * SECOND)
        .unwrap_err();
    assert_eq!(broke.kind(), "garbage", "{broke}");
    assert!(
        broke.to_string().contains("a line longer than 64 KiB"),
        "{broke}"
    );
    session.kill();
}
