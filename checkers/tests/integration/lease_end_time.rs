//! The liveness checker asks every hold when its lease had certainly ended through
//! `overlap_cause::lease_ended_at`, the time alone, and asks `lease_ended_by` for the words only
//! for a jam: the two must give the same time for any hold, lease, server count, contradiction,
//! freeze and lease silence.

use lockpick_checkers::fault::{FaultKind, Target};
use lockpick_checkers::model::{Contradiction, FaultWindow, Hold, Lease, Model, ServerLease};
use lockpick_checkers::overlap_cause::{lease_ended_at, lease_ended_by};
use lockpick_checkers::setup::Setup;
use proptest::prelude::*;

fn small() -> impl Strategy<Value = u64> {
    0..50u64
}

fn lease() -> impl Strategy<Value = Option<Lease>> {
    prop::option::of(
        (small(), prop::option::of(small())).prop_map(|(live, ends)| Lease {
            live_until: live,
            expires_by: ends,
        }),
    )
}

fn server_lease() -> impl Strategy<Value = Option<ServerLease>> {
    prop::option::of(
        (
            small(),
            prop::option::of(small()),
            prop::option::of(small()),
        )
            .prop_map(|(asked_at, remaining_ms, ended_by)| ServerLease {
                asked_at,
                remaining_ms,
                ended_by,
            }),
    )
}

fn contradiction() -> impl Strategy<Value = Option<Contradiction>> {
    prop::option::of((small(), small(), prop::option::of(small())).prop_map(
        |(asked_at, client_ms, server_ms)| Contradiction {
            asked_at,
            client_ms,
            server_ms,
        },
    ))
}

/// A pause of client 0 or 1 alone, or of both, that took effect or not, stopped or not.
fn fault() -> impl Strategy<Value = FaultWindow> {
    (
        0..3u64,
        small(),
        prop::option::of(small()),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(who, start, stop, effective)| FaultWindow {
            id: 0,
            fault: FaultKind::Pause,
            targets: match who {
                2 => vec![Target::Client(0), Target::Client(1)],
                n => vec![Target::Client(n)],
            },
            start,
            stop,
            nemesis: None,
            effective,
            leader: None,
            leader_after: None,
            leadership_moved: None,
        })
}

proptest! {
    #[test]
    fn the_time_alone_is_the_time_of_the_words(
        start in small(),
        lease in lease(),
        server in server_lease(),
        contradicted in contradiction(),
        faults in prop::collection::vec(fault(), 0..4),
        silence in prop::option::of(0..3u64),
        later_grant in prop::option::of(small()),
    ) {
        let mut hold = Hold::default();
        hold.acquisition = "0.1".to_string();
        hold.start = start;
        hold.lease = lease;
        hold.set_server_lease(server);
        hold.set_contradiction(contradicted);
        let mut model = Model::default();
        model.setup = Some(Setup { lease_silence_ms: silence, ..Setup::default() });
        model.faults = faults;
        model.holds = vec![hold.clone()];
        let later = later_grant.unwrap_or(u64::MAX);
        prop_assert_eq!(
            lease_ended_at(&model, &hold, later),
            lease_ended_by(&model, &hold, later).map(|(t, _)| t)
        );
    }
}
