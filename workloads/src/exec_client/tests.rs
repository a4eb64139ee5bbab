use super::*;
use crate::exec_session::Verdict;

fn answer(valid_ms: u64, expires_ms: u64, granted_after_ms: Option<u64>) -> Answer {
    Answer {
        valid_ms: Some(valid_ms),
        expires_ms: Some(expires_ms),
        granted_after_ms,
        ..Answer::bare(1, Verdict::Ok)
    }
}

const MS: u64 = 1_000_000;

#[test]
fn a_grant_after_retries_is_dated_from_the_last_attempt_never_past_the_answer() {
    // Sent at 100 ms, answered at 400 ms; the library's last attempt went out 250 ms in.
    let a = answer(1_000, 1_000, Some(250));
    assert_eq!(
        ExecClient::granted_after(&a, 100 * MS, 400 * MS),
        Some(350 * MS)
    );
    let lease = ExecClient::lease(&a, 100 * MS, 400 * MS);
    assert_eq!(lease.live_until, 1_350 * MS);
    assert_eq!(lease.expires_by, Some(1_400 * MS));
    // A bound past the answer is cut to the answer; none given, the request's invoke.
    let late = answer(1_000, 1_000, Some(900));
    assert_eq!(
        ExecClient::granted_after(&late, 100 * MS, 400 * MS),
        Some(400 * MS)
    );
    let none = answer(1_000, 1_000, None);
    assert_eq!(ExecClient::granted_after(&none, 100 * MS, 400 * MS), None);
    assert_eq!(
        ExecClient::lease(&none, 100 * MS, 400 * MS).live_until,
        1_100 * MS
    );
}
