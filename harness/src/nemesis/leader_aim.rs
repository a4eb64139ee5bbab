//! The leader aim: a fault begins on whichever server the service names as leader when it
//! opens, and its records carry the leadership it found and what became of it. Its `start`
//! gains `"leader": {node, address, term}`; its `stop` gains `"leader_after"` (asked of the
//! other servers, before the fault heals: the one hit may be dead, frozen or cut off and still
//! believe it leads) and `"leadership_moved"` (another node, or a later term; null when no
//! server could say). The fault itself is a server's fault, shared with the nemesis that hits a
//! random server (`kill-node`, `pause-node`), so both act the same way.

use anyhow::Result;
use lockpick_checkers::leadership::Leader;
use serde_json::json;

use super::aim::{Begun, OnServer};
use super::window::Window;
use super::{Context, Fault};
use crate::service::Leadership;

/// Begins `nemesis`'s fault on the server that leads now; nothing begins when no server can
/// say which leads (nothing to hit).
pub fn begin(nemesis: &dyn OnServer, window: &Window, ctx: &mut Context) -> Begun {
    let Some(leader) = ctx.cluster.leader() else {
        return Ok(None);
    };
    let evidence = json!({ "leader": described(ctx, &leader) });
    let fault = ctx.with_evidence(evidence, |ctx| nemesis.begin(&leader.node, window, ctx))?;
    Ok(fault.map(|inner| Box::new(OnLeader { hit: leader, inner }) as Box<dyn Fault>))
}

/// A server's fault on the node that led when it opened.
struct OnLeader {
    hit: Leadership,
    inner: Box<dyn Fault>,
}

impl Fault for OnLeader {
    fn tick(&mut self, ctx: &mut Context) -> Result<()> {
        self.inner.tick(ctx)
    }

    fn end(self: Box<Self>, ctx: &mut Context) -> Result<()> {
        // Asked before the fault heals: after, the old leader may win again and hide the move.
        let after = ctx.cluster.leader_apart_from(Some(&self.hit.node));
        let moved = after.as_ref().map(|after| moved(&self.hit, after));
        let evidence = json!({
            "leader_after": after.as_ref().and_then(|after| described(ctx, after)),
            "leadership_moved": moved,
        });
        let inner = self.inner;
        ctx.with_evidence(evidence, |ctx| inner.end(ctx))
    }
}

/// Leadership moved when another node leads, or the same one in a later term (it lost and
/// won again; only a service that counts its terms can tell that).
fn moved(before: &Leadership, after: &Leadership) -> bool {
    let later = matches!((before.term, after.term), (Some(b), Some(a)) if a > b);
    after.node != before.node || later
}

/// A leadership as the history records it (the checkers' own `Leader`, which reads it back):
/// the node, the address clients reach it at (as an acquire's `nodes` name it), and the
/// service's term.
fn described(ctx: &Context, leadership: &Leadership) -> Option<Leader> {
    Some(Leader {
        node: leadership.node.clone(),
        address: ctx.cluster.endpoint(&leadership.node)?.to_string(),
        term: leadership.term,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn led(node: &str, term: u64) -> Leadership {
        Leadership {
            node: node.to_string(),
            term: Some(term),
        }
    }

    #[test]
    fn leadership_moves_to_another_node_or_a_later_term() {
        assert!(moved(&led("n1", 2), &led("n2", 2)));
        assert!(moved(&led("n1", 2), &led("n1", 3)));
        assert!(!moved(&led("n1", 2), &led("n1", 2)));
        let untold = |node: &str| Leadership {
            node: node.to_string(),
            term: None,
        };
        assert!(moved(&untold("n1"), &untold("n2")));
        assert!(!moved(&untold("n1"), &untold("n1")));
    }
}
