//! What a history says happened, in the terms the checkers reason about: holds (from a client's
//! successful acquire until it stopped believing it held the lock), the resource's accesses in
//! apply order, and fault windows. Building the model is where a history is found malformed;
//! the checkers themselves only ever see a consistent model.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::history::{line_of, Malformed, Op, OpType, Process, F};

/// One successful acquisition, as its client believed it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hold {
    pub acquisition: String,
    pub process: u64,
    /// The fencing token the lock service handed out, if it hands any out.
    pub token: Option<u64>,
    /// When the successful acquire attempt was invoked: the grant happened after this.
    pub invoked: u64,
    /// When the client learned it held the lock (the acquire's `ok`).
    pub start: u64,
    /// When the client stopped believing it held the lock: its release invoke, or, if it never
    /// released, its next acquire invoke or its last event of all.
    pub end: u64,
    /// Whether the hold ended with a release invoke.
    pub released: bool,
    pub start_index: u64,
    pub end_index: u64,
}

impl Hold {
    /// True when this hold was certainly granted after `other` was: by token when both have
    /// one, else by real time (this attempt was invoked after the other's grant was known).
    pub fn granted_after(&self, other: &Hold) -> bool {
        match (self.token, other.token) {
            (Some(mine), Some(theirs)) => mine > theirs,
            _ => self.invoked > other.start,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    Read,
    Write,
}

/// One access as the resource applied or rejected it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Access {
    /// The resource's serial order.
    pub seq: u64,
    pub index: u64,
    pub time: u64,
    pub process: u64,
    pub acquisition: String,
    pub token: Option<u64>,
    pub kind: AccessKind,
    pub accepted: bool,
    /// The resource's value after the access.
    pub value: i64,
}

/// A fault from its start to its stop (or to the end of the history if it never stopped).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultWindow {
    pub id: u64,
    pub fault: String,
    pub targets: Vec<String>,
    pub start: u64,
    pub stop: Option<u64>,
}

impl FaultWindow {
    pub fn active_during(&self, from: u64, to: u64) -> bool {
        self.start <= to && self.stop.is_none_or(|stop| stop >= from)
    }

    pub fn describe(&self) -> String {
        format!("{} of {}", self.fault, self.targets.join(", "))
    }
}

/// The run's own description of itself, from the `setup` operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    #[serde(default)]
    pub lock: String,
    /// Which fencing token the lock gives, e.g. "none" or "the lock key's create revision".
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub ttl_ms: u64,
    /// "on" or "off": whether the resource rejects lower tokens.
    #[serde(default)]
    pub fencing: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Model {
    pub setup: Option<Setup>,
    pub holds: Vec<Hold>,
    pub accesses: Vec<Access>,
    pub faults: Vec<FaultWindow>,
    /// Indexes of client invocations that never completed (the client died or the run ended).
    pub incomplete: Vec<u64>,
    /// Time of the last operation.
    pub end: u64,
    /// What the final read of the resource saw, if the run made one.
    pub final_state: Option<FinalState>,
}

/// The resource's value and count of applied accesses, read after the clients stopped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FinalState {
    pub value: i64,
    pub applied: u64,
}

impl Model {
    pub fn hold(&self, acquisition: &str) -> Option<&Hold> {
        self.holds.iter().find(|h| h.acquisition == acquisition)
    }

    pub fn faults_during(&self, from: u64, to: u64) -> Vec<&FaultWindow> {
        self.faults
            .iter()
            .filter(|w| w.active_during(from, to))
            .collect()
    }
}

#[derive(Deserialize)]
struct ClientValue {
    acquisition: String,
    #[serde(default)]
    token: Option<u64>,
}

#[derive(Deserialize)]
struct AccessValue {
    seq: u64,
    process: u64,
    acquisition: String,
    #[serde(default)]
    token: Option<u64>,
    op: AccessKind,
    #[serde(default)]
    value: i64,
}

#[derive(Deserialize)]
struct FaultValue {
    id: u64,
    fault: String,
    #[serde(default)]
    targets: Vec<String>,
}

fn parse<T: for<'de> Deserialize<'de>>(op: &Op) -> Result<T, Malformed> {
    T::deserialize(&op.value).map_err(|e| {
        Malformed::at(
            line_of(op),
            format!("bad value for {:?} {:?}: {e}", op.kind, op.f),
        )
    })
}

