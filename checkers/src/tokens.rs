//! Fencing tokens as a promise. A lock that hands out tokens promises that a later grant gets a
//! higher token: that is what lets a fenced resource reject a stale holder. Two acquisitions
//! with the same token break the promise (the fence cannot tell them apart), and so does a token
//! that goes down where the grant order is certain: A's acquire completed before B's acquire was
//! invoked (or before B's `granted_after`), yet token(A) > token(B).
//!
//! Checked only when the setup line says the lock gives tokens; holds without a token are left
//! out.

use serde::{Deserialize, Serialize};

use crate::model::{Hold, Model};
use crate::verdict::Validity;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenBreach {
    /// Two acquisitions were handed the same token.
    TokenReused,
    /// A later grant got a lower token than an earlier one.
    TokenWentBackwards,
}

impl TokenBreach {
    /// The story kind and summary word: `token-reused` / `token-went-backwards`.
    pub fn name(self) -> &'static str {
        match self {
            TokenBreach::TokenReused => "token-reused",
            TokenBreach::TokenWentBackwards => "token-went-backwards",
        }
    }
}

/// One broken promise: `earlier` was granted (or, for a reuse, acquired) first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenViolation {
    pub breach: TokenBreach,
    pub earlier: Hold,
    pub later: Hold,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TokenViolations {
    pub valid: Validity,
    /// Whether the lock gives tokens, so that there was a promise to check.
    pub checked: bool,
    /// Holds that carried a token at all (a client program may promise tokens and report none).
    pub holds_with_token: usize,
    /// Pairs of acquisitions that share a token.
    pub reused: usize,
    /// Acquisitions granted, certainly later, a lower token than an earlier one.
    pub went_backwards: usize,
    /// Of those, the ones whose token the same client had been handed before: a client's own
    /// old token again, after a higher one went to another client. Not a reuse (only a token
    /// two clients share is), but a grant after a higher one with a lower token.
    pub own_token_again: usize,
    pub violations: Vec<TokenViolation>,
}

/// Checks the tokens of every hold against the promise.
pub fn check(model: &Model) -> TokenViolations {
    let checked = model.setup.as_ref().is_some_and(|s| s.gives_tokens());
    let mut violations = Vec::new();
    let mut holds_with_token = None;
    if checked {
        // What the checks read of each hold, read once: the sorts and sweeps below then walk
        // this list, not the holds (each one a few cache lines apart).
        let mut with_token: Vec<Tokened> = model
            .holds
            .iter()
            .filter_map(|h| {
                h.token.map(|token| Tokened {
                    token,
                    start: h.start,
                    granted_after: h.granted_after,
                    hold: h,
                })
            })
            .collect();
        holds_with_token = Some(with_token.len());
        // Sorted only when out of order: a history's holds mostly come in order, and a sort
        // takes a scratch copy as large as the list.
        if !with_token.is_sorted_by_key(|t| (t.token, t.start)) {
            with_token.sort_by_key(|t| (t.token, t.start));
        }
        for pair in with_token.windows(2) {
            // One client handed its own token again (a library that re-takes the lock with the
            // same session, say, after an unlock whose answer was lost) broke no promise to
            // anyone else: only a token shared by two clients is a violation.
            if pair[0].token == pair[1].token && pair[0].hold.process != pair[1].hold.process {
                violations.push(violation(
                    TokenBreach::TokenReused,
                    pair[0].hold,
                    pair[1].hold,
                ));
            }
        }
        went_backwards(&with_token, &mut violations);
    }
    let count = |breach| violations.iter().filter(|v| v.breach == breach).count();
    let own_token_again = violations
        .iter()
        .filter(|v| v.breach == TokenBreach::TokenWentBackwards)
        .filter(|v| {
            model.holds.iter().any(|h| {
                h.process == v.later.process && h.token == v.later.token && h.start < v.later.start
            })
        })
        .count();
    TokenViolations {
        valid: if violations.is_empty() {
            Validity::Valid
        } else {
            Validity::Invalid
        },
        checked,
        holds_with_token: holds_with_token
            .unwrap_or_else(|| model.holds.iter().filter(|h| h.token.is_some()).count()),
        reused: count(TokenBreach::TokenReused),
        went_backwards: count(TokenBreach::TokenWentBackwards),
        own_token_again,
        violations,
    }
}

fn violation(breach: TokenBreach, earlier: &Hold, later: &Hold) -> TokenViolation {
    TokenViolation {
        breach,
        earlier: earlier.clone(),
        later: later.clone(),
    }
}

/// For each hold B, the highest token among holds whose acquire completed before B's grant
/// could have happened; one violation per B that got less. Sorting both ways makes it
/// O(n log n).
fn went_backwards(with_token: &[Tokened], violations: &mut Vec<TokenViolation>) {
    let mut by_completion: Vec<&Tokened> = with_token.iter().collect();
    // Sorted only when out of order: a history's holds mostly come in order, and a sort
    // takes a scratch copy as large as the list.
    if !by_completion.is_sorted_by_key(|t| t.start) {
        by_completion.sort_by_key(|t| t.start);
    }
    let mut by_grant: Vec<&Tokened> = with_token.iter().collect();
    // Sorted only when out of order: a history's holds mostly come in order, and a sort
    // takes a scratch copy as large as the list.
    if !by_grant.is_sorted_by_key(|t| (t.granted_after, t.start)) {
        by_grant.sort_by_key(|t| (t.granted_after, t.start));
    }
    let mut highest: Option<&Tokened> = None;
    let mut next = 0;
    for later in by_grant {
        while next < by_completion.len() && by_completion[next].start < later.granted_after {
            let candidate = by_completion[next];
            if highest.is_none_or(|h| candidate.token > h.token) {
                highest = Some(candidate);
            }
            next += 1;
        }
        if let Some(earlier) = highest {
            if earlier.token > later.token {
                violations.push(violation(
                    TokenBreach::TokenWentBackwards,
                    earlier.hold,
                    later.hold,
                ));
            }
        }
    }
}

/// A hold with a token, with the fields the sorts and sweeps compare copied beside it (32
/// bytes: the list exists beside the whole model, at the check's peak of memory).
struct Tokened<'a> {
    token: u64,
    start: u64,
    granted_after: u64,
    hold: &'a Hold,
}
