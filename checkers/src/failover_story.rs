//! The steps a story of an overlap lost in a failover adds: each leadership move that carried
//! the lock's leader away from the server that granted the earlier hold, and the later grant
//! by the new leader (the rule is in `overlap_cause`).

use crate::model::Hold;
use crate::overlap_cause;
use crate::story::{who, Teller};
use crate::words::seconds;

impl Teller<'_> {
    /// The leadership moves that lost `a`'s grant before `b` was granted.
    pub(crate) fn leadership_moved(&mut self, a: &Hold, b: &Hold) {
        let Some(moves) = overlap_cause::failover(self.model, a, b) else {
            return;
        };
        // Told when the fault hit the old leader, the moment the move began: the new leader
        // may grant before the stop names it.
        for m in &moves {
            self.cause(
                m.fault.start,
                format!(
                    "the {} hit the leader {}: leadership moved to {}, named at {} before the \
                     fault healed",
                    m.fault.describe(),
                    m.from.describe(),
                    m.to.describe(),
                    seconds(m.by)
                ),
            );
        }
    }

    /// That `b` came from the new leader, told right after its grant.
    pub(crate) fn granted_by_new_leader(&mut self, a: &Hold, b: &Hold) {
        let granted_by = |h: &Hold| h.granted_by().unwrap_or_default().to_string();
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
