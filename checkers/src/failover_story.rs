//! The steps a story of an overlap lost in a failover adds: each leadership move that carried
//! the lock's leader away from the server that granted the earlier hold, and the later grant
//! by the new leader (the rule is in `overlap_cause`).

use crate::model::Hold;
use crate::overlap_cause;
use crate::story::{who, Teller};
use crate::words::capitalised;

impl Teller<'_> {
    /// The leadership moves that lost `a`'s grant before `b` was granted, each at the moment
    /// the new leader was named.
    pub(crate) fn leadership_moved(&mut self, a: &Hold, b: &Hold) {
        let Some(moves) = overlap_cause::failover(self.model, a, b) else {
            return;
        };
        for m in &moves {
            self.cause(m.by, capitalised(&m.describe()));
        }
    }

    /// That `b` came from the new leader, told right after its grant.
    pub(crate) fn granted_by_new_leader(&mut self, a: &Hold, b: &Hold) {
        let granted_by = |h: &Hold| h.granted_by.clone().unwrap_or_default();
        self.cause(
            b.start,
            format!(
                "{} was granted by the new leader {}, which never had the grant {} had from {}",
                who(b),
                granted_by(b),
                who(a),
                granted_by(a)
            ),
        );
    }
}
