//! The story of a broken token promise: a token two clients were both handed, or one that
//! went down although its grant came after a higher one.

use crate::model::Model;
use crate::story::{seconds, token, who, Step, Story, Teller};
use crate::tokens::{TokenBreach, TokenViolation};

/// The story of a broken token promise.
pub fn of_token_violation(model: &Model, violation: &TokenViolation) -> Story {
    let (a, b) = (&violation.earlier, &violation.later);
    let mut t = Teller::new(model);
    t.acquired(a);
    t.acquired(b);
    let (text, title) = match violation.breach {
        TokenBreach::TokenReused => (
            format!(
                "token reused: {} and {} were both handed {}, so a fence cannot tell them apart",
                who(a),
                who(b),
                token(a)
            ),
            format!(
                "token reused: acquisitions {} and {} both got {}",
                a.acquisition,
                b.acquisition,
                token(a)
            ),
        ),
        TokenBreach::TokenWentBackwards => (
            format!(
                "token went backwards: {} asked for the lock at {}, after {} had been granted {}, yet got the lower {}",
                who(b),
                seconds(b.granted_after),
                who(a),
                token(a),
                token(b)
            ),
            format!(
                "token went backwards: acquisition {} got {} after {} got {}",
                b.acquisition,
                token(b),
                a.acquisition,
                token(a)
            ),
        ),
    };
    t.steps.push(Step {
        time: b.start,
        index: Some(b.start_index),
        text,
        violation: true,
        cause: false,
    });
    t.finish(violation.breach.name(), title)
}
