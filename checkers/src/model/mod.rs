//! What a history says happened, in the terms the checkers reason about: holds (from a client's
//! successful acquire until it stopped believing it held the lock), the resource's accesses in
//! apply order, and fault windows. Building the model is where a history is found malformed;
//! the checkers themselves only ever see a consistent model.

mod builder;
pub mod client_errors;
mod hold;
mod hold_index;
pub mod regrant;
pub mod release_fail;
pub mod server_lease;
mod values;

use serde::{Deserialize, Serialize};

use crate::fault::{targets_text, FaultKind, Target};
use crate::leadership::Leader;

pub use crate::setup::Setup;
pub use builder::{build, Builder};
pub use client_errors::{ClientError, ClientErrors};
pub use hold::{Hold, Rare};
pub use regrant::{LeaseAt, Regrant, Segment};
pub use release_fail::{ReleaseFailKind, ReleaseFailed, ReleaseFailures};
pub use server_lease::{Contradiction, ServerLease};
pub use values::decode_only;

/// What the lock's own protocol promises about a lease, on the run clock (see
/// `checkers/HISTORY.md` for the rule of each lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The lease is certainly still held until at least then.
    pub live_until: u64,
    /// The lease has certainly ended by then; `None` when the client cannot bound it.
    pub expires_by: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    Read,
    Write,
}

/// One access as the resource applied or rejected it. It names its acquisition by the position
/// of that acquisition's hold in `Model::holds` (`Model::holder`): a model holds millions of
/// accesses, and a copy of the text each was an allocation and 24 bytes more per access.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Access {
    /// The resource's serial order.
    pub seq: u64,
    pub index: u64,
    pub time: u64,
    pub process: u64,
    pub token: Option<u64>,
    /// The resource's value after the access.
    pub value: i64,
    /// Its acquisition's hold: a position in `Model::holds`.
    pub hold: u32,
    pub kind: AccessKind,
    pub accepted: bool,
}

/// An access as a violation tells it (results.json): with its acquisition's text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessRecord {
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

impl AccessRecord {
    /// `access`, of `acquisition` (its hold's).
    pub fn of(access: &Access, acquisition: &str) -> AccessRecord {
        AccessRecord {
            seq: access.seq,
            index: access.index,
            time: access.time,
            process: access.process,
            acquisition: acquisition.to_string(),
            token: access.token,
            kind: access.kind,
            accepted: access.accepted,
            value: access.value,
        }
    }
}

/// A fault from its start to its stop (or to the end of the history if it never stopped).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultWindow {
    pub id: u64,
    pub fault: FaultKind,
    pub targets: Vec<Target>,
    pub start: u64,
    pub stop: Option<u64>,
    /// The nemesis (as named in the setup line) that started it, when the start line says.
    pub nemesis: Option<String>,
    /// Whether the fault was seen to take hold: `false` if its start or its stop said so,
    /// `true` if one said so and none said `false`, `None` if neither said.
    pub effective: Option<bool>,
    /// Who led the service when the fault opened, as a leader nemesis's start names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader: Option<Leader>,
    /// Who led it before the fault healed, as its stop names it (asked of the other servers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader_after: Option<Leader>,
    /// Whether leadership moved during the fault, as its stop says (`None`: not said).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leadership_moved: Option<bool>,
}

impl FaultWindow {
    pub fn active_during(&self, from: u64, to: u64) -> bool {
        self.start <= to && self.stop.is_none_or(|stop| stop >= from)
    }

    /// Whether it froze client `process`: a pause aimed at that client alone.
    pub fn freezes_alone(&self, process: u64) -> bool {
        self.fault == FaultKind::Pause && self.targets == [Target::Client(process)]
    }

    /// Whether it froze client `process`, maybe with others.
    pub fn freezes(&self, process: u64) -> bool {
        self.fault == FaultKind::Pause && self.targets.contains(&Target::Client(process))
    }

