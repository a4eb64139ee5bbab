//! One connection to a NATS JetStream cluster and its KV bucket, every call bounded in time as
//! the lock clients' contract asks: async-nats on a one-thread runtime of the session's own, each
//! call under a timeout. The writes are plain JetStream publishes with an expected last
//! revision of the key's subject (`Nats-Expected-Last-Subject-Sequence`), so the answer is
//! classified here rather than through the KV helpers, which fold "the server refused" and
//! "nobody knows" into one error.
//!
//! Note that async-nats keeps a publish made while it is disconnected and sends it on
//! reconnecting: a publish whose answer did not come in time may still be applied later. Such
//! an outcome is `Info`, never `Fail`.

use std::time::Duration;

use async_nats::jetstream::context::{Context, PublishError, PublishErrorKind};
use async_nats::HeaderMap;
use base64::Engine;
use tokio::runtime::Runtime;

use crate::error::WorkloadError;
use crate::lock_client::Outcome;

/// The bucket every lockpick KV lock lives in (its stream is `KV_lockpick`).
pub const BUCKET: &str = "lockpick";
/// How many servers keep each of the bucket's messages.
pub const REPLICAS: usize = 3;

/// A key's state as the bucket shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyState {
    /// No message for the key (never written, or expired by `max_age`).
    Absent,
    /// Its last message is a delete or purge marker, at this revision.
    Deleted(u64),
    /// Held: its last message is a value, at this revision.
    Held(u64),
}

pub struct NatsKvSession {
    runtime: Runtime,
    servers: Vec<String>,
    timeout: Duration,
    max_age: Duration,
    /// The JetStream context the writes go through, and its client, once the bucket is made.
    bucket: Option<(Context, async_nats::Client)>,
}

impl NatsKvSession {
    /// A session with the servers at `endpoints` (`ip:port`), connected on first use; the
    /// bucket is made (or found) with `max_age` as every key's lease.
    pub fn new(
        endpoints: &[String],
        max_age: Duration,
        timeout: Duration,
    ) -> Result<NatsKvSession, WorkloadError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(WorkloadError::Runtime)?;
        Ok(NatsKvSession {
            runtime,
            servers: endpoints.iter().map(|e| format!("nats://{e}")).collect(),
            timeout,
            max_age,
            bucket: None,
        })
    }

    /// Makes the bucket on the servers at `endpoints` (or finds it made with the same lease):
    /// the service does it at its start, so that the bucket's stream has a leader before any
    /// client (and a leader nemesis) asks for one.
    pub fn make_bucket(
        endpoints: &[String],
        max_age: Duration,
        timeout: Duration,
    ) -> Result<(), String> {
        let mut session =
            NatsKvSession::new(endpoints, max_age, timeout).map_err(|e| e.to_string())?;
        session.bucket().map(|_| ())
    }

    /// Publishes `value` on `key` if the key's last revision is `expected` (0: the key has no
    /// message), as a delete marker if `delete`. `Ok(revision)` when applied; `Fail` when it
    /// certainly was not (the revision differed, the server refused, nothing was sent).
    pub fn write(
        &mut self,
        key: &str,
        value: &[u8],
        expected: u64,
        delete: bool,
    ) -> Outcome<u64, WriteFail> {
        let context = match self.bucket() {
            Ok((context, _)) => context,
            Err(why) => return Outcome::Fail(WriteFail::Refused(why)),
        };
        let subject = format!("$KV.{BUCKET}.{key}");
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Expected-Last-Subject-Sequence", expected.to_string());
        if delete {
            headers.insert("KV-Operation", "DEL");
        }
        let payload = value.to_vec().into();
        let answer = self.runtime.block_on(async {
            let sent = context.publish_with_headers(subject, headers, payload);
            tokio::time::timeout(self.timeout, async {
                match sent.await {
                    Ok(ack) => Ok(ack.await),
                    Err(e) => Err(e),
                }
            })
            .await
        });
        match answer {
            Ok(Ok(Ok(ack))) => Outcome::Ok(ack.sequence),
            Ok(Ok(Err(e))) => classify(e),
            // Not handed to the connection at all: nothing was sent.
            Ok(Err(e)) => Outcome::Fail(WriteFail::Refused(format!("not sent: {e}"))),
            Err(_) => Outcome::Info(format!("no answer within {:?}", self.timeout)),
        }
    }

    /// The key's last message, read from the stream's leader (`STREAM.MSG.GET` by subject).
    pub fn state(&mut self, key: &str) -> Outcome<KeyState> {
        let client = match self.bucket() {
            Ok((_, client)) => client,
            Err(why) => return Outcome::Fail(why),
        };
        let ask = serde_json::json!({ "last_by_subj": format!("$KV.{BUCKET}.{key}") });
        let answer = self.runtime.block_on(async {
            let request = client.request(
                format!("$JS.API.STREAM.MSG.GET.KV_{BUCKET}"),
                ask.to_string().into(),
            );
            tokio::time::timeout(self.timeout, request).await
        });
        // A read changes nothing: whatever went wrong, it did not take effect.
        let reply = match answer {
            Ok(Ok(reply)) => reply,
            Ok(Err(e)) => return Outcome::Fail(format!("cannot read the key: {e}")),
            Err(_) => {
                return Outcome::Fail(format!("no answer to a read within {:?}", self.timeout))
            }
        };
        match serde_json::from_slice(&reply.payload) {
            Ok(answer) => key_state(&answer).map_or_else(Outcome::Fail, Outcome::Ok),
            Err(e) => Outcome::Fail(format!("an answer that is not JSON: {e}")),
        }
    }

    /// The JetStream context and the client, connecting and making the bucket first if needed.
    fn bucket(&mut self) -> Result<(Context, async_nats::Client), String> {
        if let Some(bucket) = &self.bucket {
            return Ok(bucket.clone());
        }
        let (servers, timeout, max_age) = (self.servers.clone(), self.timeout, self.max_age);
        let bucket = self.runtime.block_on(async move {
            tokio::time::timeout(timeout * 2, open_bucket(servers, timeout, max_age))
                .await
                .unwrap_or_else(|_| Err(format!("no bucket within {:?}", timeout * 2)))
        })?;
        self.bucket = Some(bucket.clone());
        Ok(bucket)
    }
}

