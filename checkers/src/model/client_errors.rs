//! What the clients said when an acquire did not succeed: the errors of refused and unknown
//! acquires, counted by their text. A lock that no one ever gets says why here (a library that
//! failed half-way through its acquire, say), and the verdict's reasons quote it.

use serde::{Deserialize, Serialize};

use crate::words::seconds;

/// At most this many different texts are kept; the rest are only counted.
const KEPT: usize = 6;
/// An error's text is cut to this many characters.
const LONGEST: usize = 200;

/// `text`'s first `LONGEST` characters.
fn cut(text: &str) -> &str {
    text.char_indices()
        .nth(LONGEST)
        .map_or(text, |(end, _)| &text[..end])
}

/// One error text and how often it came.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientError {
    pub text: String,
    pub count: u64,
    /// The first client that gave it, and when.
    pub process: u64,
    pub first_at: u64,
    /// Whether it came with an `info` (outcome unknown) rather than a `fail`.
    pub unknown: bool,
}

/// The errors of the acquires that did not succeed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientErrors {
    pub kept: Vec<ClientError>,
    /// Errors whose text was not kept (more than `KEPT` different ones).
    pub others: u64,
}

impl ClientErrors {
    pub(crate) fn add(&mut self, text: &str, process: u64, at: u64, unknown: bool) {
        // Compared as a slice of the line, copied only when kept: one refusal in every few
        // lines, each an allocation before.
        let text = cut(text);
        if let Some(e) = self
            .kept
            .iter_mut()
            .find(|e| e.text == text && e.unknown == unknown)
        {
            e.count += 1;
        } else if self.kept.len() < KEPT {
            self.kept.push(ClientError {
                text: text.to_string(),
                count: 1,
                process,
                first_at: at,
                unknown,
            });
        } else {
            self.others += 1;
        }
    }

    /// "the clients' acquires said: `ResponseError: ...` (answered unknown, 37 times, first by
    /// client 2 at 0.510 s); `held by another client` (refused, 402 times, ...)", the most
    /// frequent first; `None` when they said nothing.
    pub fn words(&self) -> Option<String> {
        if self.kept.is_empty() {
            return None;
        }
        let mut kept: Vec<&ClientError> = self.kept.iter().collect();
        // The unknown ones first: a refusal's text is most often the lock being taken.
        kept.sort_by_key(|e| (!e.unknown, std::cmp::Reverse(e.count)));
        let said: Vec<String> = kept
            .iter()
            .map(|e| {
                format!(
                    "`{}` ({}, {} time{}, first by client {} at {})",
                    e.text,
                    if e.unknown {
                        "answered unknown"
                    } else {
                        "refused"
                    },
                    e.count,
                    if e.count == 1 { "" } else { "s" },
                    e.process,
                    seconds(e.first_at)
                )
            })
            .collect();
        let others = match self.others {
            0 => String::new(),
            n => format!("; and {n} more of other texts"),
        };
        Some(format!(
            "the clients' acquires said: {}{others}",
            said.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_cut_at_its_200th_character_as_before() {
        let long = "é".repeat(LONGEST + 5);
        for text in ["", "held", &"x".repeat(LONGEST), &long, &format!("a{long}")] {
            let before: String = text.chars().take(LONGEST).collect();
            assert_eq!(cut(text), before);
        }
    }

    #[test]
    fn texts_are_counted_by_their_cut_and_kind() {
        let mut errors = ClientErrors::default();
        let long = "y".repeat(LONGEST + 1);
        errors.add(&long, 1, 10, false);
        errors.add(&format!("{long}z"), 2, 20, false);
        errors.add(&long, 3, 30, true);
        assert_eq!(errors.kept.len(), 2);
        assert_eq!(errors.kept[0].count, 2);
        assert_eq!(errors.kept[0].text.chars().count(), LONGEST);
        assert_eq!((errors.kept[1].process, errors.kept[1].unknown), (3, true));
    }
}
