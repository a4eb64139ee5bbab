//! Builds the model one operation at a time, so a history can be judged while it is read,
//! keeping only what the checkers need rather than every line.

use super::values::{in_range, lease_in_range, parse, server_lease_in_range, ClientValue};
use super::{AcquireAttempt, Hold, Model};
use crate::history::{Malformed, Op, OpType, F};
use crate::record::{Record, Who};

/// The clients' entries, by number.
mod clients;
/// Lookups in the index of holds, which enters them when asked.
mod lookup;
/// The lines of the harness, the resource and the nemesis.
mod named;
/// A client's background renewals.
mod renewal;

use clients::Clients;
use lookup::{find, granted_again, settle};
use renewal::renew;

/// A client's open invocation: its completion must match it. Each client keeps its entry
/// (`open` false between operations) so that the acquisition's text is copied into a buffer
/// that lives as long as the client, not allocated once per operation.
struct Pending {
    open: bool,
    f: F,
    acquisition: String,
    time: u64,
    index: u64,
    /// The hold an open release names, found at its invoke: its completion names the same.
    hold: Option<usize>,
}

impl Default for Pending {
    fn default() -> Pending {
        Pending {
            open: false,
            f: F::Acquire,
            acquisition: String::new(),
            time: 0,
            index: 0,
            hold: None,
        }
    }
}

/// What the builder keeps of one client between its lines, in one entry so that each line
/// looks its client up once.
#[derive(Default)]
struct Client {
    pending: Pending,
    /// Index into model.holds of the hold the client currently believes it has.
    holding: Option<usize>,
    /// Time and index of the client's latest line.
    last_event: (u64, u64),
}

/// Takes a history's operations in order and builds its model.
#[derive(Default)]
pub struct Builder {
    model: Model,
    clients: Clients,
    /// The hold of the latest access whose acquisition was found: the next access most often
    /// names it too (a holder reads, then writes), and is then found without a lookup.
    last_access_hold: Option<usize>,
    /// Positions in `model.accesses` of accesses whose acquisition no client had been granted
    /// when they were read (the resource's line came first), with that acquisition: `finish`
    /// looks them up again.
    unresolved_accesses: Vec<(usize, String)>,
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
        // A grant of an acquisition granted before is found when the holds are settled in the
        // index: the history's error is the earliest line, so that one comes first.
        self.take(op)
            .map_err(|e| settle(&mut self.model).err().unwrap_or(e))
    }

    /// The first grant of an acquisition granted before, if any (found once the holds are
    /// settled in the index, maybe lines later): the history's error, with its line's index.
    pub fn granted_twice(&mut self) -> Option<(u64, Malformed)> {
        let i = self.model.hold_index.settle(&self.model.holds)?;
        let hold = &self.model.holds[i];
        Some((hold.start_index, granted_again(hold)))
    }

    fn take(&mut self, op: &Record<'_>) -> Result<(), Malformed> {
        in_range(op.line(), "time", op.time)?;
        self.model.operations += 1;
        self.model.end = self.model.end.max(op.time);
        match &op.process {
            Who::Client(p) => {
                let client = self.clients.entry(*p);
                client.last_event = (op.time, op.index);
                client_op(&mut self.model, client, op, *p)
            }
            Who::Named(name) => self.named_op(op, name),
        }
    }

    /// The model of everything pushed, checked for consistency as a whole.
    pub fn finish(self) -> Result<Model, Malformed> {
        let Builder {
            mut model,
            clients,
            unresolved_accesses,
            ..
        } = self;
        settle(&mut model)?;
        for client in clients.values() {
            if let Some(i) = client.holding {
                let (time, index) = client.last_event;
                let hold = &mut model.holds[i];
                hold.end = time;
                hold.end_index = index;
            }
        }
        let mut incomplete: Vec<u64> = clients
            .values()
            .filter(|client| client.pending.open)
            .map(|client| client.pending.index)
            .collect();
        incomplete.sort_unstable();
        model.incomplete = incomplete;
        // Of the accesses read before their grant, the first in the resource's order that
        // names no grant at all.
        let mut ungranted: Option<(u64, u64, String)> = None;
        for (at, acquisition) in unresolved_accesses {
            let access = &mut model.accesses[at];
            match model.hold_index.get(&acquisition, &model.holds) {
                Some(i) => access.hold = i as u32,
                None if ungranted.as_ref().is_none_or(|(seq, ..)| access.seq < *seq) => {
                    ungranted = Some((access.seq, access.index, acquisition));
                }
                None => {}
            }
        }
        // The resource numbers its accesses as it applies them, and they mostly arrive so: then
        // one walk finds them in order and no number twice.
        let increasing = model.accesses.is_sorted_by(|a, b| a.seq < b.seq);
        if !increasing && !model.accesses.is_sorted_by_key(|a| a.seq) {
            model.accesses.sort_by_key(|a| a.seq);
        }
        let twice = match increasing {
            true => None,
            false => model.accesses.windows(2).find(|w| w[0].seq == w[1].seq),
        };
        if let Some(pair) = twice {
            return Err(Malformed::at(
                line_of_index(pair[1].index),
                format!(
                    "the resource reported sequence number {} twice",
                    pair[1].seq
                ),
            ));
        }
        if let Some((_, index, acquisition)) = ungranted {
            return Err(Malformed::at(
                line_of_index(index),
                format!("the resource saw acquisition {acquisition} that no client was granted"),
            ));
        }
        Ok(model)
    }
}

