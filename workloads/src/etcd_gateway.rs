//! A small client of etcd's JSON gateway (`POST /v3/...`), which needs no protobuf compiler.
//! Keys and values travel base64-encoded; 64-bit integers come back as strings; fields at their
//! default value are left out.
//!
//! Calls go to one member at a time; after a failure the next call tries the next member, as
//! etcd's own clients do.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::{json, Value};

use crate::error::WorkloadError;
use crate::lock_client::Outcome;

pub struct EtcdGateway {
    http: reqwest::blocking::Client,
    endpoints: Vec<String>,
    current: usize,
}

impl From<reqwest::Error> for WorkloadError {
    fn from(source: reqwest::Error) -> WorkloadError {
        WorkloadError::Client {
            what: "an HTTP client for etcd",
            source: Box::new(source),
        }
    }
}

impl EtcdGateway {
    /// A client of the members at `endpoints` (`ip:port`), each call bounded by `timeout` unless
    /// it says otherwise.
    pub fn new(endpoints: &[String], timeout: Duration) -> Result<EtcdGateway, WorkloadError> {
        let http = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()?;
        Ok(EtcdGateway {
            http,
            endpoints: endpoints.to_vec(),
            current: 0,
        })
    }

    /// POSTs `body` to `/v3/<path>`. `Fail` when the request was certainly not applied (no
    /// connection, or etcd answered with an error), `Info` when no answer came back in time.
    pub fn call(&mut self, path: &str, body: Value, timeout: Option<Duration>) -> Outcome<Value> {
        let endpoint = &self.endpoints[self.current % self.endpoints.len()];
        let mut request = self
            .http
            .post(format!("http://{endpoint}/v3/{path}"))
            .json(&body);
        if let Some(timeout) = timeout {
            request = request.timeout(timeout);
        }
        let outcome = match request.send().and_then(|r| Ok((r.status(), r.text()?))) {
            Ok((status, text)) => match serde_json::from_str::<Value>(&text) {
                Ok(v) if status.is_success() && v.get("error").is_none() => Outcome::Ok(v),
                _ => Outcome::Fail(format!("{endpoint} {path}: {status}: {text}")),
            },
            Err(e) if e.is_connect() => Outcome::Fail(format!("{endpoint} {path}: {e}")),
            Err(e) => Outcome::Info(format!("{endpoint} {path}: {e}")),
        };
        if !matches!(outcome, Outcome::Ok(_)) {
            self.current += 1;
        }
        outcome
    }
}

pub fn encode(text: &str) -> String {
    BASE64.encode(text)
}

/// A 64-bit integer field, which the gateway sends as a string (and omits when 0).
pub fn int_field(value: &Value, field: &str) -> Option<i64> {
    match value.get(field)? {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

/// The members of the cluster, as `member/list` reports them, for readiness checks.
pub fn member_names(gateway: &mut EtcdGateway) -> Result<Vec<String>, WorkloadError> {
    let request = "cluster/member/list";
    match gateway.call(request, json!({}), None) {
        Outcome::Ok(v) => Ok(v["members"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter_map(|m| m["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()),
        Outcome::Fail(reason) | Outcome::Info(reason) => Err(WorkloadError::Unanswered {
            service: "etcd",
            request: request.to_string(),
            reason,
        }),
    }
}
