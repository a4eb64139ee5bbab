//! A jammed lock: nobody holds it, every earlier lease has certainly ended, and yet acquire
//! after acquire is refused. A lock that a crash can jam for good is useless even if it never
//! lets two clients in, so this is a violation of its own kind, proven from the history alone.
//!
//! The proof, for a stretch of time from `free_from` on:
//! - no client believed it held the lock (every hold granted before had ended), and every
//!   earlier hold's lease had certainly ended: its release completed `ok`, or its latest lease
//!   record bounds it (`expires_by`), or its frozen holder's lease silence does. A hold with
//!   neither (a lock that records no lease end) can never be proven gone, so no jam is claimed
//!   after it;
//! - acquire attempts invoked after `free_from` kept completing `fail` (certainly refused);
//!   `info` outcomes (a timeout, a server out of reach) prove nothing and are not counted;
//! - for longer than the bound, not counting time in which a fault aimed at a server was active
//!   or had ended less than the recovery grace before: a server paused, cut off or restarted is
//!   expected to make the lock unavailable for a while, and that is told, not flagged.
//!
//! The bound defaults to three TTLs (at least 3 s), the grace to 5 s plus two TTLs (a ZooKeeper
//! ensemble elects a new leader in about 5 s); the setup line's `jam_bound_ms` overrides the
//! bound.

use serde::{Deserialize, Serialize};

use crate::model::{AcquireAttempt, Hold, Model};
use crate::overlap_cause;
use crate::stuck_keys::{self, JamCause};
use crate::verdict::Validity;
use excuses::{excused_spans, longest_unexcused};

/// What excuses a stretch of refusals.
mod excuses;

/// The shortest default bound.
const MIN_BOUND_MS: u64 = 3_000;
/// The recovery grace after a server fault stops, beyond two TTLs.
const GRACE_BASE_MS: u64 = 5_000;
const MS: u64 = 1_000_000;

/// One stretch in which the lock was free by every lease yet refused to everyone.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Jam {
    /// The hold whose lease ended last before the jam: most likely the one that jammed it.
    pub last_holder: Hold,
    /// From when every earlier lease had certainly ended and nobody believed it held the lock.
    pub free_from: u64,
    /// How `free_from` is known, in words (whose word the lease bound is).
    pub free_how: String,
    /// The completion of the last refused attempt counted.
    pub until: u64,
    /// When the lock was granted again, if it was.
    pub next_grant: Option<u64>,
    /// Refused attempts invoked after `free_from` and completed by `until`.
    pub failed_attempts: usize,
    /// Clients that were refused.
    pub refused_clients: Vec<u64>,
    /// The longest stretch, in ns, free of server faults and their recovery grace.
    pub unexcused: u64,
    /// Time of the first refused attempt counted (its index in the history, for the report).
    pub first_failure_index: u64,
    /// When the first refused attempt counted completed.
    pub first_refused_at: u64,
    /// Why nobody could take the lock: every lease had ended, or a key with no expiry stayed.
    pub cause: JamCause,
}

