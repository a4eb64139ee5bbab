//! A client's background renewal of its lease, as the builder takes it: it moves the bounds of
//! the acquisition's lease, and one sent after that lease had certainly ended begins a segment
//! of its own (a regrant).

use super::super::values::{in_range, lease_in_range, parse, server_lease_in_range, RenewValue};
use super::super::{Lease, Model, Regrant};
use crate::history::{Malformed, OpType};
use crate::record::Record;

/// A background renewal of a lease: it moves the bounds of the acquisition's lease. `holding`
/// is the hold client `p` believes it has: most often the one renewed, found without a lookup.
pub(super) fn renew(
    model: &mut Model,
    op: &Record<'_>,
    p: u64,
    holding: Option<usize>,
) -> Result<(), Malformed> {
    let line = op.line();
    if op.kind != OpType::Ok {
        return Err(Malformed::at(
            line,
            format!("a renewal is recorded as ok, not {:?}", op.kind),
        ));
    }
    let value: RenewValue = parse(op)?;
    lease_in_range(line, &value.lease)?;
    if let Some(server) = &value.server_lease {
        server_lease_in_range(line, server)?;
    }
    let found = match holding.filter(|&i| model.holds[i].acquisition == value.acquisition) {
        Some(i) => Some(i),
        None => super::find(model, &value.acquisition)?,
    };
    let hold = match found {
        Some(i) if model.holds[i].process == p => &mut model.holds[i],
        _ => {
            return Err(Malformed::at(
                line,
                format!(
                    "client {p} renewed acquisition {} that it was never granted",
                    value.acquisition
                ),
            ))
        }
    };
    hold.renewals += 1;
    let renewed = value.lease;
    let was_bounded = hold.lease.is_some_and(|l| l.expires_by.is_some());
    if renewed.expires_by.is_none() && was_bounded && hold.unknown_renewal_at().is_none() {
        hold.set_unknown_renewal_at(Some(op.time));
    }
    in_range(line, "sent", value.sent.unwrap_or(0))?;
    // Sent after the lease had certainly ended: a grant of its own, a new segment.
    if let Some(after_end) = hold
        .regrant_at(value.sent)
        .filter(|_| op.time >= hold.lease_recorded)
    {
        let regrant = Regrant {
            sent: value.sent.unwrap_or(op.time),
            at: op.time,
            index: op.index,
            after_end,
        };
        hold.begin_segment(regrant, renewed);
    }
    hold.lease = Some(match hold.lease {
        None => renewed,
        Some(known) => Lease {
            live_until: known.live_until.max(renewed.live_until),
            expires_by: if op.time >= hold.lease_recorded {
                renewed.expires_by
            } else {
                known.expires_by
            },
        },
    });
    // The server's count describes the record it came with: the latest one's, or none.
    if op.time >= hold.lease_recorded {
        hold.set_server_lease(value.server_lease);
    }
    hold.server_checked |= value.server_lease.is_some();
    if hold.contradiction().is_none() {
        hold.set_contradiction(
            value
                .server_lease
                .and_then(|server| crate::lease_claims::contradiction(&renewed, &server)),
        );
    }
    hold.lease_recorded = hold.lease_recorded.max(op.time);
    Ok(())
}
