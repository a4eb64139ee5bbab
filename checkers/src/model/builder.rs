//! Builds the model one operation at a time, so a history can be judged while it is read,
//! keeping only what the checkers need rather than every line.

use std::collections::HashMap;

use super::values::{
    in_range, lease_in_range, parse, server_lease_in_range, ClientValue, RenewValue,
};
use super::{AcquireAttempt, Hold, Lease, Model};
use crate::history::{Malformed, Op, OpType, F};
use crate::record::{Record, Who};

/// The lines of the harness, the resource and the nemesis.
mod named;

/// A client's open invocation: its completion must match it. Each client keeps its entry
/// (`open` false between operations) so that the acquisition's text is copied into a buffer
/// that lives as long as the client, not allocated once per operation.
struct Pending {
    open: bool,
    f: F,
    acquisition: String,
    time: u64,
    index: u64,
}

impl Default for Pending {
    fn default() -> Pending {
        Pending {
            open: false,
            f: F::Acquire,
            acquisition: String::new(),
            time: 0,
            index: 0,
        }
    }
}

/// Takes a history's operations in order and builds its model.
#[derive(Default)]
pub struct Builder {
    model: Model,
    pending: HashMap<u64, Pending>,
    /// Index into model.holds of the hold each client currently believes it has.
    holding: HashMap<u64, usize>,
    last_event: HashMap<u64, (u64, u64)>,
}

/// Builds the model of a history, or says which line makes that impossible.
pub fn build(ops: &[Op]) -> Result<Model, Malformed> {
    let mut builder = Builder::default();
    for op in ops {
        builder.push(op)?;
    }
    builder.finish()
}

impl Builder {
    /// Adds the next operation of the history.
    pub fn push(&mut self, op: &Op) -> Result<(), Malformed> {
        self.push_record(&Record::of_op(op))
    }

    /// Adds the next line of the history, decoded in place.
    pub fn push_record(&mut self, op: &Record<'_>) -> Result<(), Malformed> {
        in_range(op.line(), "time", op.time)?;
        self.model.operations += 1;
        self.model.end = self.model.end.max(op.time);
        match &op.process {
            Who::Client(p) => {
                self.last_event.insert(*p, (op.time, op.index));
                self.client_op(op, *p)
            }
            Who::Named(name) => self.named_op(op, name),
        }
    }

    /// The model of everything pushed, checked for consistency as a whole.
    pub fn finish(self) -> Result<Model, Malformed> {
        let Builder {
            mut model,
            pending,
            holding,
            last_event,
        } = self;
        for (p, i) in holding {
            let (time, index) = last_event[&p];
            let hold = &mut model.holds[i];
            hold.end = time;
            hold.end_index = index;
        }
        let mut incomplete: Vec<u64> = pending
            .values()
            .filter(|op| op.open)
            .map(|op| op.index)
            .collect();
        incomplete.sort_unstable();
        model.incomplete = incomplete;
        model.accesses.sort_by_key(|a| a.seq);
        if let Some(pair) = model.accesses.windows(2).find(|w| w[0].seq == w[1].seq) {
            return Err(Malformed::at(
                line_of_index(pair[1].index),
                format!(
                    "the resource reported sequence number {} twice",
                    pair[1].seq
                ),
            ));
        }
        for access in &model.accesses {
            if !model.hold_index.contains_key(&access.acquisition) {
                return Err(Malformed::at(
                    line_of_index(access.index),
                    format!(
                        "the resource saw acquisition {} that no client was granted",
                        access.acquisition
                    ),
                ));
            }
        }
        Ok(model)
    }

    fn end_hold(&mut self, i: usize, op: &Record<'_>, released: bool) {
        let hold = &mut self.model.holds[i];
        hold.end = op.time;
        hold.end_index = op.index;
        hold.released |= released;
    }

