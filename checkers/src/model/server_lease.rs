//! The lock server's own count of a lease, as the history records it beside a client
//! program's report, and the contradiction between the two (`lease_claims` tells them).

use serde::{Deserialize, Serialize};

use super::Lease;

/// The lock server's count of a lease, as the history records it (`checkers/HISTORY.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerLease {
    /// When the server's answer came.
    pub asked_at: u64,
    /// The key's remaining time as the server counted it; `None`: it has no expiry.
    #[serde(default)]
    pub remaining_ms: Option<u64>,
    /// By the server's count the lease had certainly ended by then; `None`: never.
    #[serde(default)]
    pub ended_by: Option<u64>,
}

impl ServerLease {
    /// The count in ms behind a bound `ended_by`: as the server said it, or (a history that
    /// gives only the bound) as far as the bound reaches past the question.
    pub fn counted_ms(&self, ended_by: u64) -> u64 {
        self.remaining_ms
            .unwrap_or(ended_by.saturating_sub(self.asked_at) / 1_000_000)
    }
}

/// A report the server's count contradicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contradiction {
    /// When the server was asked.
    pub asked_at: u64,
    /// What the client program said at that moment: the lease certainly live this many ms more
    /// (or, against a key with no expiry, certainly ended within this many ms).
    pub client_ms: u64,
    /// What the server said: the key's remaining ms; `None`: no expiry.
    pub server_ms: Option<u64>,
}

/// The least a report must overshoot the server's count by to be contradicted: the count is
/// in whole ms, asked over a network, on the server's clock, so 20 ms and 1 % of the claim.
fn allowance(claim_ns: u64) -> u64 {
    20_000_000 + claim_ns / 100
}

/// The contradiction between an acquire's reported lease and the server's count, if any.
pub fn contradiction(reported: &Lease, server: &ServerLease) -> Option<Contradiction> {
    let at = server.asked_at;
    match server.ended_by {
        Some(ended_by) => {
            let claim = reported.live_until.saturating_sub(at);
            (reported.live_until > ended_by.saturating_add(allowance(claim))).then_some(
                Contradiction {
                    asked_at: at,
                    client_ms: claim / 1_000_000,
                    server_ms: Some(server.counted_ms(ended_by)),
                },
            )
        }
        None => reported.expires_by.map(|expires_by| Contradiction {
            asked_at: at,
            client_ms: expires_by.saturating_sub(at) / 1_000_000,
            server_ms: None,
        }),
    }
}

impl Contradiction {
    /// "client said 9990 ms, server said 998 ms".
    pub fn said(&self) -> String {
        match self.server_ms {
            Some(ms) => format!(
                "client said live {} ms more, server said {ms} ms left",
                self.client_ms
            ),
            None => format!(
                "client said ended within {} ms, server said the key has no expiry",
                self.client_ms
            ),
        }
    }

    /// Whether the server gave a bound of its own (rather than "no expiry").
    pub fn server_bounds(&self) -> bool {
        self.server_ms.is_some()
    }
}
