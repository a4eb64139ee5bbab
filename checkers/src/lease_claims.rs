//! Claims are claims: an exec program's lease bounds are its own report, and the lock's server
//! may say otherwise. Where the history holds the server's count of a granted or renewed lease
//! (the `server_lease` of an acquire or a renewal, asked by lockpick right after it), the report
//! is checked against it:
//!
//! - the report said the lease was certainly live past the moment by which the server's count
//!   says it had ended (beyond an allowance for the two clocks' rates and the count's whole ms);
//! - or the report bounds the lease's end while the server holds the key with no expiry.
//!
//! A contradiction is told, never a violation, and does not by itself make the run unknown: no
//! verdict rests on lease bounds (two holders at once are a violation whatever the leases said,
//! and a proven overlap stays proven). What it changes is the overlap's cause: a report the
//! server contradicts proves no live lease, and the server's own count bounds the lease instead
//! (`overlap_cause`).

use serde::{Deserialize, Serialize};

pub use crate::model::server_lease::{contradiction, Contradiction, ServerLease};
use crate::model::Model;
use crate::words::seconds;
use crate::STORIES;

/// What the cross-check found over the whole history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeaseClaims {
    /// Grants whose report the server's count could be checked against.
    pub checked: usize,
    /// Grants whose report it contradicts.
    pub contradicted: usize,
    /// The first contradictions (at most `STORIES`), one line each.
    pub first: Vec<String>,
}

impl LeaseClaims {
    /// The one sentence every output gives, when there is a contradiction.
    pub fn note(&self) -> Option<String> {
        let first = self.first.first()?;
        Some(format!(
            "the client program reported lease bounds the server contradicts, in {} of {} \
             grants checked (first: {first}); the overlap causes use the server's count",
            self.contradicted, self.checked
        ))
    }
}

pub fn check(model: &Model) -> LeaseClaims {
    let mut claims = LeaseClaims::default();
    for hold in &model.holds {
        if hold.server_checked {
            claims.checked += 1;
        }
        if let Some(c) = &hold.contradiction() {
            claims.contradicted += 1;
            if claims.first.len() < STORIES {
                claims.first.push(format!(
                    "acquisition {} at {}: {}",
                    hold.acquisition,
                    seconds(c.asked_at),
                    c.said()
                ));
            }
        }
    }
    claims
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Lease;

    const MS: u64 = 1_000_000;

    fn server(asked_at: u64, remaining_ms: Option<u64>) -> ServerLease {
        ServerLease {
            asked_at: asked_at * MS,
            remaining_ms,
            ended_by: remaining_ms.map(|r| (asked_at + r) * MS),
        }
    }

    #[test]
    fn a_report_ten_times_the_servers_count_is_contradicted() {
        // Granted at 100 ms with a 10 s report; the server, asked at 102 ms, had 998 ms left.
        let lying = Lease {
            live_until: 10_100 * MS,
            expires_by: Some(10_102 * MS),
        };
        let c = contradiction(&lying, &server(102, Some(998))).unwrap();
        assert_eq!((c.client_ms, c.server_ms), (9_998, Some(998)));
        assert!(c.said().contains("9998 ms") && c.said().contains("998 ms left"));
    }

    #[test]
    fn an_honest_report_or_one_within_the_allowance_is_not() {
        let honest = Lease {
            live_until: 1_100 * MS,
            expires_by: Some(1_102 * MS),
        };
        assert_eq!(contradiction(&honest, &server(102, Some(998))), None);
        // 15 ms past the server's count: within 20 ms and 1 %.
        let close = Lease {
            live_until: 1_115 * MS,
            expires_by: None,
        };
        assert_eq!(contradiction(&close, &server(102, Some(998))), None);
        // A key set after ours expired (the holder frozen before the question): later still.
        assert_eq!(contradiction(&honest, &server(3_000, Some(900))), None);
    }

    #[test]
    fn a_bounded_report_against_a_key_with_no_expiry_is_contradicted() {
        let bounded = Lease {
            live_until: 1_100 * MS,
            expires_by: Some(1_102 * MS),
        };
        let c = contradiction(&bounded, &server(102, None)).unwrap();
        assert_eq!((c.client_ms, c.server_ms), (1_000, None));
        assert!(!c.server_bounds());
        let unbounded = Lease {
            expires_by: None,
            ..bounded
        };
        assert_eq!(contradiction(&unbounded, &server(102, None)), None);
    }
}
