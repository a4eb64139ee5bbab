//! The one error type of this crate: a lock client that could not be set up. Failures of the
//! operations themselves are not errors but outcomes (`Outcome::Fail` / `Outcome::Info`), since
//! they are what the history records.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum WorkloadError {
    #[error("cannot set up a Redis client")]
    Redis(#[from] redis::RedisError),
    #[error("cannot set up an HTTP client for etcd")]
    Http(#[from] reqwest::Error),
    #[error("cannot start the client's async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("etcd did not answer {request}: {reason}")]
    Etcd { request: String, reason: String },
    #[error("a client spec is unreadable")]
    Spec(#[from] serde_json::Error),
    #[error("a client needs at least one lock-service node address")]
    NoNodes,
}
