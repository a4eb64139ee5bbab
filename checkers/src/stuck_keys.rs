//! A stuck key: the lock server holds the lock's key with no expiry while nobody holds the
//! lock, so no lease will ever end it and every acquire is refused for good. Two ways show it:
//!
//! - the last holder let go of the lock (its process ended, or its release did not complete
//!   `ok`) and the server's count of its lease, asked after its latest lease record, said the
//!   key has no expiry: the lock is free by no lease, but nobody holds it;
//! - an acquire that did not succeed (a library that failed half-way: `SETNX` applied, its
//!   `EXPIRE` refused) and the server, asked right after its answer, held the key with no
//!   expiry, and no client was granted the lock from then on.
//!
//! Either is a jam once acquires are refused for longer than the bound (`liveness`), told
//! apart from a jam after every lease had ended by its `JamCause`.

use serde::{Deserialize, Serialize};

use crate::model::{AcquireAttempt, Hold, Model};
use crate::words::seconds;

/// Why the lock was free of holders and yet refused.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum JamCause {
    /// Every earlier lease had certainly ended.
    #[default]
    LeasesEnded,
    /// The last holder let go, and the server held its key with no expiry (asked then).
    HolderKeyWithoutExpiry { asked_at: u64 },
    /// An acquire that did not succeed left the key with no expiry behind.
    AttemptLeftKey {
        process: u64,
        completed: u64,
        index: u64,
        asked_at: u64,
        /// Whether its outcome was unknown (`info`) rather than refused (`fail`).
        unknown: bool,
    },
}

impl JamCause {
    /// What made the lock free of holders and yet taken, for titles and summaries.
    pub fn free_words(&self) -> &'static str {
        match self {
            JamCause::LeasesEnded => "nobody held it and every earlier lease had certainly ended",
            _ => "nobody held it and the lock server held its key with no expiry",
        }
    }
}

/// When `hold`'s client let go of the lock while the server held its key with no expiry: the
/// end of the hold, and how that is known. `None` when its release completed `ok` (the key
/// went with it) or the server gave no such word.
pub(crate) fn holder_left_key(hold: &Hold) -> Option<(u64, String, JamCause)> {
    if hold.released_ok_at.is_some() {
        return None;
    }
    let server = hold.server_lease().filter(|s| s.ended_by.is_none())?;
    let how = if hold.released {
        "its release did not complete"
    } else {
        "it let go without a release (its process ended, or it stopped believing it held it)"
    };
    Some((
        hold.end,
        format!(
            "client {}'s hold ended at {} ({how}), and the lock server, asked at {}, held its \
             key with no expiry: no lease would ever end it",
            hold.process,
            seconds(hold.end),
            seconds(server.asked_at)
        ),
        JamCause::HolderKeyWithoutExpiry {
            asked_at: server.asked_at,
        },
    ))
}

/// The first acquire that did not succeed and left the key with no expiry, after every hold had
/// ended and with no grant ever after: the moment the lock was stuck, and how that is known.
pub(crate) fn attempt_left_key(model: &Model) -> Option<(u64, String, JamCause)> {
    let with_key = || {
        model
            .unknown_acquires
            .iter()
            .map(|a| (a, true))
            .chain(model.failed_acquires.iter().map(|a| (a, false)))
            .filter(|(a, _)| a.key_without_expiry.is_some())
    };
    // Most histories have no such attempt: then the holds need no walk at all.
    with_key().next()?;
    let (last_hold_end, last_grant) = model.holds.iter().fold((0, 0), |(end, start), h| {
        (end.max(h.end), start.max(h.start))
    });
    let (attempt, unknown) = with_key()
        .filter(|(a, _)| a.completed >= last_hold_end && a.completed >= last_grant)
        .min_by_key(|(a, _)| a.completed)?;
    let asked_at = attempt.key_without_expiry?;
    Some((
        attempt.completed,
        words(attempt, unknown, asked_at),
        JamCause::AttemptLeftKey {
            process: attempt.process,
            completed: attempt.completed,
            index: attempt.index,
            asked_at,
            unknown,
        },
    ))
}

fn words(attempt: &AcquireAttempt, unknown: bool, asked_at: u64) -> String {
    format!(
        "client {}'s acquire was answered {} at {}, and the lock server, asked at {}, held the \
         lock's key with no expiry: the attempt left it behind, and no lease would ever end it",
        attempt.process,
        if unknown { "unknown" } else { "refused" },
        seconds(attempt.completed),
        seconds(asked_at)
    )
}
