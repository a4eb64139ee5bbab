//! The one error type of this crate: a lock client that could not be set up. Failures of the
//! operations themselves are not errors but outcomes (`Outcome::Fail` / `Outcome::Info`), since
//! they are what the history records. A service's library errors convert into it in that
//! service's own files (`impl From<…> for WorkloadError`), so this one names none.

use thiserror::Error;

/// Any library's error, kept whole as the source.
pub type LibraryError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Error)]
pub enum WorkloadError {
    /// A service's client library could not make its client.
    #[error("cannot set up {what}")]
    Client {
        what: &'static str,
        #[source]
        source: LibraryError,
    },
    #[error("cannot start the client's async runtime")]
    Runtime(#[source] std::io::Error),
    /// A service's servers did not answer a request the client's set-up needs.
    #[error("{service} did not answer {request}: {reason}")]
    Unanswered {
        service: &'static str,
        request: String,
        reason: String,
    },
    #[error("a client spec is unreadable")]
    Spec(#[from] serde_json::Error),
    #[error("a client needs at least one lock-service node address")]
    NoNodes,
}
