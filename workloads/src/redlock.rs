//! Redlock as its description specifies it, over independent redis-servers: SET NX PX on every
//! node in parallel, each with a timeout much smaller than the TTL; the lock is acquired only on
//! a majority and only if time is left: validity = TTL − elapsed − drift, drift = 1% of the TTL
//! + 2 ms. On failure every node is unlocked; the worker retries after a random delay.
//!
//! Elapsed time is read on the client's skewable clock, which is what a clock nemesis aims at.
//! Redlock hands out no fencing token.

use std::thread;
use std::time::Duration;

use crate::clock::SkewableClock;
use crate::lock_client::{random_value, Grant, LockClient, Outcome};
use crate::redis_node::RedisNode;

pub struct Redlock {
    nodes: Vec<RedisNode>,
    key: String,
    ttl: Duration,
    clock: SkewableClock,
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
    ) -> Result<Redlock, String> {
        let nodes = addresses
            .iter()
            .map(|a| RedisNode::new(a, node_timeout).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        Ok(Redlock {
            nodes,
            key: key.to_string(),
            ttl,
            clock,
        })
    }

    fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    /// Runs `request` on every node at once and returns the outcomes in node order.
    fn on_every_node<T: Send>(
        &mut self,
        request: impl Fn(&mut RedisNode) -> Outcome<T> + Sync,
    ) -> Vec<Outcome<T>> {
        thread::scope(|scope| {
            let handles: Vec<_> = self
                .nodes
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
}

impl LockClient for Redlock {
    fn try_acquire(&mut self, _wait: Duration) -> Outcome<Grant> {
        let value = random_value();
        let (key, ttl) = (self.key.clone(), self.ttl);
        let start = self.clock.now_ms();
        let outcomes = self.on_every_node(|node| node.set_if_absent(&key, &value, ttl));
        let elapsed = self.clock.now_ms() - start;
        let ttl_ms = ttl.as_millis() as i64;
        let drift = ttl_ms / 100 + 2;
        let validity = ttl_ms - elapsed - drift;
        let granted_by: Vec<String> = outcomes
            .iter()
            .zip(&self.nodes)
            .filter(|(o, _)| matches!(o, Outcome::Ok(true)))
            .map(|(_, n)| n.address().to_string())
            .collect();
        if granted_by.len() >= self.quorum() && validity > 0 {
            return Outcome::Ok(Grant {
                token: None,
                handle: value,
                granted_by,
            });
        }
        self.on_every_node(|node| node.delete_if_equal(&key, &value));
        let why = format!(
            "{} of {} nodes granted it (quorum {}), validity {validity} ms",
            granted_by.len(),
            self.nodes.len(),
            self.quorum()
        );
        // A SET that timed out may still land: then some nodes hold a key nobody believes in,
        // which only delays others; still, the outcome was not fully known.
        if outcomes.iter().any(|o| matches!(o, Outcome::Info(_))) {
            Outcome::Info(why)
        } else {
            Outcome::Fail(why)
        }
    }

    fn release(&mut self, grant: &Grant) -> Outcome<()> {
        let key = self.key.clone();
        let outcomes = self.on_every_node(|node| node.delete_if_equal(&key, &grant.handle));
        let deleted = outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Ok(true)))
            .count();
        if deleted >= self.quorum() {
            Outcome::Ok(())
        } else if outcomes.iter().any(|o| matches!(o, Outcome::Info(_))) {
            Outcome::Info(format!("deleted on {deleted} nodes; others did not answer"))
        } else {
            Outcome::Fail(format!(
                "the lock was no longer ours on a majority (deleted on {deleted} nodes)"
            ))
        }
    }
}
