use super::*;

const BOUNDS: Lease = Lease {
    live_until: 10,
    expires_by: Some(20),
};

fn outcomes(text: &str) -> Vec<Outcome<bool>> {
    text.chars()
        .map(|c| match c {
            'y' => Outcome::Ok(true),
            'n' => Outcome::Ok(false),
            'f' => Outcome::Fail("refused".into()),
            _ => Outcome::Info("timed out".into()),
        })
        .collect()
}

fn answers(text: &str, gone_by: &[u64]) -> Vec<Outcome<Option<u64>>> {
    text.chars()
        .zip(gone_by)
        .map(|(c, t)| match c {
            'y' => Outcome::Ok(Some(*t)),
            'n' => Outcome::Ok(None),
            'f' => Outcome::Fail("refused".into()),
            _ => Outcome::Info("timed out".into()),
        })
        .collect()
}

#[test]
fn a_lease_ends_when_fewer_than_a_quorum_can_hold_its_key() {
    let mut leases = NodeLeases::new(5);
    leases.record(&answers("yyyyn", &[50, 10, 40, 20, 90]));
    // After 20, only the nodes gone by 40 and 50 can hold it: fewer than three.
    assert_eq!(leases.expires_by(), Some(20));
    // A node that may apply a request late counts as holding it for ever.
    leases.record(&answers("yyyiy", &[50, 10, 40, 0, 90]));
    assert_eq!(leases.expires_by(), Some(50));
}

#[test]
fn a_refusing_node_keeps_what_it_had_and_a_late_quorum_unbounds_the_lease() {
    let mut leases = NodeLeases::new(3);
    leases.record(&answers("yyn", &[30, 20, 0]));
    assert_eq!(leases.expires_by(), Some(20));
    // The refused extension left node 1's key as it was; node 0 extended.
    leases.record(&answers("yfn", &[60, 0, 0]));
    assert_eq!(leases.expires_by(), Some(20));
    leases.record(&answers("iin", &[0, 0, 0]));
    assert_eq!(leases.expires_by(), None);
}

#[test]
fn fewer_holders_than_a_quorum_end_by_the_latest() {
    let mut leases = NodeLeases::new(5);
    leases.record(&answers("ynnyn", &[30, 0, 0, 70, 0]));
    assert_eq!(leases.expires_by(), Some(70));
    leases.record(&answers("nnnnn", &[0, 0, 0, 0, 0]));
    assert_eq!(leases.expires_by(), None);
}

#[test]
fn a_majority_extends_the_lease_with_its_bounds() {
    let mut leases = NodeLeases::new(5);
    let renewed = leases.extend(&answers("yyyfi", &[20, 20, 20, 0, 0]), BOUNDS);
    // The unanswered node counts as holding the key for ever; the third latest is still 20.
    assert_eq!(renewed, Renewed::Extended(BOUNDS));
    assert_eq!(leases.maybe_late, BTreeSet::from([4]));
}

#[test]
fn a_quorum_of_unanswered_nodes_unbounds_the_lease() {
    let mut leases = NodeLeases::new(5);
    leases.record(&answers("iifff", &[0; 5]));
    let renewed = leases.extend(&answers("yyyyi", &[20, 20, 20, 20, 0]), BOUNDS);
    let unbounded = Lease {
        expires_by: None,
        ..BOUNDS
    };
    assert_eq!(renewed, Renewed::Extended(unbounded));
    assert_eq!(leases.maybe_late, BTreeSet::from([0, 1, 4]));
}

#[test]
fn a_majority_that_lost_our_key_ends_the_renewals() {
    let mut leases = NodeLeases::new(5);
    assert_eq!(
        leases.extend(&answers("nnnff", &[0; 5]), BOUNDS),
        Renewed::Lost
    );
    assert_eq!(
        leases.extend(&answers("nnnyf", &[0, 0, 0, 20, 0]), BOUNDS),
        Renewed::GaveUp
    );
}

#[test]
fn a_minority_extension_leaves_the_lease_unknown() {
    let mut leases = NodeLeases::new(5);
    assert_eq!(
        leases.extend(&answers("yyfff", &[20, 20, 0, 0, 0]), BOUNDS),
        Renewed::Unknown
    );
    assert_eq!(
        leases.extend(&answers("fffff", &[0; 5]), BOUNDS),
        Renewed::Unchanged
    );
    // A round whose only news is an unanswered node is unknown too, and that node stays late.
    assert_eq!(
        leases.extend(&answers("fffif", &[0; 5]), BOUNDS),
        Renewed::Unknown
    );
    assert_eq!(leases.maybe_late, BTreeSet::from([3]));
}

#[test]
fn a_failed_release_is_not_ours_only_when_too_few_nodes_may_still_hold_the_key() {
    // Five nodes, quorum 3: nodes deleted or answering "not ours" hold nothing; those that
    // refused may still hold it.
    let kind = |text: &str| release_fail_kind(&outcomes(text));
    assert_eq!(kind("ynnff"), ReleaseFailKind::NotOurs, "2 may hold it");
    assert_eq!(kind("nnnnn"), ReleaseFailKind::NotOurs);
    assert_eq!(kind("ynfff"), ReleaseFailKind::Refused, "3 may hold it");
    assert_eq!(kind("fffff"), ReleaseFailKind::Refused);
}
