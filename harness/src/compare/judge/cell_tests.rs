use std::path::PathBuf;
use std::time::Duration;

use lockpick_checkers::setup::SetupRecord;
use lockpick_checkers::Validity;

use super::*;
use crate::compare::plan::matrix::Expectation;
use crate::report::summary_md::Counts;

fn figures(verdict: Validity, counts: Counts) -> Figures {
    Figures {
        verdict,
        counts,
        acquisitions: 10,
        p50_ms: None,
        p99_ms: None,
        unavailability: 0.0,
        unknown_reasons: Vec::new(),
        undecidable: 0,
        first_story: Some("client 1 paused → client 2 wrote".to_string()),
        first_stale_write: Some("client 1 wrote late".to_string()),
        first_grant_under_live_lease: None,
        first_story_short: Some("client 1 paused → !! client 2 wrote".to_string()),
        first_stale_write_short: None,
        told: None,
        servers: "redis 7.0.15, netns".to_string(),
        decided_at: None,
        dir: PathBuf::new(),
        command: Vec::new(),
        seed: 1,
        took: Duration::ZERO,
    }
}

fn overlapping() -> Counts {
    Counts {
        overlaps: 3,
        ..Counts::default()
    }
}

#[test]
fn the_servers_line_names_versions_programs_and_images() {
    let line = |value| serde_json::from_value::<SetupRecord>(value).unwrap();
    let netns = line(serde_json::json!({"runtime": "netns",
        "server_versions": {"redis": "7.0.15"},
        "server_bins": {"redis": "/opt/redis-server"}}));
    assert_eq!(
        Figures::servers_line(&netns, &[], false),
        "redis 7.0.15, netns"
    );
    assert_eq!(
        Figures::servers_line(&netns, &[], true),
        "redis 7.0.15 /opt/redis-server, netns"
    );
    let docker = line(serde_json::json!({"runtime": "docker",
        "server_versions": {"etcd": "3.5.9"},
        "runtime_facts": {"server_image": "quay.io/coreos/etcd:v3.5.9"}}));
    assert_eq!(
        Figures::servers_line(&docker, &[], false),
        "etcd 3.5.9, docker quay.io/coreos/etcd:v3.5.9"
    );
    assert_eq!(
        Figures::servers_line(&SetupRecord::default(), &[], false),
        "netns"
    );
    let library = ["redis-py 5.0.1".to_string()];
    assert_eq!(
        Figures::servers_line(&netns, &library, false),
        "redis 7.0.15, netns; client redis-py 5.0.1"
    );
}

#[test]
fn fenced_overlaps_meet_no_stale_write_but_break_valid() {
    let f = figures(Validity::Invalid, overlapping());
    assert_eq!(
        judge(Expectation::NoStaleWriteAccepted, &f),
        Judgement::Holds
    );
    assert_eq!(judge(Expectation::Invalid, &f), Judgement::Holds);
    let broken = judge(Expectation::Valid, &f);
    assert!(matches!(&broken, Judgement::Broken(w) if w.contains("client 2 wrote")));
}

#[test]
fn a_stale_write_breaks_its_expectation_with_the_story() {
    let counts = Counts {
        stale_writes: 2,
        ..overlapping()
    };
    let f = figures(Validity::Invalid, counts);
    let judged = judge(Expectation::NoStaleWriteAccepted, &f);
    assert!(
        matches!(&judged, Judgement::Broken(w) if w.contains("2 accepted") && w.contains("wrote late"))
    );
}

#[test]
fn an_unknown_run_proves_nothing_it_did_not_show() {
    let mut f = figures(Validity::Unknown, Counts::default());
    f.unknown_reasons = vec!["the history is incomplete".to_string()];
    for e in Expectation::ALL {
        assert!(matches!(judge(e, &f), Judgement::Unproven(_)), "{e}");
    }
    let mut undecided = figures(Validity::Invalid, overlapping());
    undecided.undecidable = 1;
    assert!(matches!(
        judge(Expectation::NoGrantUnderLiveLease, &undecided),
        Judgement::Unproven(_)
    ));
}

#[test]
fn a_known_unsafe_cell_that_shows_nothing_breaks_its_expectation() {
    let f = figures(Validity::Valid, Counts::default());
    assert!(matches!(
        judge(Expectation::Invalid, &f),
        Judgement::Broken(_)
    ));
    let worst = Judgement::Holds
        .and(Judgement::Unproven("u".into()))
        .and(Judgement::Holds);
    assert_eq!(worst, Judgement::Unproven("u".into()));
}

#[test]
fn recovers_breaks_on_a_jam_whatever_else_the_run_found() {
    let jammed = Counts {
        jams: 1,
        ..Counts::default()
    };
    let broken = judge(Expectation::Recovers, &figures(Validity::Invalid, jammed));
    assert!(
        matches!(&broken, Judgement::Broken(w) if w.contains("jammed 1 time(s)")),
        "{broken:?}"
    );
    // Overlaps and stale writes are not liveness: a lock that recovers holds it.
    let unsafe_but_live = figures(Validity::Invalid, overlapping());
    assert_eq!(
        judge(Expectation::Recovers, &unsafe_but_live),
        Judgement::Holds
    );
    assert_eq!(
        Expectation::try_from("no jam".to_string()),
        Ok(Expectation::Recovers)
    );
}