/// Builds the model of a history, or says which line makes that impossible.
pub fn build(ops: &[Op]) -> Result<Model, Malformed> {
    let mut model = Model::default();
    // The open invocation of each client: completions pair with it, as in Jepsen.
    let mut pending: HashMap<u64, &Op> = HashMap::new();
    // Index into model.holds of the hold each client currently believes it has.
    let mut holding: HashMap<u64, usize> = HashMap::new();
    let mut by_acquisition: HashMap<String, usize> = HashMap::new();
    let mut last_event: HashMap<u64, (u64, u64)> = HashMap::new();

    for op in ops {
        model.end = model.end.max(op.time);
        match &op.process {
            // A renewal is lease evidence, not a step of the client's operations.
            Process::Client(_) if op.f == F::Renew => {}
            Process::Client(p) => {
                let p = *p;
                last_event.insert(p, (op.time, op.index));
                client_op(
                    &mut model,
                    op,
                    p,
                    &mut pending,
                    &mut holding,
                    &mut by_acquisition,
                )?;
            }
            Process::Named(name) => named_op(&mut model, op, name)?,
        }
    }

    for (p, i) in holding {
        let (time, index) = last_event[&p];
        let hold = &mut model.holds[i];
        hold.end = time;
        hold.end_index = index;
    }
    let mut incomplete: Vec<u64> = pending.values().map(|op| op.index).collect();
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
        if !by_acquisition.contains_key(&access.acquisition) {
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

fn line_of_index(index: u64) -> usize {
    index as usize + 1
}

fn client_op<'a>(
    model: &mut Model,
    op: &'a Op,
    p: u64,
    pending: &mut HashMap<u64, &'a Op>,
    holding: &mut HashMap<u64, usize>,
    by_acquisition: &mut HashMap<String, usize>,
) -> Result<(), Malformed> {
    let line = line_of(op);
    if !matches!(op.f, F::Acquire | F::Read | F::Write | F::Release) {
        return Err(Malformed::at(
            line,
            format!("a client cannot perform {:?}", op.f),
        ));
    }
    let value: ClientValue = parse(op)?;
    if op.kind == OpType::Invoke {
        if let Some(open) = pending.get(&p) {
            return Err(Malformed::at(
                line,
                format!(
                    "client {p} invoked again while its operation at line {} is open",
                    line_of(open)
                ),
            ));
        }
        match op.f {
            F::Acquire => {
                // A client that tries to acquire again no longer believes it holds the lock.
                if let Some(i) = holding.remove(&p) {
                    let hold = &mut model.holds[i];
                    hold.end = op.time;
                    hold.end_index = op.index;
                }
            }
            F::Release => {
                let Some(&i) = by_acquisition.get(&value.acquisition) else {
                    return Err(Malformed::at(
                        line,
                        format!(
                            "release of acquisition {} that was never granted",
                            value.acquisition
                        ),
                    ));
                };
                if holding.get(&p) == Some(&i) {
                    holding.remove(&p);
                    let hold = &mut model.holds[i];
                    hold.end = op.time;
                    hold.end_index = op.index;
                    hold.released = true;
                }
            }
            _ => {}
        }
        pending.insert(p, op);
        return Ok(());
    }

    let Some(invoke) = pending.remove(&p) else {
        return Err(Malformed::at(
            line,
            format!("client {p} completed an operation it never invoked"),
        ));
    };
    let invoked: ClientValue = parse(invoke)?;
    if invoke.f != op.f || invoked.acquisition != value.acquisition {
        return Err(Malformed::at(
            line,
            format!(
                "completion {:?} of acquisition {} does not match the invoke at line {}",
                op.f,
                value.acquisition,
                line_of(invoke)
            ),
        ));
    }
    if op.f == F::Acquire && op.kind == OpType::Ok {
        if by_acquisition.contains_key(&value.acquisition) {
            return Err(Malformed::at(
                line,
                format!("acquisition {} granted twice", value.acquisition),
            ));
        }
        by_acquisition.insert(value.acquisition.clone(), model.holds.len());
        holding.insert(p, model.holds.len());
        model.holds.push(Hold {
            acquisition: value.acquisition,
            process: p,
            token: value.token,
            invoked: invoke.time,
            start: op.time,
            end: op.time,
            released: false,
            start_index: op.index,
            end_index: op.index,
        });
    }
    Ok(())
}

fn named_op(model: &mut Model, op: &Op, name: &str) -> Result<(), Malformed> {
    let line = line_of(op);
    match (name, op.f) {
        (Process::HARNESS, F::Setup) => {
            model.setup = Some(parse(op)?);
        }
        (Process::HARNESS, F::FinalRead) => {
            model.final_state = Some(parse(op)?);
        }
        (Process::RESOURCE, F::Access) => {
            let accepted = match op.kind {
                OpType::Ok => true,
                OpType::Fail => false,
                other => {
                    return Err(Malformed::at(
                        line,
                        format!("a resource access is ok or fail, not {other:?}"),
                    ))
                }
            };
            let v: AccessValue = parse(op)?;
            model.accesses.push(Access {
                seq: v.seq,
                index: op.index,
                time: op.time,
                process: v.process,
                acquisition: v.acquisition,
                token: v.token,
                kind: v.op,
                accepted,
                value: v.value,
            });
        }
        (Process::NEMESIS, F::Start) => {
            let v: FaultValue = parse(op)?;
            model.faults.push(FaultWindow {
                id: v.id,
                fault: v.fault,
                targets: v.targets,
                start: op.time,
                stop: None,
            });
        }
        (Process::NEMESIS, F::Stop) => {
            let v: FaultValue = parse(op)?;
            let Some(window) = model
                .faults
                .iter_mut()
                .find(|w| w.id == v.id && w.stop.is_none())
            else {
                return Err(Malformed::at(
                    line,
                    format!("stop of fault {} that never started", v.id),
                ));
            };
            window.stop = Some(op.time);
        }
        _ => {
            return Err(Malformed::at(
                line,
                format!("{name} cannot perform {:?}", op.f),
            ))
        }
    }
    Ok(())
}
