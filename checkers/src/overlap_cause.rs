//! Why two clients held the lock at once, as far as the history proves it (the rules are in
//! `checkers/HISTORY.md`). With A the earlier holder and B the later one:
//!
//! - *granted under a live lease*: B's acquire completed while A's lease was certainly live
//!   (before A's latest `live_until`), and the grants certainly overlapped: A's acquire
//!   completed before B's grant could have happened, or B's own lease was certainly live when A
//!   learned of its grant. The lock service broke mutual exclusion.
//! - *the holder outlived its lease*: A's lease had certainly ended (its latest `expires_by`,
//!   tightened by a freeze of A's process and the lock's `lease_silence_ms`) by the earliest
//!   moment B could have been granted. No lease-based lock prevents that; fencing is the defence.
//!   Or by the service's own word: B's grant came only once every lock entry of a lower token
//!   was gone (`lower_tokens_gone`: etcd's lock, ZooKeeper's lowest node), and A's token is
//!   lower, so A's entry, and the lease it stood for, had ended by B's grant.
//! - *the lock was lost in a failover*: granted under a live lease, as above, and the history
//!   shows why: A's grant names one server X (its acquire's `nodes`), B's names another, Y, and
//!   the leader nemeses' records prove leadership moved from X to Y before B's grant (a fault
//!   naming X as leader when it opened and Y as the leader after, with `leadership_moved:
//!   true`; or a chain of such moves through other servers; the last of them opened no later
//!   than B's attempt began). The new leader never had A's grant, whether X granted it before
//!   the move (and lost it) or after it (a deposed primary still granting: a split brain).
//!   Only when all of this is proven; otherwise the overlap keeps the cause above.
//! - otherwise *undecidable*, with why.

use serde::{Deserialize, Serialize};

use crate::leadership::{self, Move};
use crate::model::{Hold, Model, Regrant};
use crate::words::seconds;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverlapCause {
    OutlivedLease,
    GrantedUnderLiveLease,
    /// Granted under a live lease by a new leader, after leadership moved away from the server
    /// that granted the earlier hold.
    LostInFailover,
    /// Also what a stored result that names no cause reads as.
    #[default]
    Undecidable,
}

impl OverlapCause {
    /// The class in words, for titles and tables.
    pub fn describe(self) -> &'static str {
        match self {
            OverlapCause::OutlivedLease => "the holder outlived its lease",
            OverlapCause::GrantedUnderLiveLease => "granted under a live lease",
            OverlapCause::LostInFailover => "the lock was lost in a failover",
            OverlapCause::Undecidable => "cause not decidable",
        }
    }
}

/// The earliest moment by which `first`'s lease had certainly ended, given that `later_grant`
/// is when the other holder may first have been granted, and how that bound is known.
pub fn lease_ended_by(model: &Model, first: &Hold, later_grant: u64) -> Option<(u64, String)> {
    // The lease in force at the other grant: a renewal sent after it had ended (a regrant)
    // began another, which says nothing of this one.
    let at = first.lease_at(later_grant);
    // A report the server's own count contradicts is no bound at all; against a key with no
    // expiry the report is all there is, and it says whose word it is.
    let contradicted = at.contradiction.filter(|c| c.server_bounds());
    let recorded = at
        .lease
        .and_then(|l| l.expires_by)
        .filter(|_| contradicted.is_none())
        .map(|t| {
            let word = match &at.contradiction {
                Some(c) => format!(
                    "{}, which the server contradicts ({})",
                    model.lease_word(),
                    c.said()
                ),
                None => model.lease_word().to_string(),
            };
            (t, format!("by its latest lease record: {word}"))
        });
    // The server's count of the latest lease record (none if that record came without one).
    let counted = at
        .server_lease
        .and_then(|s| s.ended_by.map(|t| (t, s.asked_at, s.counted_ms(t))))
        .map(|(t, asked, ms)| {
            let mut how = format!(
                "by the lock server's own count: its key had {ms} ms left at {}",
                seconds(asked)
            );
            if let Some(c) = contradicted {
                how = format!(
                    "{how}; the client program's report, which the server contradicts, said {} ms",
                    c.client_ms
                );
            }
            (t, how)
        });
    let silence = model.setup.as_ref().and_then(|s| s.lease_silence_ms);
    let target = crate::fault::Target::Client(first.process);
    // A frozen holder sends nothing: its lease outlives the freeze's start by at most the
    // lock's lease silence, if the freeze was still on when the other grant could happen.
    let frozen = silence.and_then(|silence| {
        model
            .faults
            .iter()
            .filter(|w| froze_through(w, first, later_grant))
            .map(|w| {
                let how = format!(
                    "{target} was frozen from {} and its lease outlives silence by at most {silence} ms",
                    seconds(w.start)
                );
                (w.start + silence * 1_000_000, how)
            })
            .min_by_key(|(t, _)| *t)
    });
    [recorded, counted, frozen]
        .into_iter()
        .flatten()
        .min_by_key(|(t, _)| *t)
}