/// The key's state from a `STREAM.MSG.GET` answer: no message (JetStream's 10037), or the
/// last message's revision and whether its `KV-Operation` header marks a delete or purge.
fn key_state(answer: &serde_json::Value) -> Result<KeyState, String> {
    if answer["error"]["err_code"].as_u64() == Some(NO_MESSAGE) {
        return Ok(KeyState::Absent);
    }
    let message = &answer["message"];
    let Some(revision) = message["seq"].as_u64() else {
        return Err(format!("a read answered {answer}"));
    };
    let headers = message["hdrs"].as_str().unwrap_or_default();
    let headers = base64::engine::general_purpose::STANDARD
        .decode(headers)
        .map_err(|e| format!("unreadable headers: {e}"))?;
    let headers = String::from_utf8_lossy(&headers);
    let removed = headers.lines().any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("KV-Operation")
                && matches!(value.trim(), "DEL" | "PURGE")
        })
    });
    Ok(if removed {
        KeyState::Deleted(revision)
    } else {
        KeyState::Held(revision)
    })
}

/// JetStream's error code for "no message found".
const NO_MESSAGE: u64 = 10037;
/// JetStream's error code for "stream name already in use" (with another configuration).
const STREAM_EXISTS: u64 = 10058;

/// The bucket's stream, as nats.go makes a KV bucket: one message per key, kept `max_age` after
/// its last write, on `REPLICAS` servers' files. Written out rather than through async-nats's
/// KV helpers, whose answers from a 2.9 server do not parse.
pub fn stream_config(max_age: Duration) -> serde_json::Value {
    let age = max_age.as_nanos() as u64;
    serde_json::json!({
        "name": format!("KV_{BUCKET}"),
        "subjects": [format!("$KV.{BUCKET}.>")],
        "retention": "limits",
        "max_consumers": -1,
        "max_msgs_per_subject": 1,
        "max_msgs": -1,
        "max_bytes": -1,
        "max_age": age,
        "max_msg_size": -1,
        "storage": "file",
        "discard": "new",
        "num_replicas": REPLICAS,
        "duplicate_window": age.min(120_000_000_000),
        "allow_rollup_hdrs": true,
        "deny_delete": true,
        "deny_purge": false,
        "allow_direct": true,
    })
}