    fn client_op(&mut self, op: &Record<'_>, p: u64) -> Result<(), Malformed> {
        let line = op.line();
        if op.f == F::Renew {
            return self.renew(op, p);
        }
        if !matches!(op.f, F::Acquire | F::Read | F::Write | F::Release) {
            return Err(Malformed::at(
                line,
                format!("a client cannot perform {:?}", op.f),
            ));
        }
        let value: ClientValue = parse(op)?;
        if let Some(lease) = &value.lease {
            lease_in_range(line, lease)?;
        }
        in_range(line, "granted_after", value.granted_after.unwrap_or(0))?;
        if let Some(server) = &value.server_lease {
            server_lease_in_range(line, server)?;
        }
        // A client's operations come one after another, timed on one clock: its times never go
        // back (its background renewals aside).
        if let Some(last) = self.pending.get(&p).filter(|last| last.time > op.time) {
            return Err(Malformed::at(
                line,
                format!(
                    "client {p}'s time goes back: {} ns after {} ns at line {}",
                    op.time,
                    last.time,
                    line_of_index(last.index)
                ),
            ));
        }
        if op.kind == OpType::Invoke {
            if let Some(open) = self.pending.get(&p).filter(|open| open.open) {
                return Err(Malformed::at(
                    line,
                    format!(
                        "client {p} invoked again while its operation at line {} is open",
                        line_of_index(open.index)
                    ),
                ));
            }
            match op.f {
                F::Acquire => {
                    // A client that tries to acquire again no longer believes it holds the lock.
                    if let Some(i) = self.holding.remove(&p) {
                        self.end_hold(i, op, false);
                    }
                }
                F::Release => {
                    let Some(&i) = self.model.hold_index.get(&*value.acquisition) else {
                        return Err(Malformed::at(
                            line,
                            format!(
                                "release of acquisition {} that was never granted",
                                value.acquisition
                            ),
                        ));
                    };
                    if self.holding.get(&p) == Some(&i) {
                        self.holding.remove(&p);
                        self.end_hold(i, op, true);
                    }
                }
                _ => {}
            }
            let pending = self.pending.entry(p).or_default();
            pending.open = true;
            pending.f = op.f;
            pending.acquisition.clear();
            pending.acquisition.push_str(&value.acquisition);
            pending.time = op.time;
            pending.index = op.index;
            return Ok(());
        }

        let Some(invoke) = self.pending.get_mut(&p).filter(|open| open.open) else {
            return Err(Malformed::at(
                line,
                format!("client {p} completed an operation it never invoked"),
            ));
        };
        invoke.open = false;
        if op.kind == OpType::Info {
            self.model.answered_unknown += 1;
        }
        let (invoked_f, invoked_at, invoked_index) = (invoke.f, invoke.time, invoke.index);
        (invoke.time, invoke.index) = (op.time, op.index);
        if invoked_f != op.f || invoke.acquisition != value.acquisition {
            return Err(Malformed::at(
                line,
                format!(
                    "completion {:?} of acquisition {} does not match the invoke at line {}",
                    op.f,
                    value.acquisition,
                    line_of_index(invoked_index)
                ),
            ));
        }
        if op.f == F::Acquire && matches!(op.kind, OpType::Fail | OpType::Info) {
            let attempt = AcquireAttempt {
                process: p,
                invoked: invoked_at,
                completed: op.time,
                index: op.index,
                key_without_expiry: value
                    .server_lease
                    .filter(|s| s.ended_by.is_none())
                    .map(|s| s.asked_at),
            };
            if let Some(error) = value.error.as_deref() {
                let unknown = op.kind == OpType::Info;
                self.model.acquire_errors.add(error, p, op.time, unknown);
            }
            match op.kind {
                OpType::Fail => self.model.failed_acquires.push(attempt),
                _ => self.model.unknown_acquires.push(attempt),
            }
        }
        if op.f == F::Release && op.kind == OpType::Fail {
            self.model.release_failures.count(value.kind);
            if let Some(&i) = self.model.hold_index.get(&*value.acquisition) {
                let failed = super::ReleaseFailed { kind: value.kind };
                self.model.holds[i].release_failed = Some(failed);
            }
        }
        if op.f == F::Release && op.kind == OpType::Ok {
            if let Some(&i) = self.model.hold_index.get(&*value.acquisition) {
                self.model.holds[i].released_ok_at = Some(op.time);
            }
        }
        if op.f == F::Acquire && op.kind == OpType::Ok {
            if self.model.hold_index.contains_key(&*value.acquisition) {
                return Err(Malformed::at(
                    line,
                    format!("acquisition {} granted twice", value.acquisition),
                ));
            }
            let i = self.model.holds.len();
            let acquisition = value.acquisition.into_owned();
            self.model.hold_index.insert(acquisition.clone(), i);
            self.holding.insert(p, i);
            self.model.holds.push(Hold {
                acquisition,
                process: p,
                token: value.token,
                invoked: invoked_at,
                granted_after: value.granted_after.unwrap_or(0).max(invoked_at),
                start: op.time,
                end: op.time,
                released: false,
                released_ok_at: None,
                release_failed: None,
                start_index: op.index,
                end_index: op.index,
                lease: value.lease,
                renewals: 0,
                lower_tokens_gone: value.lower_tokens_gone,
                granted_by: value.nodes.one(),
                server_lease: value.server_lease,
                server_checked: value.server_lease.is_some(),
                contradiction: value.lease.zip(value.server_lease).and_then(
                    |(reported, server)| crate::lease_claims::contradiction(&reported, &server),
                ),
                unknown_renewal_at: None,
                regrants: Vec::new(),
                earlier: Vec::new(),
                lease_recorded: op.time,
            });
        }
        Ok(())
    }

    /// A background renewal of a lease: it moves the bounds of the acquisition's lease.
    fn renew(&mut self, op: &Record<'_>, p: u64) -> Result<(), Malformed> {
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
        let hold = match self.model.hold_index.get(&*value.acquisition) {
            Some(&i) if self.model.holds[i].process == p => &mut self.model.holds[i],
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
        if renewed.expires_by.is_none() && was_bounded && hold.unknown_renewal_at.is_none() {
            hold.unknown_renewal_at = Some(op.time);
        }
        in_range(line, "sent", value.sent.unwrap_or(0))?;
        // Sent after the lease had certainly ended: a grant of its own, a new segment.
        if let Some(after_end) = hold
            .regrant_at(value.sent)
            .filter(|_| op.time >= hold.lease_recorded)
        {
            let regrant = super::Regrant {
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
            hold.server_lease = value.server_lease;
        }
        hold.server_checked |= value.server_lease.is_some();
        if hold.contradiction.is_none() {
            hold.contradiction = value
                .server_lease
                .and_then(|server| crate::lease_claims::contradiction(&renewed, &server));
        }
        hold.lease_recorded = hold.lease_recorded.max(op.time);
        Ok(())
    }
}

fn line_of_index(index: u64) -> usize {
    index as usize + 1
}
