//! The shapes of the values the model decodes, each decoded once, borrowing from its line.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::{AccessKind, FinalState, Lease};
use crate::history::{Malformed, OpType, F};
use crate::record::{Record, Who};

#[derive(Deserialize)]
pub(super) struct ClientValue<'a> {
    #[serde(borrow)]
    pub(super) acquisition: Cow<'a, str>,
    #[serde(default)]
    pub(super) token: Option<u64>,
    #[serde(default)]
    pub(super) lease: Option<Lease>,
    #[serde(default)]
    pub(super) granted_after: Option<u64>,
    #[serde(default)]
    pub(super) lower_tokens_gone: bool,
    #[serde(default)]
    pub(super) server_lease: Option<crate::lease_claims::ServerLease>,
    /// Why a release failed, when its client said (`fail` `release` only).
    #[serde(default)]
    pub(super) kind: Option<super::ReleaseFailKind>,
    /// The servers that granted an acquire (`ok` only).
    #[serde(default)]
    pub(super) nodes: Nodes,
    /// Why it did not succeed (`fail` and `info`).
    #[serde(default, borrow)]
    pub(super) error: Option<Cow<'a, str>>,
}

/// An acquire's `nodes`: a list of addresses. Read tolerantly, as anything else reads as no
/// list: only the cause of an overlap reads it, and then only to add a proof.
#[derive(Default, Deserialize)]
#[serde(untagged)]
pub(super) enum Nodes {
    List(Vec<String>),
    #[default]
    #[serde(skip)]
    Absent,
    Other(serde::de::IgnoredAny),
}

impl Nodes {
    /// The one server the list names, when it names exactly one.
    pub(super) fn one(self) -> Option<String> {
        match self {
            Nodes::List(mut list) if list.len() == 1 => list.pop().filter(|a| !a.is_empty()),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct RenewValue<'a> {
    #[serde(borrow)]
    pub(super) acquisition: Cow<'a, str>,
    pub(super) lease: Lease,
    #[serde(default)]
    pub(super) server_lease: Option<crate::lease_claims::ServerLease>,
    /// When the renewal's request was sent, when its client knows.
    #[serde(default)]
    pub(super) sent: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct AccessValue<'a> {
    pub(super) seq: u64,
    pub(super) process: u64,
    #[serde(borrow)]
    pub(super) acquisition: Cow<'a, str>,
    #[serde(default)]
    pub(super) token: Option<u64>,
    pub(super) op: AccessKind,
    #[serde(default)]
    pub(super) value: i64,
}

// Inlined so that the decoded value is written where its caller keeps it, not copied out
// through each layer (a client's value is some 200 bytes, copied once per line).
#[inline(always)]
pub(super) fn parse<'a, T: Deserialize<'a>>(op: &Record<'a>) -> Result<T, Malformed> {
    op.value.decode().map_err(|e| {
        Malformed::at(
            op.line(),
            format!("bad value for {:?} {:?}: {e}", op.kind, op.f),
        )
    })
}

/// Decodes a record's value into the shape the builder would decode it into, and drops it: the
/// work no checker can avoid, measured alone as the parsing limit.
pub fn decode_only(op: &Record<'_>) -> Result<(), String> {
    fn decode<'a, T: Deserialize<'a>>(op: &Record<'a>) -> Result<(), String> {
        let value: T = op.value.decode().map_err(|e| e.to_string())?;
        std::hint::black_box(&value);
        Ok(())
    }
    match (&op.process, op.f) {
        (Who::Client(_), F::Renew) => decode::<RenewValue>(op),
        (Who::Client(_), _) => decode::<ClientValue>(op),
        (Who::Named(_), F::Setup) => decode::<super::Setup>(op),
        (Who::Named(_), F::FinalRead) if op.kind == OpType::Ok => decode::<FinalState>(op),
        (Who::Named(_), F::FinalRead) => decode::<Value>(op),
        (Who::Named(_), F::Access) if op.kind == OpType::Info => decode::<Value>(op),
        (Who::Named(_), F::Access) => decode::<AccessValue>(op),
        (Who::Named(_), F::Start | F::Stop) => decode::<crate::fault::FaultRecord>(op),
        (Who::Named(_), _) => Ok(()),
    }
}

/// The largest time, sequence number or count a history may hold: 2^53, the integers JSON
/// tools read exactly (as nanoseconds, 104 days). A larger number is no record of a real run,
/// and sums and successors of numbers below it cannot overflow.
pub const MAX_NUMBER: u64 = 1 << 53;

pub(super) fn in_range(line: usize, what: &str, number: u64) -> Result<(), Malformed> {
    if number > MAX_NUMBER {
        return Err(Malformed::at(
            line,
            format!("{what} {number} is out of range (at most 2^53)"),
        ));
    }
    Ok(())
}

pub(super) fn server_lease_in_range(
    line: usize,
    server: &crate::lease_claims::ServerLease,
) -> Result<(), Malformed> {
    in_range(line, "asked_at", server.asked_at)?;
    in_range(line, "remaining_ms", server.remaining_ms.unwrap_or(0))?;
    in_range(line, "ended_by", server.ended_by.unwrap_or(0))
}

pub(super) fn lease_in_range(line: usize, lease: &Lease) -> Result<(), Malformed> {
    in_range(line, "live_until", lease.live_until)?;
    in_range(line, "expires_by", lease.expires_by.unwrap_or(0))
}
