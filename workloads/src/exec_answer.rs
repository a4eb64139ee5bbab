//! A client program's answer to one request (`workloads/PROTOCOL.md`, Answers), and the checks
//! of the fields that only some answers may carry: the program is hostile input, and a field it
//! gives where the protocol has no place for it is a breakage, not something to guess about.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::lock_client::ReleaseFailKind;

/// What the program answered to one request (serialized back as the program would have written
/// it, for `lockpick protocol-check` to show).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub id: u64,
    pub result: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u64>,
    /// The lease is certainly held at least this long after the request was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_ms: Option<u64>,
    /// The lease has certainly ended this long after the answer, unless extended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<u64>,
    /// The grant certainly came no earlier than this long after the request was received (a
    /// library that retries inside one acquire: when its last attempt was sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_after_ms: Option<u64>,
    /// The servers that granted the lock (an `ok` acquire), as `LOCKPICK_SERVERS` writes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_by: Option<Vec<String>>,
    /// Why a release failed (a `fail` release): what it says of the lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ReleaseFailKind>,
    /// The program's wall clock, in ms since the Unix epoch (an answer to `clock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `false` on a `fail`: the request never left the program (its connection was still
    /// being made when it gave up, say), so nothing of it can be applied, however the servers
    /// behave. Only `false`, and only on a `fail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Fail,
    Unknown,
}

impl Answer {
    /// An answer with nothing but its id and result.
    pub fn bare(id: u64, result: Verdict) -> Answer {
        Answer {
            id,
            result,
            token: None,
            valid_ms: None,
            expires_ms: None,
            granted_after_ms: None,
            granted_by: None,
            kind: None,
            wall_ms: None,
            error: None,
            sent: None,
        }
    }

    /// Whether the program says its request never left it (`"sent": false` on a `fail`).
    pub fn never_sent(&self) -> bool {
        self.result == Verdict::Fail && self.sent == Some(false)
    }

    /// Why this answer to `op` breaks the protocol, given the run's `servers`: a `kind` on
    /// anything but a failed release, a `granted_by` on anything but a granted acquire, or one
    /// that names a server twice or an address that is not one of the run's servers (a grant
    /// can only come from them, and a nemesis aims at what it names).
    pub fn misplaced(&self, op: &str, servers: &[String]) -> Option<String> {
        if self.sent.is_some() && !self.never_sent() {
            return Some(format!(
                "`sent` is only ever `false`, on a fail answer (the request never left), not \
                 `{}` on a {:?} answer to {op}",
                self.sent.unwrap_or_default(),
                self.result
            ));
        }
        if self.kind.is_some() && !(op == "release" && self.result == Verdict::Fail) {
            return Some(format!(
                "`kind` belongs to a fail answer to release, not to {op}"
            ));
        }
        let granted_by = self.granted_by.as_ref()?;
        if !(op == "acquire" && self.result == Verdict::Ok) {
            return Some(format!(
                "`granted_by` belongs to an ok answer to acquire, not to {op}"
            ));
        }
        let mut seen = BTreeSet::new();
        for server in granted_by {
            let shown: String = server.chars().take(60).collect();
            if !servers.contains(server) {
                return Some(format!(
                    "`granted_by` names {shown:?}, which is not one of LOCKPICK_SERVERS"
                ));
            }
            if !seen.insert(server) {
                return Some(format!("`granted_by` names {shown:?} twice"));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers() -> Vec<String> {
        ["10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"]
            .map(String::from)
            .into()
    }

    fn parsed(line: &str) -> Answer {
        serde_json::from_str(line).expect("an answer")
    }

    #[test]
    fn granted_by_names_only_the_run_s_servers_once_each_on_a_grant() {
        let ok = parsed(r#"{"id":1,"result":"ok","granted_by":["10.0.0.3:6379","10.0.0.1:6379"]}"#);
        assert_eq!(ok.misplaced("acquire", &servers()), None);
        let foreign = parsed(r#"{"id":1,"result":"ok","granted_by":["10.0.0.9:6379"]}"#);
        assert!(foreign
            .misplaced("acquire", &servers())
            .unwrap()
            .contains("not one of"));
        let twice =
            parsed(r#"{"id":1,"result":"ok","granted_by":["10.0.0.1:6379","10.0.0.1:6379"]}"#);
        assert!(twice
            .misplaced("acquire", &servers())
            .unwrap()
            .contains("twice"));
        let refused = parsed(r#"{"id":1,"result":"fail","granted_by":["10.0.0.1:6379"]}"#);
        assert!(refused.misplaced("acquire", &servers()).is_some());
        assert!(ok.misplaced("release", &servers()).is_some());
        assert!(serde_json::from_str::<Answer>(
            r#"{"id":1,"result":"ok","granted_by":"10.0.0.1:6379"}"#
        )
        .is_err());
    }

    #[test]
    fn sent_false_belongs_to_a_fail_alone() {
        let never = parsed(r#"{"id":1,"result":"fail","sent":false,"error":"connect timeout"}"#);
        assert!(never.never_sent());
        assert_eq!(never.misplaced("acquire", &servers()), None);
        let unknown = parsed(r#"{"id":1,"result":"unknown","sent":false}"#);
        assert!(unknown.misplaced("acquire", &servers()).is_some());
        let said_sent = parsed(r#"{"id":1,"result":"fail","sent":true}"#);
        assert!(said_sent.misplaced("acquire", &servers()).is_some());
        assert!(!parsed(r#"{"id":1,"result":"fail"}"#).never_sent());
    }

    #[test]
    fn kind_belongs_to_a_failed_release_and_is_one_of_three() {
        let lost = parsed(r#"{"id":2,"result":"fail","kind":"not-ours","error":"gone"}"#);
        assert_eq!(lost.kind, Some(ReleaseFailKind::NotOurs));
        assert_eq!(lost.misplaced("release", &servers()), None);
        assert!(lost.misplaced("acquire", &servers()).is_some());
        assert!(lost.misplaced("extend", &servers()).is_some());
        let ok = parsed(r#"{"id":2,"result":"ok","kind":"refused"}"#);
        assert!(ok.misplaced("release", &servers()).is_some());
        assert!(
            serde_json::from_str::<Answer>(r#"{"id":2,"result":"fail","kind":"expired"}"#).is_err()
        );
        let old = parsed(r#"{"id":2,"result":"fail","error":"no longer ours"}"#);
        assert_eq!(
            (old.kind, old.misplaced("release", &servers())),
            (None, None)
        );
    }
}