/// Connects (reconnecting quickly after a partition heals) and makes the bucket's stream, if the
/// service has not (an exec program's servers): JetStream answers a creation with the same
/// configuration as a success.
async fn open_bucket(
    servers: Vec<String>,
    timeout: Duration,
    max_age: Duration,
) -> Result<(Context, async_nats::Client), String> {
    let addresses: Vec<async_nats::ServerAddr> = servers
        .iter()
        .map(|s| s.parse().map_err(|e| format!("{s}: {e}")))
        .collect::<Result<_, _>>()?;
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(timeout)
        .request_timeout(Some(timeout))
        .reconnect_delay_callback(|attempts| Duration::from_millis(100 * attempts.min(10) as u64))
        .connect(addresses)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let config = stream_config(max_age).to_string();
    let reply = client
        .request(format!("$JS.API.STREAM.CREATE.KV_{BUCKET}"), config.into())
        .await
        .map_err(|e| format!("cannot make the bucket: {e}"))?;
    let answer: serde_json::Value = serde_json::from_slice(&reply.payload)
        .map_err(|e| format!("cannot make the bucket: {e}"))?;
    match answer["error"]["err_code"].as_u64() {
        None => {}
        // Made by another client at the same moment: the same bucket if its lease is ours.
        Some(STREAM_EXISTS) => {
            let reply = client
                .request(format!("$JS.API.STREAM.INFO.KV_{BUCKET}"), "".into())
                .await
                .map_err(|e| format!("cannot read the bucket: {e}"))?;
            let info: serde_json::Value = serde_json::from_slice(&reply.payload)
                .map_err(|e| format!("cannot read the bucket: {e}"))?;
            let lease = info["config"]["max_age"].as_u64();
            if lease != Some(max_age.as_nanos() as u64) {
                return Err(format!("the bucket exists with max_age {lease:?} ns"));
            }
        }
        Some(_) => return Err(format!("cannot make the bucket: {}", answer["error"])),
    }
    let mut context = async_nats::jetstream::new(client.clone());
    context.set_timeout(timeout);
    Ok((context, client))
}

/// Why a write certainly did not take effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteFail {
    /// The key's last revision was not the one expected.
    WrongRevision(String),
    /// The server refused it, or it was never sent.
    Refused(String),
}

/// A publish's error: `Fail` when the server answered that it did not apply it (or nobody
/// listened on the subject), `Info` when no answer came.
fn classify(e: PublishError) -> Outcome<u64, WriteFail> {
    match e.kind() {
        PublishErrorKind::WrongLastSequence => {
            Outcome::Fail(WriteFail::WrongRevision(e.to_string()))
        }
        PublishErrorKind::StreamNotFound | PublishErrorKind::WrongLastMessageId => {
            Outcome::Fail(WriteFail::Refused(e.to_string()))
        }
        PublishErrorKind::Other if is_server_error(&e) => {
            Outcome::Fail(WriteFail::Refused(format!("the server refused it: {e}")))
        }
        _ => Outcome::Info(format!("unknown outcome: {e}")),
    }
}

/// Whether a publish error carries JetStream's own error answer (the server refused).
fn is_server_error(e: &PublishError) -> bool {
    std::error::Error::source(e)
        .is_some_and(|s| s.downcast_ref::<async_nats::jetstream::Error>().is_some())
}

/// A KV key from a lock's name: the characters KV keys allow, others as `_`.
pub fn key_of(name: &str) -> String {
    let key: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '=' | '/' => c,
            _ => '_',
        })
        .collect();
    if key.is_empty() {
        "lock".to_string()
    } else {
        key
    }
}

#[cfg(test)]
mod tests {
    use super::key_of;

    #[test]
    fn a_key_keeps_only_the_characters_kv_allows() {
        assert_eq!(key_of("lockpick"), "lockpick");
        assert_eq!(key_of("a.b c*>"), "a_b_c__");
        assert_eq!(key_of(""), "lock");
    }
}
