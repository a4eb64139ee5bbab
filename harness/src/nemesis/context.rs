//! What a nemesis sees and acts on while it begins or ends a fault, and how it records both.

use anyhow::Result;
use lockpick_checkers::fault::{FaultKind, FaultRecord, Target};
use lockpick_checkers::{Op, OpType, Process, F};
use serde_json::{json, Value};

use super::FaultKnobs;
use crate::cluster::Cluster;
use crate::history_log::HistoryLog;

/// The client a lock-aware fault hits, as the triggering operation describes it.
pub struct Holder {
    pub process: u64,
    pub acquisition: String,
    /// The servers that granted the lock (addresses), when the client says.
    pub granted_by: Vec<String>,
}

impl Holder {
    /// What set a lock-aware fault off, for its start record: the holder's acquisition and
    /// process.
    pub fn trigger(&self) -> Value {
        json!({
            "trigger": format!("holder of acquisition {}", self.acquisition),
            "client": Target::Client(self.process),
        })
    }

    /// Reads the holder out of a client's successful operation.
    pub fn of(process: u64, value: &Value) -> Holder {
        Holder {
            process,
            acquisition: value["acquisition"].as_str().unwrap_or("?").to_string(),
            granted_by: value["nodes"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// The nodes a fault acts on, as its records name them.
pub fn node_targets(nodes: &[String]) -> Vec<Target> {
    nodes.iter().cloned().map(Target::Node).collect()
}

pub struct Context<'a> {
    /// Now, in ns since the run began.
    pub now: u64,
    pub cluster: &'a mut Cluster,
    pub knobs: &'a FaultKnobs,
    log: &'a mut HistoryLog,
    next_fault: &'a mut u64,
    /// The nemesis acting now, named in every record it makes.
    nemesis: &'static str,
    /// Fields added to every record made now, by an aim that knows more than the fault it
    /// begins (which server led): an object, or null.
    evidence: Value,
}

impl<'a> Context<'a> {
    pub fn new(
        now: u64,
        cluster: &'a mut Cluster,
        knobs: &'a FaultKnobs,
        log: &'a mut HistoryLog,
        next_fault: &'a mut u64,
    ) -> Context<'a> {
        Context {
            now,
            cluster,
            knobs,
            log,
            next_fault,
            nemesis: "",
            evidence: Value::Null,
        }
    }

    /// Runs `act` with `evidence` (an object) added to the records it makes.
    pub fn with_evidence<T>(&mut self, evidence: Value, act: impl FnOnce(&mut Self) -> T) -> T {
        let before = std::mem::replace(&mut self.evidence, evidence);
        let done = act(self);
        self.evidence = before;
        done
    }

    /// Names the nemesis whose records follow.
    pub fn acting(&mut self, nemesis: &'static str) -> &mut Context<'a> {
        self.nemesis = nemesis;
        self
    }

    /// Records the start of a fault and returns its id, which its stop must carry. `details`
    /// (an object) go beside the record's own fields.
    pub fn started(&mut self, fault: FaultKind, targets: &[Target], details: Value) -> Result<u64> {
        *self.next_fault += 1;
        let id = *self.next_fault;
        self.record(F::Start, id, fault, targets, details)?;
        Ok(id)
    }

    pub fn stopped(
        &mut self,
        id: u64,
        fault: FaultKind,
        targets: &[Target],
        details: Value,
    ) -> Result<()> {
        self.record(F::Stop, id, fault, targets, details)
    }

    fn record(
        &mut self,
        f: F,
        id: u64,
        fault: FaultKind,
        targets: &[Target],
        details: Value,
    ) -> Result<()> {
        let record = FaultRecord {
            id,
            fault,
            targets: targets.to_vec(),
            nemesis: (!self.nemesis.is_empty()).then(|| self.nemesis.to_string()),
            // A fault's evidence is among its details, beside what it shows.
            effective: None,
        };
        let mut value = serde_json::to_value(record)?;
        if let (Some(value), Value::Object(details)) = (value.as_object_mut(), details) {
            value.extend(details);
        }
        if let (Some(value), Value::Object(evidence)) = (value.as_object_mut(), &self.evidence) {
            value.extend(evidence.clone());
        }
        let op = Op::new(
            self.now,
            Process::named(Process::NEMESIS),
            OpType::Info,
            f,
            value,
        );
        self.log.append(op)?;
        Ok(())
    }
}
