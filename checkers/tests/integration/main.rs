//! The checkers' integration tests, one binary: hand-drawn and generated histories judged
//! through the crate's public API, one module per property.

mod common;

mod granted_twice;
mod hand_drawn;
mod lease_claims;
mod lease_end_time;
mod liveness;
mod lost_in_failover;
mod out_of_range;
mod overlap_causes;
mod proof;
mod properties;
mod regrants;
mod stuck_keys;
mod tokens;
mod zero_length_holds;
