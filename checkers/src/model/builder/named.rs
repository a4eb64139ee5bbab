//! The lines of the named processes (the harness's setup, run end and final read, the
//! resource's accesses, the nemesis's fault windows), as the builder takes them.

use serde_json::Value;

use super::super::values::{in_range, parse, AccessValue};
use super::super::{Access, FaultWindow, FinalState};
use super::{find, Builder};
use crate::fault::FaultRecord;
use crate::history::{Malformed, OpType, Process, F};
use crate::leadership::{Leader, LeadershipFields};
use crate::record::Record;

/// A nemesis line's leadership fields; none when its value is not an object of the shape
/// (a fault's own fields were read already: these only add a leader, never break a line).
fn leadership_of(op: &Record<'_>) -> LeadershipFields {
    op.value.decode().unwrap_or_default()
}

impl Builder {
    pub(super) fn named_op(&mut self, op: &Record<'_>, name: &str) -> Result<(), Malformed> {
        let line = op.line();
        let model = &mut self.model;
        match (name, op.f) {
            (Process::HARNESS, F::Setup) => {
                model.setup = Some(parse(op)?);
            }
            (Process::HARNESS, F::RunEnd) => {
                model.run_end = Some(parse(op)?);
            }
            (Process::HARNESS, F::FinalRead) if op.kind == OpType::Ok => {
                let state = parse::<FinalState>(op)?;
                in_range(line, "applied", state.applied)?;
                model.final_state = Some(state);
            }
            (Process::HARNESS, F::FinalRead) => {
                let value: Value = parse(op)?;
                let error = match value.get("error") {
                    Some(Value::String(text)) => text.clone(),
                    Some(other) => other.to_string(),
                    None => "no reason given".to_string(),
                };
                model.final_read_error = Some(error);
            }
            (Process::RESOURCE, F::Access) if op.kind == OpType::Info => {
                // A request from outside lockpick's workers, refused unapplied.
                let value: Value = parse(op)?;
                if value.get("foreign") != Some(&Value::Bool(true)) {
                    return Err(Malformed::at(
                        line,
                        "a resource access is ok or fail, or info when foreign",
                    ));
                }
                model.foreign_accesses += 1;
                if model.first_foreign.is_none() {
                    let from = value.get("from").and_then(Value::as_str).unwrap_or("?");
                    model.first_foreign = Some(from.chars().take(100).collect());
                }
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
                in_range(line, "seq", v.seq)?;
                // The hold of the access before, or the one its client holds now: most often
                // one of them, found without a lookup in the index.
                let holding = self.clients.get(v.process).and_then(|c| c.holding);
                let near = [self.last_access_hold, holding]
                    .into_iter()
                    .flatten()
                    .find(|&i| model.holds[i].acquisition == v.acquisition);
                let known = match near {
                    Some(i) => Some(i),
                    None => find(model, &v.acquisition)?,
                };
                // Every hold's position fits (`push_hold`); an unresolved access's is set in
                // `finish`, or the history is malformed.
                let hold = match known {
                    Some(i) => {
                        self.last_access_hold = Some(i);
                        i as u32
                    }
                    None => {
                        let at = model.accesses.len();
                        self.unresolved_accesses
                            .push((at, v.acquisition.into_owned()));
                        u32::MAX
                    }
                };
                model.accesses.push(Access {
                    seq: v.seq,
                    index: op.index,
                    time: op.time,
                    process: v.process,
                    token: v.token,
                    value: v.value,
                    hold,
                    kind: v.op,
                    accepted,
                });
            }
            (Process::NEMESIS, F::Start) => {
                let v: FaultRecord = parse(op)?;
                let leadership = leadership_of(op);
                model.faults.push(FaultWindow {
                    id: v.id,
                    fault: v.fault,
                    targets: v.targets,
                    start: op.time,
                    stop: None,
                    nemesis: v.nemesis,
                    effective: v.effective,
                    leader: Leader::of_value(&leadership.leader),
                    leader_after: None,
                    leadership_moved: None,
                });
            }
            (Process::NEMESIS, F::Stop) => {
                let v: FaultRecord = parse(op)?;
                let Some(window) = model
                    .faults
                    .iter_mut()
                    .rev()
                    .find(|w| w.id == v.id && w.stop.is_none())
                else {
                    return Err(Malformed::at(
                        line,
                        format!("stop of fault {} that never started", v.id),
                    ));
                };
                window.stop = Some(op.time);
                let leadership = leadership_of(op);
                window.leader_after = Leader::of_value(&leadership.leader_after);
                window.leadership_moved = leadership.moved();
                window.effective = match (window.effective, v.effective) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (known, None) => known,
                    (_, Some(true)) => Some(true),
                };
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
}
