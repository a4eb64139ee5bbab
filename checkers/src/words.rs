//! How a story says a time and a token, shared by every checker that tells what it found.

use crate::model::Hold;

/// A time on the run clock, in seconds as people read it: `1.234 s`.
pub fn seconds(ns: u64) -> String {
    format!("{:.3} s", ns as f64 / 1e9)
}

/// A hold's token in words: `token 33`, or `no token`.
pub fn token(hold: &Hold) -> String {
    match hold.token {
        Some(t) => format!("token {t}"),
        None => "no token".to_string(),
    }
}
