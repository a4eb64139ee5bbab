//! Why a release certainly did not take effect, as its client said (`kind` on a release `fail`).
//! The kinds are told apart because they say different things about the lease: only
//! [`ReleaseFailKind::NotOurs`] is the service's word that the lease had ended, and no checker
//! reads even that as evidence yet (a hold's end is proven by a release `ok` or a lease bound).
//! Every kind is counted, so outputs can say which failures a run saw.

use serde::{Deserialize, Serialize};

/// What a release `fail` means (`checkers/HISTORY.md`, `workloads/PROTOCOL.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseFailKind {
    /// The service was asked and answered that the lock was no longer this grant's: its key
    /// gone or holding another's value (the lease had ended, and someone may hold it since).
    NotOurs,
    /// Nothing was sent: the client (or the program's library) held no lock by its own
    /// account, so it had nothing to release. It says nothing of the lease.
    NotHeld,
    /// The service refused the request or could not be reached, and applied nothing: whose the
    /// lock is was not said, so the lease lives on until it expires.
    Refused,
}

impl ReleaseFailKind {
    /// How outputs say it.
    pub fn words(self) -> &'static str {
        match self {
            ReleaseFailKind::NotOurs => "the lock was no longer ours",
            ReleaseFailKind::NotHeld => "nothing was held, nothing sent",
            ReleaseFailKind::Refused => "refused or not reached, nothing said of the lease",
        }
    }
}

/// A hold's release that completed `fail`, with the kind its client gave (`None`: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseFailed {
    #[serde(default)]
    pub kind: Option<ReleaseFailKind>,
}

impl ReleaseFailed {
    /// How a story says it.
    pub fn words(&self) -> &'static str {
        self.kind.map_or("no kind given", ReleaseFailKind::words)
    }
}

/// How many releases failed, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReleaseFailures {
    pub not_ours: usize,
    pub not_held: usize,
    pub refused: usize,
    /// Failures that gave no kind (a program that does not say, an older history).
    pub unsaid: usize,
}

impl ReleaseFailures {
    pub fn count(&mut self, kind: Option<ReleaseFailKind>) {
        *match kind {
            Some(ReleaseFailKind::NotOurs) => &mut self.not_ours,
            Some(ReleaseFailKind::NotHeld) => &mut self.not_held,
            Some(ReleaseFailKind::Refused) => &mut self.refused,
            None => &mut self.unsaid,
        } += 1;
    }

    pub fn total(&self) -> usize {
        self.not_ours + self.not_held + self.refused + self.unsaid
    }

    /// One line for a summary ("2 (the lock was no longer ours: 1, ...)"), or `None` when no
    /// release failed.
    pub fn told(&self) -> Option<String> {
        if self.total() == 0 {
            return None;
        }
        let parts: Vec<String> = [
            (self.not_ours, ReleaseFailKind::NotOurs.words()),
            (self.not_held, ReleaseFailKind::NotHeld.words()),
            (self.refused, ReleaseFailKind::Refused.words()),
            (self.unsaid, "no kind given"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, words)| format!("{words}: {n}"))
        .collect();
        Some(format!("{} ({})", self.total(), parts.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_counted_apart_and_told_by_name() {
        let mut failures = ReleaseFailures::default();
        assert_eq!(failures.told(), None);
        for kind in [
            Some(ReleaseFailKind::NotOurs),
            Some(ReleaseFailKind::NotOurs),
            Some(ReleaseFailKind::NotHeld),
            None,
        ] {
            failures.count(kind);
        }
        assert_eq!(
            failures.told().unwrap(),
            "4 (the lock was no longer ours: 2; nothing was held, nothing sent: 1; no kind \
             given: 1)"
        );
        let kind: ReleaseFailKind = serde_json::from_str("\"not-held\"").unwrap();
        assert_eq!(kind, ReleaseFailKind::NotHeld);
        assert!(serde_json::from_str::<ReleaseFailKind>("\"expired\"").is_err());
    }
}