fn end_hold(model: &mut Model, i: usize, op: &Record<'_>, released: bool) {
    let hold = &mut model.holds[i];
    hold.end = op.time;
    hold.end_index = op.index;
    hold.released |= released;
}

/// A client's line, with its entry (already looked up).
fn client_op(
    model: &mut Model,
    client: &mut Client,
    op: &Record<'_>,
    p: u64,
) -> Result<(), Malformed> {
    let line = op.line();
    if op.f == F::Renew {
        return renew(model, op, p, client.holding);
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
    if let Some(last) = Some(&client.pending).filter(|last| last.time > op.time) {
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
        if let Some(open) = Some(&client.pending).filter(|open| open.open) {
            return Err(Malformed::at(
                line,
                format!(
                    "client {p} invoked again while its operation at line {} is open",
                    line_of_index(open.index)
                ),
            ));
        }
        let mut released = None;
        match op.f {
            F::Acquire => {
                // A client that tries to acquire again no longer believes it holds the lock.
                if let Some(i) = client.holding.take() {
                    end_hold(model, i, op, false);
                }
            }
            F::Release => {
                // Most often the hold the client believes it has, found without a lookup.
                let held = client
                    .holding
                    .filter(|&i| model.holds[i].acquisition == value.acquisition);
                let found = match held {
                    Some(i) => Some(i),
                    None => find(model, &value.acquisition)?,
                };
                let Some(i) = found else {
                    return Err(Malformed::at(
                        line,
                        format!(
                            "release of acquisition {} that was never granted",
                            value.acquisition
                        ),
                    ));
                };
                if client.holding == Some(i) {
                    client.holding = None;
                    end_hold(model, i, op, true);
                }
                released = Some(i);
            }
            _ => {}
        }
        let pending = &mut client.pending;
        pending.open = true;
        pending.f = op.f;
        pending.acquisition.clear();
        pending.acquisition.push_str(&value.acquisition);
        pending.time = op.time;
        pending.index = op.index;
        pending.hold = released;
        return Ok(());
    }

    let Some(invoke) = Some(&mut client.pending).filter(|open| open.open) else {
        return Err(Malformed::at(
            line,
            format!("client {p} completed an operation it never invoked"),
        ));
    };
    invoke.open = false;
    if op.kind == OpType::Info {
        model.answered_unknown += 1;
    }
    let (invoked_f, invoked_at, invoked_index) = (invoke.f, invoke.time, invoke.index);
    let released_hold = invoke.hold;
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
            model.acquire_errors.add(error, p, op.time, unknown);
        }
        match op.kind {
            OpType::Fail => model.failed_acquires.push(attempt),
            _ => model.unknown_acquires.push(attempt),
        }
    }
    if op.f == F::Release && op.kind == OpType::Fail {
        model.release_failures.count(value.kind);
        if let Some(i) = released_hold {
            let failed = super::ReleaseFailed { kind: value.kind };
            model.holds[i].set_release_failed(Some(failed));
        }
    }
    if op.f == F::Release && op.kind == OpType::Ok {
        if let Some(i) = released_hold {
            model.holds[i].released_ok_at = Some(op.time);
        }
    }
    if op.f == F::Acquire && op.kind == OpType::Ok {
        let i = model.holds.len();
        // An access names its hold by a u32 position (u32::MAX: not yet known); a history with
        // more grants (hundreds of GB of holds) is refused, never misread.
        if i >= u32::MAX as usize {
            return Err(Malformed::at(line, "more than 2^32 - 1 grants".to_string()));
        }
        // Checked against earlier grants when the index is settled (`settle`).
        model.hold_index.push(&value.acquisition);
        client.holding = Some(i);
        let acquisition = value.acquisition.into_owned();
        let mut hold = Hold {
            acquisition,
            process: p,
            token: value.token,
            invoked: invoked_at,
            granted_after: value.granted_after.unwrap_or(0).max(invoked_at),
            start: op.time,
            end: op.time,
            released: false,
            released_ok_at: None,
            start_index: op.index,
            end_index: op.index,
            lease: value.lease,
            renewals: 0,
            lower_tokens_gone: value.lower_tokens_gone,
            server_checked: value.server_lease.is_some(),
            lease_recorded: op.time,
            ..Hold::default()
        };
        hold.set_granted_by(value.nodes.one());
        hold.set_server_lease(value.server_lease);
        hold.set_contradiction(
            value
                .lease
                .zip(value.server_lease)
                .and_then(|(reported, server)| {
                    crate::lease_claims::contradiction(&reported, &server)
                }),
        );
        model.holds.push(hold);
    }
    Ok(())
}

fn line_of_index(index: u64) -> usize {
    index as usize + 1
}
