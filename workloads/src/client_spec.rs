//! What one client process is to do, as one typed value: the controller builds it, serializes it
//! into the `lockpick client --spec '<json>'` argument, and the client reads it back. Which
//! client a lock gets is the lock's own entry's business (the harness's catalogue of locks).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::{RunClock, SkewableClock};
use crate::error::WorkloadError;

/// Everything one client process needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientSpec {
    pub process: u64,
    /// The lock's name in the catalogue (`redis`).
    pub lock: String,
    /// Lock-service node addresses (`ip:port`), as this client reaches them.
    pub nodes: Vec<String>,
    pub resource: SocketAddr,
    pub key: String,
    pub ttl_ms: u64,
    pub op_timeout_ms: u64,
    pub work_ms: u64,
    /// The run clock's zero on the host's monotonic clock.
    pub origin_ns: u64,
    /// No acquire attempt starts after this (run clock).
    pub deadline_ns: u64,
    /// How far past the deadline the controller may extend the quiet phase (the jam bound):
    /// on SIGUSR1 the client goes on taking turns until this much past it, or SIGUSR2.
    #[serde(default)]
    pub quiet_extension_ms: u64,
    pub max_attempts: u64,
    /// File holding this client's clock skew in milliseconds (see `SkewableClock`).
    pub skew_file: Option<PathBuf>,
    /// `--wait-replicas`: the replicas a lock that replicates (`redis-sentinel`) waits for
    /// after each grant; `None` for every other lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_replicas: Option<u32>,
}

impl ClientSpec {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a client spec always serializes")
    }

    pub fn from_json(text: &str) -> Result<ClientSpec, WorkloadError> {
        Ok(serde_json::from_str(text)?)
    }

    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms)
    }

    /// Never zero (a sub-millisecond timeout is written as 0 ms): a zero socket timeout is an
    /// error, not "at once".
    pub fn op_timeout(&self) -> Duration {
        Duration::from_millis(self.op_timeout_ms.max(1))
    }

    pub fn run_clock(&self) -> RunClock {
        RunClock::from_origin(self.origin_ns)
    }

    /// Redlock asks each node with a timeout much smaller than the TTL: a tenth of it, at least
    /// 5 ms, but never more than the op timeout (which is never zero).
    pub fn node_timeout(&self) -> Duration {
        (self.ttl() / 10)
            .max(Duration::from_millis(5))
            .min(self.op_timeout())
    }

    /// The first server's address (a single-server lock's only one).
    pub fn first_node(&self) -> Result<&str, WorkloadError> {
        self.nodes
            .first()
            .map(String::as_str)
            .ok_or(WorkloadError::NoNodes)
    }

    /// The client's own clock, which `skew-clients` may move.
    pub fn skewable_clock(&self) -> SkewableClock {
        SkewableClock::new(self.skew_file.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ttl_ms: u64, op_timeout_ms: u64) -> ClientSpec {
        ClientSpec {
            process: 4,
            lock: "redlock".into(),
            nodes: vec!["10.0.0.1:6379".into(), "10.0.0.2:6379".into()],
            resource: "10.0.0.9:7000".parse().unwrap(),
            key: "lockpick".into(),
            ttl_ms,
            op_timeout_ms,
            work_ms: 10,
            origin_ns: 123,
            deadline_ns: 456,
            quiet_extension_ms: 3_000,
            max_attempts: 7,
            skew_file: Some("/tmp/skew".into()),
            wait_replicas: None,
        }
    }

    #[test]
    fn a_spec_reads_back_as_it_was_written() {
        let spec = spec(1000, 500);
        assert_eq!(ClientSpec::from_json(&spec.to_json()).unwrap(), spec);
    }

    #[test]
    fn the_node_timeout_fits_any_accepted_op_timeout() {
        assert_eq!(spec(20, 4).node_timeout(), Duration::from_millis(4));
        assert_eq!(spec(20, 19).node_timeout(), Duration::from_millis(5));
        assert_eq!(spec(1000, 500).node_timeout(), Duration::from_millis(100));
        assert_eq!(spec(10, 1).node_timeout(), Duration::from_millis(1));
    }

    #[test]
    fn a_spec_that_is_not_json_is_an_error() {
        assert!(matches!(
            ClientSpec::from_json("--lock redis"),
            Err(WorkloadError::Spec(_))
        ));
    }
}