impl Jam {
    /// How long nobody could take the lock (ns).
    pub fn length(&self) -> u64 {
        self.until.saturating_sub(self.free_from)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Liveness {
    pub valid: Validity,
    /// The bound a jam must exceed, in ms, and the grace after a server fault.
    pub bound_ms: u64,
    pub grace_ms: u64,
    pub jams: Vec<Jam>,
    /// Why the run cannot show the lock stayed available, when it cannot: refused to everyone
    /// while certainly free at the end of the run, for less than the bound.
    pub unproven: Option<String>,
    /// How long (ns) the lock had been refused to everyone, while nobody held it, when the
    /// history ends, where no server fault excuses it: 0 when it was not. What the run's quiet
    /// phase looks at to decide whether to go on (`harness/src/run/quiet.rs`).
    #[serde(default)]
    pub refused_at_end: u64,
    /// The longest stretch (ns) in which the lock was refused to everyone while certainly free
    /// for longer than the bound, but which server faults and their recovery explain: expected
    /// unavailability, told rather than flagged. 0 when there was none.
    pub excused_wait: u64,
}

/// The bound a jam must exceed: the one given (`jam_bound_ms`), else three TTLs, at least 3 s.
pub fn bound_ms(ttl_ms: u64, given: Option<u64>) -> u64 {
    given.unwrap_or((3 * ttl_ms).max(MIN_BOUND_MS))
}

/// Finds every stretch in which the lock was certainly free and yet refused for longer than
/// the bound.
pub fn check(model: &Model) -> Liveness {
    let ttl_ms = model.setup.as_ref().map_or(0, |s| s.ttl_ms);
    let bound_ms = bound_ms(ttl_ms, model.setup.as_ref().and_then(|s| s.jam_bound_ms));
    let grace_ms = GRACE_BASE_MS + 2 * ttl_ms;
    let excused = excused_spans(model, grace_ms * MS);

    // Sorted only when out of order: a history's holds mostly come in order, and a sort
    // takes a scratch copy as large as the list.
    let (mut holds, in_order) = crate::overlapping_holders::in_order_of(&model.holds, |h| h.start);
    if !in_order {
        holds.sort_by_key(|h| h.start);
    }
    let mut refused: Vec<&AcquireAttempt> = model.failed_acquires.iter().collect();
    // Sorted only when out of order: a history's holds mostly come in order, and a sort
    // takes a scratch copy as large as the list.
    if !refused.is_sorted_by_key(|f| f.completed) {
        refused.sort_by_key(|f| f.completed);
    }
    let mut refused = refused.into_iter().peekable();
    let mut jams = Vec::new();
    let mut unproven = None;
    let mut excused_wait = 0;
    let mut refused_at_end = 0;
    // The time from which every hold granted before the current one is certainly gone: each by
    // its own proof, or by the next grant (the service let it go when it granted again).
    let mut earlier_gone: Option<u64> = Some(0);
    // The refusals of the gap after the current hold, and those of them after it was free:
    // reused from hold to hold, as the sweep allocates nothing per hold.
    let (mut in_gap, mut after) = (Vec::new(), Vec::new());
    for (i, hold) in holds.iter().enumerate() {
        let next_grant = holds.get(i + 1).map(|h| h.start);
        // A key the server holds with no expiry is let go by no lease: once its holder let
        // go of it, nobody holds the lock and nothing will free it.
        let stuck = stuck_keys::holder_left_key(hold);
        let (own, cause) = match &stuck {
            Some((t, _, cause)) => (Some(*t), cause.clone()),
            None => (certainly_gone_at(model, hold), JamCause::LeasesEnded),
        };
        let own = own.map(|t| t.max(hold.end));
        let free_from = earlier_gone.zip(own).map(|(a, b)| a.max(b));
        // For the next hold, this one is gone by its proof or, at the latest, that next grant.
        let by_next = match (own, next_grant) {
            (Some(t), Some(next)) => Some(t.min(next).max(hold.end)),
            (None, Some(next)) => Some(next.max(hold.end)),
            (t, None) => t,
        };
        earlier_gone = earlier_gone.zip(by_next).map(|(a, b)| a.max(b));
        let limit = next_grant.unwrap_or(u64::MAX);
        refusals_before(&mut refused, limit, &mut in_gap);
        let Some(free_from) = free_from else {
            continue;
        };
        if next_grant.is_some_and(|next| next <= free_from) {
            continue;
        }
        after.clear();
        after.extend(in_gap.iter().filter(|f| f.invoked >= free_from));
        // How the hold is known to be gone, in words, only for a jam.
        let how = || match stuck {
            Some((_, how, _)) => how,
            None => certainly_gone(model, hold).map_or_else(String::new, |(_, how)| how),
        };
        let Some(mut jam) = judge((free_from, how, hold), next_grant, &after, &excused) else {
            continue;
        };
        jam.cause = cause;
        sort(
            jam,
            (bound_ms, ttl_ms),
            &mut jams,
            &mut excused_wait,
            &mut unproven,
        );
    }
    // An acquire that failed half-way and left the key with no expiry, no one granted since:
    // what jammed a lock already found refused for good, or a jam of its own.
    if let Some((from, how, cause)) = stuck_keys::attempt_left_key(model) {
        let for_good = jams
            .iter_mut()
            .find(|j| j.next_grant.is_none() && j.free_from <= from && from <= j.until);
        match for_good {
            Some(jam) if jam.cause == JamCause::LeasesEnded => {
                jam.free_how = format!(
                    "{how} (before it, the last lease to end was {})",
                    jam.free_how
                );
                jam.cause = cause;
            }
            Some(_) => {}
            None => {
                let after: Vec<&AcquireAttempt> = model
                    .failed_acquires
                    .iter()
                    .filter(|f| f.invoked >= from)
                    .collect();
                let nobody = Hold::default();
                if let Some(mut jam) = judge((from, || how, &nobody), None, &after, &excused) {
                    jam.cause = cause;
                    refused_at_end = refused_at_end.max(jam.unexcused);
                    sort(
                        jam,
                        (bound_ms, ttl_ms),
                        &mut jams,
                        &mut excused_wait,
                        &mut unproven,
                    );
                }
            }
        }
    }
    Liveness {
        valid: if jams.is_empty() {
            Validity::Valid
        } else {
            Validity::Invalid
        },
        bound_ms,
        grace_ms,
        jams,
        unproven,
        excused_wait,
        refused_at_end,
    }
}

/// A stretch of refusals while the lock was free of holders: a jam when longer than the bound
/// where no server fault explains it, else told as an expected wait, or as unproven when the
/// run ended during it.
fn sort(
    jam: Jam,
    (bound_ms, ttl_ms): (u64, u64),
    jams: &mut Vec<Jam>,
    excused_wait: &mut u64,
    unproven: &mut Option<String>,
) {
    if jam.unexcused > bound_ms * MS {
        jams.push(jam);
        return;
    }
    if jam.length() > bound_ms * MS {
        *excused_wait = (*excused_wait).max(jam.length());
    }
    if jam.next_grant.is_none() && jam.unexcused >= (ttl_ms * MS).max(1_000 * MS) {
        // Refused to everyone, while free of holders, up to the end of the run: too short to
        // prove a jam, too long to call the lock live.
        *unproven = Some(format!(
            "the lock was refused to everyone for the last {} while {} (a jam needs over \
             {bound_ms} ms to be proven)",
            crate::words::seconds(jam.unexcused),
            match jam.cause {
                JamCause::LeasesEnded => "certainly free",
                _ => "nobody held it and the server held its key with no expiry",
            }
        ));
    }
}

/// When the lock service had certainly let go of `hold`: the time of [`certainly_gone`],
/// without its words.
fn certainly_gone_at(model: &Model, hold: &Hold) -> Option<u64> {
    let by_lease = overlap_cause::lease_ended_at(model, hold, u64::MAX);
    [hold.released_ok_at, by_lease].into_iter().flatten().min()
}

/// When the lock service had certainly let go of `hold`, and how that is known.
fn certainly_gone(model: &Model, hold: &Hold) -> Option<(u64, String)> {
    let by_release = hold
        .released_ok_at
        .map(|t| (t, "its release completed".to_string()));
    let by_lease = overlap_cause::lease_ended_by(model, hold, u64::MAX);
    [by_release, by_lease]
        .into_iter()
        .flatten()
        .min_by_key(|(t, _)| *t)
        .map(|(t, how)| (t, format!("client {}'s, {how}", hold.process)))
}

/// The refused attempts completed before `limit` not taken yet, into `found` (the holds are
/// swept in grant order, so each attempt belongs to the gap it completed in).
fn refusals_before<'a>(
    refused: &mut std::iter::Peekable<impl Iterator<Item = &'a AcquireAttempt>>,
    limit: u64,
    found: &mut Vec<&'a AcquireAttempt>,
) {
    found.clear();
    while let Some(f) = refused.next_if(|f| f.completed < limit) {
        found.push(f);
    }
}

/// The jam after `last`, if there is one; `how` gives the words of `free_from`, asked only for
/// a jam.
fn judge(
    (free_from, how, last): (u64, impl FnOnce() -> String, &Hold),
    next_grant: Option<u64>,
    refused: &[&AcquireAttempt],
    excused: &[(u64, u64)],
) -> Option<Jam> {
    let until = refused.iter().map(|f| f.completed).max()?;
    // The longest stretch of [free_from, until] outside every excused span, and the refusals
    // inside it: the jam must be shown by refusals where no server fault explains them.
    let (from, to) = longest_unexcused(free_from, until, excused).unwrap_or((until, until));
    let inside = refused
        .iter()
        .filter(|f| f.invoked >= from && f.completed <= to)
        .count();
    if refused.len() < 2 {
        return None;
    }
    // Fewer than two refusals where nothing excuses them show no jam there.
    let unexcused = if inside >= 2 { to - from } else { 0 };
    let mut clients: Vec<u64> = refused.iter().map(|f| f.process).collect();
    clients.sort_unstable();
    clients.dedup();
    Some(Jam {
        last_holder: last.clone(),
        free_from,
        free_how: how(),
        until,
        next_grant,
        failed_attempts: refused.len(),
        refused_clients: clients,
        unexcused,
        first_failure_index: refused.iter().map(|f| f.index).min().unwrap_or(0),
        first_refused_at: refused.iter().map(|f| f.completed).min().unwrap_or(until),
        cause: JamCause::LeasesEnded,
    })
}
