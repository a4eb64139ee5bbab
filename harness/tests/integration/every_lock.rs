//! Every lock on its real servers: valid without faults, and under a holder paused past its
//! lease the result the field argues about: the Redis family gets overlapping holders and stale
//! writes; etcd and ZooKeeper get overlapping holders too, but their tokens let a fencing
//! resource reject every stale write.

use crate::common;

use common::{run_line, Run};

fn without_faults(lock: &str) -> Run {
    let r = run_line(&format!("--lock {lock} --time-limit 6s --clients 5"));
    assert_eq!(r.code, 0, "{lock}:\n{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.overlaps(), 0, "{lock}: {}", r.stdout);
    assert_eq!(r.stale_writes(), 0, "{lock}: {}", r.stdout);
    assert!(r.holds() >= 10, "{lock}: only {} holds", r.holds());
    r
}

fn paused_holder(lock: &str, fencing: &str, seed: &str) -> Run {
    let r = run_line(&format!(
        "--lock {lock} --nemesis pause-holder --fencing {fencing} --time-limit 8s --ttl 1s \
         --pause 2500ms --fault-interval 500ms --seed {seed}"
    ));
    assert_eq!(
        r.code, 1,
        "{lock}: expected invalid\n{}\n{}",
        r.stdout, r.stderr
    );
    assert!(
        r.overlaps() > 0,
        "{lock}: no overlapping holders\n{}",
        r.stdout
    );
    r
}

/// With the fence on, the paused holder's late accesses are all rejected: none gets through.
fn the_fence_holds(lock: &str, seed: &str) {
    let r = paused_holder(lock, "on", seed);
    assert_eq!(r.stale_writes(), 0, "{}", r.stdout);
    assert_eq!(r.stale_reads(), 0, "{}", r.stdout);
    assert!(
        r.rejected() > 0,
        "the fence never had to act:\n{}",
        r.stdout
    );
}

/// The tokens of the grants, in the order the clients saw them: by `time`, since lines reach
/// the history through several pipes and its `index` need not follow `time` (a loaded machine
/// once wrote etcd's grant of token 30 after that of 35, which came later).
fn tokens(r: &Run) -> Vec<u64> {
    let mut grants: Vec<(u64, u64)> = r
        .history()
        .iter()
        .filter(|op| op["f"] == "acquire" && op["type"] == "ok")
        .map(|op| {
            let time = op["time"].as_u64().expect("a time");
            (time, op["value"]["token"].as_u64().expect("a token"))
        })
        .collect();
    grants.sort();
    grants.into_iter().map(|(_, token)| token).collect()
}

#[test]
fn redlock_without_faults_is_valid() {
    let r = without_faults("redlock");
    // Each grant names the majority that granted it.
    let grant = r
        .history()
        .into_iter()
        .find(|op| op["f"] == "acquire" && op["type"] == "ok");
    assert!(grant.unwrap()["value"]["nodes"].as_array().unwrap().len() >= 3);
}

#[test]
fn rslock_without_faults_is_valid() {
    without_faults("rslock");
}

/// Tokens only grow, in the order the grants were seen.
fn valid_with_growing_tokens(lock: &str) {
    let t = tokens(&without_faults(lock));
    assert!(
        t.windows(2).all(|w| w[0] < w[1]),
        "{lock} tokens in grant order: {t:?}"
    );
}

#[test]
fn etcd_without_faults_is_valid_and_its_tokens_grow() {
    valid_with_growing_tokens("etcd");
}

#[test]
fn zookeeper_without_faults_is_valid_and_its_tokens_grow() {
    valid_with_growing_tokens("zookeeper");
}

#[test]
fn redlock_gives_stale_writes_under_a_paused_holder() {
    let r = paused_holder("redlock", "off", "21");
    assert!(r.stale_writes() > 0, "{}", r.stdout);
}

#[test]
fn rslock_gives_stale_writes_under_a_paused_holder() {
    let r = paused_holder("rslock", "off", "22");
    assert!(r.stale_writes() > 0, "{}", r.stdout);
}

#[test]
fn etcd_unfenced_accepts_stale_writes_under_a_paused_holder() {
    let r = paused_holder("etcd", "off", "23");
    assert!(r.stale_writes() > 0, "{}", r.stdout);
    assert!(r.stdout.contains("try --fencing on"), "{}", r.stdout);
}

#[test]
fn etcd_fenced_rejects_every_stale_write_under_a_paused_holder() {
    the_fence_holds("etcd", "24");
}

#[test]
fn zookeeper_unfenced_accepts_stale_writes_under_a_paused_holder() {
    let r = paused_holder("zookeeper", "off", "25");
    assert!(r.stale_writes() > 0, "{}", r.stdout);
}

#[test]
fn zookeeper_fenced_rejects_every_stale_write_under_a_paused_holder() {
    the_fence_holds("zookeeper", "26");
}