    pub fn describe(&self) -> String {
        format!("{} of {}", self.fault, targets_text(&self.targets))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Model {
    pub setup: Option<Setup>,
    /// How the workload ended, as the harness recorded it.
    pub run_end: Option<RunEnd>,
    pub holds: Vec<Hold>,
    pub accesses: Vec<Access>,
    pub faults: Vec<FaultWindow>,
    /// Indexes of client invocations that never completed (the client died or the run ended).
    pub incomplete: Vec<u64>,
    /// Every acquire attempt that certainly failed (`fail`: the lock was refused), in history
    /// order: what shows a lock that stays taken with no one holding it.
    pub failed_acquires: Vec<AcquireAttempt>,
    /// Every acquire attempt whose outcome is unknown (`info`): each may have taken the lock.
    pub unknown_acquires: Vec<AcquireAttempt>,
    /// The errors the acquires that did not succeed gave.
    pub acquire_errors: ClientErrors,
    /// Client operations that completed `info`: answered, but nobody knows whether they took
    /// effect (a timeout, an exec program that says it does not know).
    pub answered_unknown: usize,
    /// Releases that completed `fail`, by the kind their client gave.
    pub release_failures: ReleaseFailures,
    /// Time of the last operation.
    pub end: u64,
    /// What the final read of the resource saw, if the run made one.
    pub final_state: Option<FinalState>,
    /// Why the final read failed, when the harness recorded it as failed (the resource died).
    pub final_read_error: Option<String>,
    /// How many operations the history holds, the setup line included.
    pub operations: usize,
    /// Requests the resource refused because they came from outside lockpick's workers.
    pub foreign_accesses: u64,
    /// Where the first of them came from.
    pub first_foreign: Option<String>,
    /// Index into `holds` by acquisition.
    #[serde(skip)]
    pub(crate) hold_index: hold_index::HoldIndex,
}

/// An acquire attempt that did not end in a known grant: refused, or of unknown outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AcquireAttempt {
    pub process: u64,
    pub invoked: u64,
    /// When its completion was recorded.
    pub completed: u64,
    /// The completion's index in the history.
    pub index: u64,
    /// When the lock server, asked right after this attempt's answer, held the lock's key with
    /// no expiry (its `server_lease` without an end): the time it was asked.
    pub key_without_expiry: Option<u64>,
}

/// The harness's `run-end` line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEnd {
    #[serde(default)]
    pub interrupted: bool,
    #[serde(default)]
    pub crashed_clients: Vec<String>,
    /// The test hooks (`NAME=value`) a debug build of lockpick ran with: faults of lockpick's own
    /// tests that the setup does not describe.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub test_hooks: Vec<String>,
    /// When the run ended early because the history already proved a violation
    /// (`--until decided`), on the run clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at_ns: Option<u64>,
}

/// The resource's value and count of applied accesses, read after the clients stopped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FinalState {
    pub value: i64,
    pub applied: u64,
}

impl Model {
    /// The hold whose acquisition `access` names (a model `build` made has it for every access).
    pub fn holder(&self, access: &Access) -> &Hold {
        &self.holds[access.hold as usize]
    }

    pub fn hold(&self, acquisition: &str) -> Option<&Hold> {
        match self.hold_index.get(acquisition, &self.holds) {
            Some(i) => self.holds.get(i),
            // A model assembled by hand, not by `build`, has no index.
            None if self.hold_index.is_empty() => {
                self.holds.iter().find(|h| h.acquisition == acquisition)
            }
            None => None,
        }
    }

    /// Whose word the lease bounds in the history are: a client program's (`exec:` locks) is a
    /// claim lockpick cannot see behind; lockpick's own clients derive theirs from the server's
    /// answers as `checkers/HISTORY.md` says.
    pub fn lease_word(&self) -> &'static str {
        match &self.setup {
            Some(s) if s.lock.starts_with("exec:") => "the client program's report",
            _ => "lockpick's own client's record",
        }
    }

    /// Who broke mutual exclusion when a grant came under a live lease, as far as the history
    /// can tell: lockpick's own clients follow their service's protocol, so the service did; a
    /// client program may itself be the culprit (a release that deletes another client's key,
    /// an extend that renews another's lease, a recipe that ignores a lower sequence number).
    pub fn mutual_exclusion_breaker(&self) -> &'static str {
        Setup::mutual_exclusion_breaker(self.setup.as_ref())
    }

    pub fn faults_during(&self, from: u64, to: u64) -> Vec<&FaultWindow> {
        self.faults
            .iter()
            .filter(|w| w.active_during(from, to))
            .collect()
    }
}
