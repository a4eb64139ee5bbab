//! Why a user's client program (`--lock exec:...`) can no longer be spoken to: each kind one
//! sentence the client's log shows.

use std::time::Duration;

use serde_json::Value;

/// The protocol version this lockpick speaks: a program whose hello names another is broken.
pub const PROTOCOL_VERSION: u64 = 1;

/// Why a program can no longer be spoken to. Each is one sentence the client's log shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Breakage {
    CannotStart(String),
    /// It exited (or closed its stdout); `status` in words.
    Died(String),
    /// No line came before the deadline.
    Silent(Duration),
    /// A line that is not a protocol message, or not the one expected.
    Garbage {
        line: String,
        why: String,
    },
    /// Its hello names a version this lockpick does not speak.
    WrongVersion(Value),
}

impl Breakage {
    /// A short name of the kind of breakage, so that each kind is logged once.
    pub fn kind(&self) -> &'static str {
        match self {
            Breakage::CannotStart(_) => "cannot start",
            Breakage::Died(_) => "died",
            Breakage::Silent(_) => "silent",
            Breakage::Garbage { .. } => "garbage",
            Breakage::WrongVersion(_) => "version",
        }
    }
}

impl std::fmt::Display for Breakage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Breakage::CannotStart(why) => write!(f, "could not be started: {why}"),
            Breakage::Died(status) => write!(f, "exited ({status}) in the middle of the protocol"),
            Breakage::Silent(after) => write!(f, "did not answer within {after:?}"),
            Breakage::Garbage { line, why } => {
                let shown: String = line.chars().take(120).collect();
                write!(
                    f,
                    "printed {shown:?}, which is not a protocol message ({why})"
                )
            }
            Breakage::WrongVersion(v) => write!(
                f,
                "speaks protocol version {v}; this lockpick speaks version {PROTOCOL_VERSION}"
            ),
        }
    }
}
