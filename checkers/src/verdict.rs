//! Three-valued verdicts, merged the way Jepsen merges them.

use serde::{Deserialize, Serialize};

/// A checker's answer. `Unknown` means the history could not support either answer (it was
/// malformed, or incomplete in a way that matters); it is never evidence of a violation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Validity {
    Valid,
    Invalid,
    /// Also what a verdict nobody gave reads as (a stored result that lacks it).
    #[default]
    Unknown,
}

impl Validity {
    /// Combines two verdicts: any invalid makes the whole invalid; otherwise any unknown makes
    /// it unknown.
    pub fn merge(self, other: Validity) -> Validity {
        use Validity::*;
        match (self, other) {
            (Invalid, _) | (_, Invalid) => Invalid,
            (Unknown, _) | (_, Unknown) => Unknown,
            (Valid, Valid) => Valid,
        }
    }

    /// The process exit code for this verdict (Jepsen's convention).
    pub fn exit_code(self) -> i32 {
        match self {
            Validity::Valid => 0,
            Validity::Invalid => 1,
            Validity::Unknown => 2,
        }
    }
}

impl Validity {
    /// The verdict's word, as `results.json` writes it.
    pub fn name(self) -> &'static str {
        match self {
            Validity::Valid => "valid",
            Validity::Invalid => "invalid",
            Validity::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Validity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Validity::*;

    #[test]
    fn invalid_beats_unknown_beats_valid() {
        assert_eq!(Valid.merge(Unknown), Unknown);
        assert_eq!(Unknown.merge(Invalid), Invalid);
        assert_eq!(Invalid.merge(Valid), Invalid);
        assert_eq!(Valid.merge(Valid), Valid);
    }
}
