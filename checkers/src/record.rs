//! One history line decoded in place: the envelope (`index`, `time`, `process`, `type`, `f`)
//! into a typed record that borrows from the line, the `value` kept as its raw JSON text until
//! the model builder knows which shape to decode it into, so each value is decoded once, into
//! exactly the fields the checkers need, and nothing of the line outlives it.
//!
//! Operations already in memory ([`Op`]) go through the same record, their value borrowed as a
//! JSON tree, so a history checked from a file and the same history checked from a slice build
//! the same model by the same code.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use std::io::BufRead;

use crate::history::{count, not_an_operation, text_of, Lines, Malformed, Op, OpType, Process, F};

/// Who performed an operation, borrowed from the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Who<'a> {
    Client(u64),
    Named(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Who<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct WhoVisitor;
        impl<'de> Visitor<'de> for WhoVisitor {
            type Value = Who<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a client number or a name")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Who<'de>, E> {
                Ok(Who::Client(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Who<'de>, E> {
                u64::try_from(n)
                    .map(Who::Client)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Who<'de>, E> {
                Ok(Who::Named(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Who<'de>, E> {
                Ok(Who::Named(Cow::Owned(s.to_string())))
            }
        }
        deserializer.deserialize_any(WhoVisitor)
    }
}

/// An operation's `value`, not yet decoded: the text of a line, or the tree of an [`Op`].
#[derive(Clone, Copy, Debug)]
pub enum RawOpValue<'a> {
    Text(&'a RawValue),
    Tree(&'a Value),
    Absent,
}

impl<'a> RawOpValue<'a> {
    /// Decodes the value into the shape its operation calls for.
    #[inline(always)]
    pub fn decode<T: Deserialize<'a>>(self) -> Result<T, serde_json::Error> {
        match self {
            RawOpValue::Text(raw) => serde_json::from_str(raw.get()),
            RawOpValue::Tree(tree) => T::deserialize(tree),
            RawOpValue::Absent => T::deserialize(&Value::Null),
        }
    }
}

/// One line of the history, decoded in place.
#[derive(Clone, Debug)]
pub struct Record<'a> {
    pub index: u64,
    pub time: u64,
    pub process: Who<'a>,
    pub kind: OpType,
    pub f: F,
    pub value: RawOpValue<'a>,
}

/// The wire shape of a line, as serde reads it.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    index: u64,
    time: u64,
    #[serde(borrow)]
    process: Who<'a>,
    #[serde(rename = "type")]
    kind: OpType,
    f: F,
    #[serde(borrow, default)]
    value: Option<&'a RawValue>,
}

impl<'a> Record<'a> {
    /// Decodes one line (without its newline).
    pub fn parse(line: &'a str) -> Result<Record<'a>, serde_json::Error> {
        let envelope: Envelope<'a> = serde_json::from_str(line)?;
        Ok(Record {
            index: envelope.index,
            time: envelope.time,
            process: envelope.process,
            kind: envelope.kind,
            f: envelope.f,
            value: envelope.value.map_or(RawOpValue::Absent, RawOpValue::Text),
        })
    }

    /// The record of an operation already in memory.
    pub fn of_op(op: &'a Op) -> Record<'a> {
        Record {
            index: op.index,
            time: op.time,
            process: match &op.process {
                Process::Client(p) => Who::Client(*p),
                Process::Named(name) => Who::Named(Cow::Borrowed(name)),
            },
            kind: op.kind,
            f: op.f,
            value: RawOpValue::Tree(&op.value),
        }
    }

    /// Line number (1-based) of this record in a history written one op per line from 0.
    pub fn line(&self) -> usize {
        self.index as usize + 1
    }
}

impl<R: BufRead> Lines<R> {
    /// The next operation decoded in place, borrowing from the reader's line buffer: the
    /// streaming checker's way through a history, which keeps nothing of a line it has read.
    /// After an error the history is over for the caller (the error says where it broke).
    pub fn next_record(&mut self) -> Result<Option<(usize, Record<'_>)>, Malformed> {
        let Some(number) = self.next_line()? else {
            return Ok(None);
        };
        let record = Record::parse(text_of(&self.buffer, number)?)
            .map_err(|e| not_an_operation(number, e))?;
        count(&mut self.operations, number, record.index)?;
        Ok(Some((number, record)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_and_its_op_give_the_same_record() {
        let line = r#"{"index":3,"time":9,"process":2,"type":"ok","f":"acquire","value":{"acquisition":"2.1","token":7}}"#;
        let op: Op = serde_json::from_str(line).unwrap();
        let from_text = Record::parse(line).unwrap();
        let from_op = Record::of_op(&op);
        for record in [&from_text, &from_op] {
            assert_eq!((record.index, record.time), (3, 9));
            assert_eq!(record.process, Who::Client(2));
            assert_eq!((record.kind, record.f), (OpType::Ok, F::Acquire));
            let value: Value = record.value.decode().unwrap();
            assert_eq!(value["token"], 7);
        }
    }

    #[test]
    fn a_name_with_escapes_is_still_read() {
        let line = r#"{"time":1,"process":"nem\u0065sis","type":"info","f":"start"}"#;
        let record = Record::parse(line).unwrap();
        assert_eq!(record.process, Who::Named(Cow::Borrowed("nemesis")));
        assert!(matches!(record.value, RawOpValue::Absent));
    }

    #[test]
    fn wrong_types_are_errors() {
        for line in [
            r#"{"time":"soon","process":1,"type":"ok","f":"acquire"}"#,
            r#"{"time":1,"process":-1,"type":"ok","f":"acquire"}"#,
            r#"{"time":1,"process":[1],"type":"ok","f":"acquire"}"#,
            r#"{"time":1,"process":1,"type":"ok","f":"fly"}"#,
            r#"{"time":1,"process":1,"type":"ok"}"#,
            r#"{"time":1,"process":1,"type":"ok","f":"acquire","value":{"#,
        ] {
            assert!(Record::parse(line).is_err(), "{line}");
        }
    }
}
