//! Redlock as its description specifies it, over independent redis-servers: SET NX PX on every
//! node in parallel, each with a timeout much smaller than the TTL; the lock is acquired only on
//! a majority and only if time is left: validity = TTL − elapsed − drift, where drift is 1% of
//! the TTL plus 2 ms. On failure every node is unlocked; the worker retries after a random delay.
//! While held, a watchdog extends the lease on every node (compare-and-PEXPIRE) every third of
//! the TTL.
//!
//! Elapsed time is read on the client's skewable clock, which is what a clock nemesis aims at.
//! Redlock hands out no fencing token.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::clock::{RunClock, SkewableClock};
use crate::error::WorkloadError;
use crate::lease::{expires_by, Lease, OnRenewal, Renewed, Watchdog};
use crate::lock_client::{
    random_value, Grant, LockClient, Outcome, ReleaseFail, ReleaseFailKind, Released,
};
use crate::redis_node::RedisNode;

/// What a release that deleted the key on too few nodes, none of them unanswered, means: no
/// longer ours only if the nodes that may still hold the key (neither deleted nor answering
/// "not ours": those that refused or were not reached) are too few for a majority.
fn release_fail_kind(outcomes: &[Outcome<bool>]) -> ReleaseFailKind {
    let may_hold = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Fail(_)))
        .count();
    match may_hold < quorum(outcomes.len()) {
        true => ReleaseFailKind::NotOurs,
        false => ReleaseFailKind::Refused,
    }
}

pub struct Redlock {
    nodes: Vec<RedisNode>,
    /// The watchdog's own connections to the same servers.
    renewers: Arc<Mutex<Vec<RedisNode>>>,
    key: String,
    ttl: Duration,
    clock: SkewableClock,
    run_clock: RunClock,
    watchdog: Option<Watchdog>,
}

/// The drift allowance of a lease of `ttl`: 1% plus 2 ms, as Redlock's description says.
pub fn drift(ttl: Duration) -> Duration {
    Duration::from_millis(ttl.as_millis() as u64 / 100 + 2)
}

pub(crate) fn quorum(nodes: usize) -> usize {
    nodes / 2 + 1
}

impl Redlock {
    /// A client of the lock `key` on the servers at `addresses`, each request bounded by
    /// `node_timeout` (keep it a small fraction of `ttl`).
    pub fn new(
        addresses: &[String],
        key: &str,
        ttl: Duration,
        node_timeout: Duration,
        clock: SkewableClock,
        run_clock: RunClock,
    ) -> Result<Redlock, WorkloadError> {
        let connect = || -> Result<Vec<RedisNode>, WorkloadError> {
            Ok(addresses
                .iter()
                .map(|a| RedisNode::new(a, node_timeout))
                .collect::<Result<_, _>>()?)
        };
        Ok(Redlock {
            nodes: connect()?,
            renewers: Arc::new(Mutex::new(connect()?)),
            key: key.to_string(),
            ttl,
            clock,
            run_clock,
            watchdog: None,
        })
    }
}

/// Runs `request` on every node at once and returns the outcomes in node order.
pub(crate) fn on_every_node<T: Send>(
    nodes: &mut [RedisNode],
    request: impl Fn(&mut RedisNode) -> Outcome<T> + Sync,
) -> Vec<Outcome<T>> {
    thread::scope(|scope| {
        let handles: Vec<_> = nodes
            .iter_mut()
            .map(|node| scope.spawn(|| request(node)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Outcome::Info("panicked".into()))
            })
            .collect()
    })
}

/// Whether each node set (or extended) our key, from its answer of the key's remaining time.
fn granted(answers: &[Outcome<Option<u64>>]) -> Vec<Outcome<bool>> {
    answers
        .iter()
        .map(|a| match a {
            Outcome::Ok(remaining) => Outcome::Ok(remaining.is_some()),
            Outcome::Fail(e) => Outcome::Fail(e.clone()),
            Outcome::Info(e) => Outcome::Info(e.clone()),
        })
        .collect()
}

/// Each node's answer, its count of our key's remaining time turned into the moment it is
/// certainly gone, timed as that node answered: a slow node does not loosen the others.
fn gone_by_as_answered(answer: Outcome<Option<u64>>, clock: RunClock) -> Outcome<Option<u64>> {
    match answer {
        Outcome::Ok(remaining) => Outcome::Ok(remaining.map(|us| expires_by(clock.now(), us))),
        other => other,
    }
}

/// What each node can hold of one grant's key: by when it is certainly gone there (`None`: it
/// does not hold it), and the nodes that may still apply one of the grant's requests later
/// (`maybe_late`), which may hold it at any time.
pub struct NodeLeases {
    gone_by: Vec<Option<u64>>,
    maybe_late: BTreeSet<usize>,
}

impl NodeLeases {
    pub fn new(nodes: usize) -> NodeLeases {
        NodeLeases {
            gone_by: vec![None; nodes],
            maybe_late: BTreeSet::new(),
        }
    }

    /// One round of sets or extensions, as `gone_by_as_answered` gives them. A node that
    /// refused the request keeps what it had.
    pub fn record(&mut self, answers: &[Outcome<Option<u64>>]) {
        for (i, answer) in answers.iter().enumerate() {
            match answer {
                Outcome::Ok(gone_by) => self.gone_by[i] = *gone_by,
                Outcome::Fail(_) => {}
                Outcome::Info(_) => {
                    self.maybe_late.insert(i);
                }
            }
        }
    }