/// The time of [`lease_ended_by`], without its words: the liveness checker asks it of every
/// hold, and wants the words only for a jam. A change to one is a change to both (the
/// integration test `lease_end_time` holds them equal).
pub fn lease_ended_at(model: &Model, first: &Hold, later_grant: u64) -> Option<u64> {
    let at = first.lease_at(later_grant);
    let contradicted = at.contradiction.filter(|c| c.server_bounds());
    let recorded = (at.lease)
        .and_then(|l| l.expires_by)
        .filter(|_| contradicted.is_none());
    let counted = at.server_lease.and_then(|s| s.ended_by);
    let silence = model.setup.as_ref().and_then(|s| s.lease_silence_ms);
    let frozen = silence.and_then(|silence| {
        (model.faults.iter())
            .filter(|w| froze_through(w, first, later_grant))
            .map(|w| w.start + silence * 1_000_000)
            .min()
    });
    [recorded, counted, frozen].into_iter().flatten().min()
}

/// Whether fault `w` froze `first`'s holder alone, took effect, began within its hold before
/// `later_grant` and was still on then.
fn froze_through(w: &crate::model::FaultWindow, first: &Hold, later_grant: u64) -> bool {
    w.freezes_alone(first.process)
        && w.effective == Some(true)
        && w.start >= first.start
        && w.start <= later_grant
        && w.stop.is_none_or(|stop| stop >= later_grant)
}

/// Classifies the overlap of `first` (the earlier holder) with `second`, both held until `to`.
/// The regrant is the renewal of `first` that took the lock under `second`'s live lease, when
/// that is the grant that broke mutual exclusion.
pub fn classify<'h>(
    model: &Model,
    first: &'h Hold,
    second: &Hold,
    to: u64,
) -> (OverlapCause, String, Option<&'h Regrant>) {
    let (cause, why) = by_lease(model, first, second);
    if cause != OverlapCause::GrantedUnderLiveLease {
        return match regrant_under_live_lease(first, second, to) {
            Some((regrant, live_until)) => (
                OverlapCause::GrantedUnderLiveLease,
                regrant_words(model, first, second, regrant, live_until, &why),
                Some(regrant),
            ),
            None => (cause, why, None),
        };
    }
    let (cause, why) = lost_in_failover(model, first, second, why);
    (cause, why, None)
}

/// The first renewal of `a`, sent after its lease had certainly ended, that came after `b`'s
/// grant was known and while `b`'s lease was certainly live, both still holding: a grant of
/// `a`'s own under `b`'s live lease. With the moment `b`'s lease was live until.
fn regrant_under_live_lease<'h>(a: &'h Hold, b: &Hold, to: u64) -> Option<(&'h Regrant, u64)> {
    a.regrants()
        .iter()
        .filter(|r| r.sent >= b.start && r.sent < to)
        .find_map(|r| {
            let live = b.lease_at(r.sent);
            let lease = live.lease.filter(|_| live.contradiction.is_none())?;
            (lease.live_until > r.sent).then_some((r, lease.live_until))
        })
}

