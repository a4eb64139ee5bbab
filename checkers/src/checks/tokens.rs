//! The fencing-token checker as outputs tell it.

use super::{Checker, Finding, Sentence};
use crate::model::{Model, Setup};
use crate::tokens::TokenViolations;
use crate::words::count;

impl TokenViolations {
    /// Why a client's own old token counts as going backwards, not as reused, when any did.
    fn own_token_words(&self) -> String {
        match self.own_token_again {
            0 => String::new(),
            n => format!(
                " ({n} of them a client handed its own earlier token again after a higher one \
                 went to another client: a lower token after a higher one is going backwards, \
                 while reused counts only a token two clients share)"
            ),
        }
    }
}

impl Checker for TokenViolations {
    fn name(&self) -> &'static str {
        "fencing tokens"
    }

    fn finding(&self) -> Finding {
        if !self.checked {
            return Finding::NotChecked(
                "the lock hands out no fencing token: no promise to check".to_string(),
            );
        }
        Finding::broken_if(!self.violations.is_empty(), || {
            format!(
                "fencing tokens broke their promise: {} reused, {} went backwards{}",
                self.reused,
                self.went_backwards,
                self.own_token_words()
            )
        })
    }

    fn story_kinds(&self) -> &'static [&'static str] {
        &["token-reused", "token-went-backwards"]
    }

    fn summary_lines(&self, _setup: Option<&Setup>) -> Vec<String> {
        match self.finding() {
            Finding::Broken(line) => vec![format!("  {line}")],
            _ => Vec::new(),
        }
    }

    fn table_rows(&self) -> Vec<(&'static str, String)> {
        if !self.checked {
            return Vec::new();
        }
        vec![
            ("fencing tokens reused", self.reused.to_string()),
            (
                "fencing tokens gone backwards",
                self.went_backwards.to_string(),
            ),
        ]
    }

    fn headline(&self, model: &Model) -> Vec<Sentence> {
        if self.violations.is_empty() {
            return Vec::new();
        }
        let lock = model.setup.as_ref().map_or("the lock", |s| s.label());
        vec![Sentence::new(
            "tokens",
            format!(
                "{} reused and {} gone backwards{}: {lock} broke its fencing-token promise",
                count(self.reused, "token", "tokens"),
                self.went_backwards,
                self.own_token_words()
            ),
        )]
    }
}