    /// The moment by which fewer than a quorum of the nodes can still hold the key: the
    /// quorum-th latest of their expiries, a node that may apply a request late counting as
    /// holding it for ever (`None` when a quorum may). A Redlock lease is held only on a
    /// quorum, so it has ended then. When fewer than a quorum hold it at all, the latest
    /// (`None` when none does: such a round lost the lock, and its answer says so).
    pub fn expires_by(&self) -> Option<u64> {
        // "For ever" as the latest moment of all.
        let mut ends: Vec<u64> = (0..self.gone_by.len())
            .filter_map(|i| match self.maybe_late.contains(&i) {
                true => Some(u64::MAX),
                false => self.gone_by[i],
            })
            .collect();
        ends.sort_unstable_by(|a, b| b.cmp(a));
        let q = quorum(self.gone_by.len());
        ends.get(q - 1)
            .or(ends.first())
            .copied()
            .filter(|end| *end != u64::MAX)
    }
}

impl NodeLeases {
    /// One round of extensions on every node, as `gone_by_as_answered` gives them: records it,
    /// and judges what it did to the lease, whose bounds are `bounds` but for the expiry bound,
    /// which only what the nodes can still hold decides (none when a quorum may apply a request
    /// late).
    pub fn extend(&mut self, answers: &[Outcome<Option<u64>>], mut bounds: Lease) -> Renewed {
        self.record(answers);
        bounds.expires_by = self.expires_by();
        judge_extension(&granted(answers), bounds)
    }
}

/// What one round of extensions on every node did to the lease, `lease` being its bounds if
/// the round extended it.
fn judge_extension(outcomes: &[Outcome<bool>], lease: Lease) -> Renewed {
    let quorum = quorum(outcomes.len());
    let count = |want: bool| {
        outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Ok(w) if *w == want))
            .count()
    };
    let (extended, gone) = (count(true), count(false));
    let unknown = outcomes.iter().any(|o| matches!(o, Outcome::Info(_)));
    if extended >= quorum {
        Renewed::Extended(lease)
    } else if gone >= quorum {
        if extended > 0 || unknown {
            Renewed::GaveUp
        } else {
            Renewed::Lost
        }
    } else if extended > 0 || unknown {
        Renewed::Unknown
    } else {
        Renewed::Unchanged
    }
}

impl LockClient for Redlock {
    fn try_acquire(&mut self, _wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        let value = random_value();
        let (key, ttl) = (self.key.clone(), self.ttl);
        let invoke = self.run_clock.now();
        let start = self.clock.now_ms();
        let run_clock = self.run_clock;
        let answers = on_every_node(&mut self.nodes, |node| {
            gone_by_as_answered(node.set_if_absent(&key, &value, ttl), run_clock)
        });
        let outcomes = granted(&answers);
        let elapsed = self.clock.now_ms() - start;
        let completion = self.run_clock.now();
        let ttl_ms = ttl.as_millis() as i64;
        let validity = ttl_ms - elapsed - drift(ttl).as_millis() as i64;
        let granted_by: Vec<String> = outcomes
            .iter()
            .zip(&self.nodes)
            .filter(|(o, _)| matches!(o, Outcome::Ok(true)))
            .map(|(_, n)| n.address().to_string())
            .collect();
        let quorum = quorum(self.nodes.len());
        if granted_by.len() >= quorum && validity > 0 {
            let mut leases = NodeLeases::new(self.nodes.len());
            leases.record(&answers);
            let mut lease = Lease::set_between(invoke, completion, ttl, drift(ttl), drift(ttl));
            lease.expires_by = leases.expires_by();
            let (renewers, handle, clock) =
                (Arc::clone(&self.renewers), value.clone(), self.run_clock);
            self.watchdog = Some(Watchdog::start(
                self.run_clock,
                lease,
                ttl / 3,
                ttl / 3,
                on_renewal,
                move || {
                    let mut nodes = renewers.lock().unwrap_or_else(|e| e.into_inner());
                    let invoke = clock.now();
                    let answers = on_every_node(&mut nodes, |node| {
                        gone_by_as_answered(node.extend_if_equal(&key, &handle, ttl), clock)
                    });
                    let completion = clock.now();
                    let bounds =
                        Lease::set_between(invoke, completion, ttl, drift(ttl), drift(ttl));
                    leases.extend(&answers, bounds)
                },
            ));
            return Outcome::Ok(Grant {
                token: None,
                handle: value,
                granted_by,
                lease,
                granted_after: None,
                lower_tokens_gone: false,
                server_lease: None,
            });
        }
        on_every_node(&mut self.nodes, |node| node.delete_if_equal(&key, &value));
        let why = format!(
            "{} of {} nodes granted it (quorum {quorum}), validity {validity} ms",
            granted_by.len(),
            self.nodes.len(),
        );
        // A SET that timed out may still land: then some nodes hold a key nobody believes in,
        // which only delays others; still, the outcome was not fully known.
        if outcomes.iter().any(|o| matches!(o, Outcome::Info(_))) {
            Outcome::Info(why)
        } else {
            Outcome::Fail(why)
        }
    }

    fn release(&mut self, grant: &Grant) -> Released {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        let key = self.key.clone();
        let outcomes = on_every_node(&mut self.nodes, |node| {
            node.delete_if_equal(&key, &grant.handle)
        });
        let deleted = outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Ok(true)))
            .count();
        if deleted >= quorum(self.nodes.len()) {
            Outcome::Ok(())
        } else if outcomes.iter().any(|o| matches!(o, Outcome::Info(_))) {
            Outcome::Info(format!("deleted on {deleted} nodes; others did not answer"))
        } else {
            Outcome::Fail(ReleaseFail::new(
                release_fail_kind(&outcomes),
                format!("not released on a majority (deleted on {deleted} nodes)"),
            ))
        }
    }
}

#[cfg(test)]
mod tests;