fn regrant_words(
    model: &Model,
    a: &Hold,
    b: &Hold,
    regrant: &Regrant,
    b_live_until: u64,
    before: &str,
) -> String {
    format!(
        "client {}'s renewal of {} sent at {} came after its lease had certainly ended (by {}),          so it was a grant of its own: it took the lock while the lease of {} (client {},          granted by {}) was certainly live until {}; {} broke mutual exclusion (before it: {before})",
        a.process,
        a.acquisition,
        seconds(regrant.sent),
        seconds(regrant.after_end),
        b.acquisition,
        b.process,
        seconds(b.start),
        seconds(b_live_until),
        model.mutual_exclusion_breaker()
    )
}

/// A grant under a live lease, unless the history proves the lock was lost in a failover.
fn lost_in_failover(
    model: &Model,
    first: &Hold,
    second: &Hold,
    why: String,
) -> (OverlapCause, String) {
    let cause = OverlapCause::GrantedUnderLiveLease;
    match failover(model, first, second) {
        Some(moves) => (
            OverlapCause::LostInFailover,
            failover_words(first, second, &moves),
        ),
        None => (cause, why),
    }
}

/// The leadership moves that prove `second` was granted by a new leader that never had
/// `first`'s grant: `first` granted by one server, `second` by another, and leadership moved
/// from the one to the other before `second`'s attempt began. Whether the move came after
/// `first`'s grant (a primary lost before it replicated) or before it (a deposed primary still
/// granting, its grants never to reach the new one), the lock was lost in the failover. `None`
/// when the history does not prove it.
pub fn failover<'m>(model: &'m Model, first: &Hold, second: &Hold) -> Option<Vec<Move<'m>>> {
    let (x, y) = (first.granted_by()?, second.granted_by()?);
    if x == y {
        return None;
    }
    leadership::moves_between(&model.faults, x, y, second.granted_after)
}

fn failover_words(a: &Hold, b: &Hold, moves: &[Move]) -> String {
    let steps: Vec<String> = moves.iter().map(Move::describe).collect();
    let live = a.lease.map_or(String::new(), |l| {
        format!(", was certainly live until {}", seconds(l.live_until))
    });
    format!(
        "{} was granted by the new leader {} by {} while the lease of {}, granted by {}{live}: \
         {}, and the new leader never had the grant of {}",
        b.acquisition,
        b.granted_by().unwrap_or("?"),
        seconds(b.start),
        a.acquisition,
        a.granted_by().unwrap_or("?"),
        steps.join(", then "),
        a.acquisition,
    )
}

