//! The step a story of an overlap adds when a renewal was the grant that broke mutual exclusion:
//! the renewal, sent after its lease had certainly ended, that took the lock while the other
//! holder's lease was live (the rule is in `overlap_cause`).

use crate::model::{Hold, Regrant};
use crate::story::{who, Step, Teller};
use crate::words::seconds;

impl Teller<'_> {
    /// The renewal of `a` that took the lock while `b`'s lease was live: the violating grant.
    pub(crate) fn regranted(&mut self, a: &Hold, b: &Hold, regrant: &Regrant) {
        let live = b.lease_at(regrant.sent).lease.map_or(String::new(), |l| {
            format!(" (certainly live until {})", seconds(l.live_until))
        });
        self.steps.push(Step {
            time: regrant.sent,
            index: Some(regrant.index),
            text: format!(
                "{} renewed at {}, after its lease had certainly ended by {}: the renewal took                  the lock again while {}'s lease{live} was live, a grant under a live lease",
                who(a),
                seconds(regrant.sent),
                seconds(regrant.after_end),
                who(b)
            ),
            violation: false,
            cause: true,
        });
    }
}
