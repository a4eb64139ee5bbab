//! A line a client or the resource wrote, as the controller receives it: kept as text, to be
//! written to the history with its index put in front, and decoded only as far as the controller
//! itself needs (who, what, when, the acquisition, the token to repeat if the client dies, the
//! nodes that granted the lock). Decoding the head still reads the whole line, so a line that
//! is not a well-formed operation never reaches the history.

use std::borrow::Cow;

use lockpick_checkers::record::Who;
use lockpick_checkers::{Op, OpType, Process, F};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// What the controller reads of a received line.
#[derive(Clone, Debug, PartialEq)]
pub struct Head {
    pub time: u64,
    pub process: Process,
    pub kind: OpType,
    pub f: F,
    pub acquisition: Option<String>,
    /// The token the line carried (a number or `null`), as written.
    pub token: Option<Value>,
    /// The servers that granted the lock, when the client says.
    pub nodes: Vec<String>,
}

/// A received line: its text and its head.
#[derive(Clone, Debug)]
pub struct Received {
    text: String,
    /// Where the line's fields after `{` and any `"index":N,` begin.
    fields_at: usize,
    pub head: Head,
}

#[derive(Deserialize)]
struct WireHead<'a> {
    #[serde(default)]
    index: Option<u64>,
    time: u64,
    #[serde(borrow)]
    process: Who<'a>,
    #[serde(rename = "type")]
    kind: OpType,
    f: F,
    #[serde(borrow, default)]
    value: Option<WireValue<'a>>,
}

#[derive(Deserialize)]
struct WireValue<'a> {
    #[serde(borrow, default)]
    acquisition: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    token: Option<&'a RawValue>,
    #[serde(borrow, default)]
    nodes: Option<Vec<Cow<'a, str>>>,
}

impl Received {
    /// Decodes the head of one line; the error says why it is not an operation.
    pub fn parse(line: String) -> Result<Received, (String, serde_json::Error)> {
        let parsed = serde_json::from_str::<WireHead>(line.trim()).map(|wire| {
            let value = wire.value;
            let (acquisition, token, nodes) = match value {
                Some(v) => (v.acquisition, v.token, v.nodes.unwrap_or_default()),
                None => (None, None, Vec::new()),
            };
            let head = Head {
                time: wire.time,
                process: match wire.process {
                    Who::Client(p) => Process::Client(p),
                    Who::Named(name) => Process::Named(name.into_owned()),
                },
                kind: wire.kind,
                f: wire.f,
                acquisition: acquisition.map(Cow::into_owned),
                token: token.and_then(|raw| serde_json::from_str(raw.get()).ok()),
                nodes: nodes.into_iter().map(Cow::into_owned).collect(),
            };
            (head, wire.index.is_some())
        });
        let (head, has_index) = match parsed {
            Ok(parsed) => parsed,
            Err(e) => return Err((line, e)),
        };
        let trimmed = line.trim();
        let fields_at = match fields_after_index(trimmed, has_index) {
            Some(at) => at + (trimmed.as_ptr() as usize - line.as_ptr() as usize),
            None => return Ok(Received::rewritten(line, head)),
        };
        let end = fields_at + line[fields_at..].trim_end().len();
        let mut text = line;
        text.truncate(end);
        Ok(Received {
            text,
            fields_at,
            head,
        })
    }

    /// A line whose index is not where the fast path expects it (first, as every client
    /// writes it): decoded whole and written again, which is slow but always right.
    fn rewritten(line: String, head: Head) -> Received {
        let text = match serde_json::from_str::<Op>(line.trim()) {
            Ok(op) => op.to_json_line(),
            Err(_) => line,
        };
        let fields_at = fields_after_index(&text, true).unwrap_or(1);
        Received {
            text,
            fields_at,
            head,
        }
    }

    /// The line's fields after `{` and its index, without the closing of the line.
    pub fn fields(&self) -> &str {
        &self.text[self.fields_at..]
    }

    /// The operation a lock-aware nemesis is shown: the head, with the value it reads
    /// (`acquisition`, `nodes`).
    pub fn to_op(&self, index: u64) -> Op {
        let head = &self.head;
        let mut op = Op::new(
            head.time,
            head.process.clone(),
            head.kind,
            head.f,
            json!({ "acquisition": head.acquisition, "nodes": head.nodes }),
        );
        op.index = index;
        op
    }
}

/// Where the fields after the leading `"index":N,` begin (or right after `{` when the line has
/// no index); `None` when the line has an index somewhere else.
fn fields_after_index(line: &str, has_index: bool) -> Option<usize> {
    let body = line.strip_prefix('{')?;
    if !has_index {
        return Some(1);
    }
    let after_key = body.strip_prefix("\"index\":")?;
    let digits = after_key.bytes().take_while(u8::is_ascii_digit).count();
    let rest = after_key[digits..].strip_prefix(',')?;
    Some(line.len() - rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn received(line: &str) -> Received {
        Received::parse(line.to_string()).unwrap()
    }

    #[test]
    fn a_client_line_keeps_its_fields_and_drops_its_index() {
        let line = r#"{"index":0,"time":5,"process":3,"type":"ok","f":"acquire","value":{"acquisition":"3.1","token":7,"nodes":["10.0.0.2:6379"]}}"#;
        let r = received(&format!("{line}\r\n"));
        assert_eq!(&r.fields()[..9], r#""time":5,"#);
        assert!(r.fields().ends_with("]}}"));
        assert_eq!(r.head.process, Process::Client(3));
        assert_eq!((r.head.kind, r.head.f), (OpType::Ok, F::Acquire));
        assert_eq!(r.head.acquisition.as_deref(), Some("3.1"));
        assert_eq!(r.head.token, Some(json!(7)));
        assert_eq!(r.head.nodes, vec!["10.0.0.2:6379"]);
    }

    #[test]
    fn a_line_without_index_or_with_it_elsewhere_is_still_whole() {
        let none = received(r#"{"time":5,"process":"resource","type":"ok","f":"access"}"#);
        assert_eq!(
            none.fields(),
            r#""time":5,"process":"resource","type":"ok","f":"access"}"#
        );
        let late = received(r#"{"time":5,"index":0,"process":1,"type":"invoke","f":"read"}"#);
        let op: Op = serde_json::from_str(&format!("{{\"index\":9,{}", late.fields())).unwrap();
        assert_eq!((op.index, op.time, op.f), (9, 5, F::Read));
    }

    #[test]
    fn what_is_not_an_operation_is_refused() {
        for line in [
            "hello",
            r#"{"time":-1,"process":1,"type":"ok","f":"read"}"#,
            r#"{"process":1,"type":"ok","f":"read"}"#,
            r#"{"time":1,"process":1,"type":"ok","f":"read","value":{"acquisition":3}}"#,
            r#"{"time":1,"process":1,"type":"ok","f":"read"} trailing"#,
        ] {
            assert!(Received::parse(line.to_string()).is_err(), "{line}");
        }
    }
}
