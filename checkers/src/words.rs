//! How the checkers say a time, a token and a count, shared by every checker that tells what it
//! found.

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

/// `1 hold`, `2 holds`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The text with its first letter in capitals.
pub fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}