/// Classifies the overlap by the lease evidence alone.
fn by_lease(model: &Model, first: &Hold, second: &Hold) -> (OverlapCause, String) {
    let (a, b) = (first, second);
    if let Some(class) = attested(a, b) {
        return class;
    }
    // A's lease in force when B could have been granted: a later regrant of A's began
    // another, which B's grant came before.
    let a_at = a.lease_at(b.granted_after);
    let Some(lease) = a_at.lease else {
        return (
            OverlapCause::Undecidable,
            format!("no lease was recorded for acquisition {}", a.acquisition),
        );
    };
    // A report the server contradicts proves no live lease.
    let under_live = b.start < lease.live_until && a_at.contradiction.is_none();
    let b_at = b.lease_at(b.start);
    let grants_overlap = a.start <= b.granted_after
        || b_at
            .lease
            .is_some_and(|l| l.live_until > a.start && b_at.contradiction.is_none());
    let ended = lease_ended_by(model, a, b.granted_after);
    let outlived = ended.as_ref().filter(|(t, _)| *t <= b.granted_after);
    match (under_live && grants_overlap, outlived) {
        (true, Some(_)) => (
            OverlapCause::Undecidable,
            format!(
                "the lease records of {} and {} contradict each other",
                a.acquisition, b.acquisition
            ),
        ),
        (true, None) => (
            OverlapCause::GrantedUnderLiveLease,
            format!(
                "{} was granted by {} while the lease of {} was certainly live until {}: a second grant while the first lease was live, {} broke mutual exclusion",
                b.acquisition,
                seconds(b.start),
                a.acquisition,
                seconds(lease.live_until),
                model.mutual_exclusion_breaker()
            ),
        ),
        (false, Some((t, how))) => (
            OverlapCause::OutlivedLease,
            format!(
                "the lease of {} had certainly ended by {} ({how}), and {} was granted after {}",
                a.acquisition,
                seconds(*t),
                b.acquisition,
                seconds(b.granted_after)
            ),
        ),
        (false, None) => (
            OverlapCause::Undecidable,
            match a_at.contradiction {
                Some(c) => format!(
                    "the client program reported the lease of {} live until {}, which the server \
                     contradicts ({}): {}",
                    a.acquisition,
                    seconds(lease.live_until),
                    c.said(),
                    undecided(a, b, ended, under_live)
                ),
                None => undecided(a, b, ended, under_live),
            },
        ),
    }
}

/// The service's own word: B was granted only once every lock entry of a lower token was gone,
/// and A's token is lower, so A's lease had ended (its entry went with it) before B's grant.
/// Unless A's own protocol says its lease was certainly live when B learned of the grant: then
/// the service dropped a live lease's entry.
fn attested(a: &Hold, b: &Hold) -> Option<(OverlapCause, String)> {
    let (Some(ta), Some(tb)) = (a.token, b.token) else {
        return None;
    };
    if !b.lower_tokens_gone || ta >= tb {
        return None;
    }
    let a_at = a.lease_at(b.granted_after);
    let live = a_at
        .lease
        .filter(|l| b.start < l.live_until && a_at.contradiction.is_none());
    if let Some(lease) = live {
        return Some((
            OverlapCause::GrantedUnderLiveLease,
            format!(
                "{} was granted by {} once the lock entry of token {ta} was gone, while the lease \
                 of {} was certainly live until {}",
                b.acquisition,
                seconds(b.start),
                a.acquisition,
                seconds(lease.live_until)
            ),
        ));
    }
    Some((
        OverlapCause::OutlivedLease,
        format!(
            "the service granted {} (token {tb}) only once every lock entry of a lower token was \
             gone: the lease of {} (token {ta}) had ended before",
            b.acquisition, a.acquisition
        ),
    ))
}

fn undecided(a: &Hold, b: &Hold, ended: Option<(u64, String)>, under_live: bool) -> String {
    if under_live {
        return format!(
            "the grant order of {} and {} is uncertain, and the lease of {} may have ended before {} was granted",
            a.acquisition, b.acquisition, b.acquisition, a.acquisition
        );
    }
    match ended {
        None => match a.unknown_renewal_at() {
            Some(at) => format!(
                "no upper bound on the lease of {}: a renewal of it was reported with an unknown \
                 outcome at {}, and the lost request may still be applied, so no later record \
                 bounds it (a client program that says when it sent each renewal, \
                 `sent_after_ms` in workloads/PROTOCOL.md, keeps it bounded when that renewal \
                 came after the lease had ended)",
                a.acquisition,
                seconds(at)
            ),
            None => format!("no upper bound on the lease of {}", a.acquisition),
        },
        Some((t, _)) => format!(
            "the lease of {} may have lasted until {}, and {} was granted between {} and {}",
            a.acquisition,
            seconds(t),
            b.acquisition,
            seconds(b.granted_after),
            seconds(b.start)
        ),
    }
}
