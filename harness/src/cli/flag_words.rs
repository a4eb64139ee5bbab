//! Knobs as flag words, through serde: a struct of knobs whose field names are its flags
//! (kebab-case) merges with a fallback and turns into `lockpick run` words without a list of
//! its fields. An unset knob is `null`; a list knob is unset while empty, and each of its items
//! is a flag of its own.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// `given`, each unset knob taken from `fallback`.
pub fn or<T: Serialize + DeserializeOwned>(given: &T, fallback: &T) -> T {
    let (mut merged, fallback) = (as_map(given), as_map(fallback));
    for (key, value) in fallback {
        let slot = merged.entry(key).or_insert(Value::Null);
        if unset(slot) {
            *slot = value;
        }
    }
    serde_json::from_value(Value::Object(merged)).expect("knobs read back what they wrote")
}

/// The set knobs as `--key value` words, each value one whole word, in the order of their keys
/// (whatever order the map keeps): the words are part of a stored command and of a sharded
/// comparison's fingerprint.
pub fn words<T: Serialize>(knobs: &T) -> Vec<String> {
    let word = |value: Value| match value {
        Value::String(text) => text,
        other => other.to_string(),
    };
    let mut knobs: Vec<(String, Value)> = as_map(knobs).into_iter().collect();
    knobs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (key, value) in knobs {
        let values = match value {
            Value::Null => Vec::new(),
            Value::Array(items) => items,
            one => vec![one],
        };
        for value in values {
            out.extend([format!("--{key}"), word(value)]);
        }
    }
    out
}

fn unset(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

fn as_map<T: Serialize>(knobs: &T) -> Map<String, Value> {
    match serde_json::to_value(knobs) {
        Ok(Value::Object(map)) => map,
        _ => unreachable!("a struct of knobs serialises to an object"),
    }
}
