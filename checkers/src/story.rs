//! The story of a violation: what happened, in the order it happened, in words an engineer would
//! use to explain it. Built only from the history (holds, accesses, fault windows and the run's
//! TTL), so a stored run tells the same story when checked again.

use serde::{Deserialize, Serialize};

use crate::model::{AccessKind, AccessRecord, FaultWindow, Hold, Model};
use crate::overlap_cause::{self, OverlapCause};
use crate::overlapping_holders::Overlap;
use crate::stale_accesses::StaleAccess;
pub use crate::words::{seconds, token};

/// One step of a story.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Step {
    /// When it happened (ns since the run began).
    pub time: u64,
    /// The history operation that shows it, when there is one.
    pub index: Option<u64>,
    pub text: String,
    /// Whether this step is the violation itself.
    pub violation: bool,
    /// Whether this step says why the violation could happen (a lease that had ended, one that
    /// was live, the overlap's cause): kept when the story is shortened.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cause: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Story {
    /// `overlap`, `stale-write` / `stale-read`, `token-reused` / `token-went-backwards`, or `jam`.
    pub kind: String,
    /// A one-line summary.
    pub title: String,
    pub steps: Vec<Step>,
}

impl Story {
    /// The story on one line, steps joined by arrows, for a terminal or a JUnit failure.
    pub fn one_line(&self) -> String {
        let steps: Vec<&str> = self.steps.iter().map(|s| s.text.as_str()).collect();
        steps.join(" → ")
    }

    /// The story on one line for a place that has little room (a pull-request comment): its
    /// first step, every step that says the cause, and the violation itself (marked `!!`, as
    /// the terminal marks it); the steps left out between them are counted.
    pub fn shortened(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        let mut left_out = 0;
        for (i, step) in self.steps.iter().enumerate() {
            if i > 0 && !step.cause && !step.violation {
                left_out += 1;
                continue;
            }
            if left_out > 0 {
                out.push(format!("({left_out} more)"));
                left_out = 0;
            }
            let mark = if step.violation { "!! " } else { "" };
            out.push(format!("{mark}{}", step.text));
        }
        if left_out > 0 {
            out.push(format!("({left_out} more)"));
        }
        out.join(" → ")
    }
}

pub(crate) fn who(hold: &Hold) -> String {
    format!("client {}", hold.process)
}

/// What the holder did and what was done to it, from `from` to `to`.
pub(crate) struct Teller<'a> {
    pub(crate) model: &'a Model,
    pub(crate) steps: Vec<Step>,
}

impl<'a> Teller<'a> {
    pub(crate) fn new(model: &'a Model) -> Teller<'a> {
        Teller {
            model,
            steps: Vec::new(),
        }
    }

    pub(crate) fn step(&mut self, time: u64, index: Option<u64>, text: String) {
        self.steps.push(Step {
            time,
            index,
            text,
            violation: false,
            cause: false,
        });
    }

    /// A step that says why the violation could happen.
    pub(crate) fn cause(&mut self, time: u64, text: String) {
        self.steps.push(Step {
            time,
            index: None,
            text,
            violation: false,
            cause: true,
        });
    }

    pub(crate) fn acquired(&mut self, hold: &Hold) {
        self.step(
            hold.start,
            Some(hold.start_index),
            format!(
                "{} acquired the lock ({}, acquisition {}) at {}",
                who(hold),
                token(hold),
                hold.acquisition,
                seconds(hold.start)
            ),
        );
    }

    /// The end of the holder's lease, when the history proves it ended while the holder still
    /// believed it held the lock, before `by` (the moment the other holder may have been
    /// granted). Nothing is said when it is not proven: a guess from the TTL would blame the
    /// lease for what a renewal may have kept alive.
    fn lease_ended(&mut self, hold: &Hold, by: u64) {
        let Some((ended, how)) = overlap_cause::lease_ended_by(self.model, hold, by) else {
            return;
        };
        if ended < hold.end && ended <= by {
            self.cause(
                ended,
                format!(
                    "{}'s lease had certainly ended by {} ({how}), while it still believed it held the lock",
                    who(hold),
                    seconds(ended)
                ),
            );
        }
    }

    /// The moment up to which the holder's lease in force at `at` was certainly live, when
    /// that is after `from`.
    fn lease_live(&mut self, hold: &Hold, at: u64, from: u64) {
        let in_force = hold.lease_at(at);
        if let Some(lease) = in_force.lease.filter(|l| l.live_until > from) {
            if let Some(c) = in_force.contradiction {
                self.cause(
                    lease.live_until,
                    format!(
                        "{} reported its lease live until {}, by the client program's report, \
                         which the server contradicts ({})",
                        who(hold),
                        seconds(lease.live_until),
                        c.said()
                    ),
                );
                return;
            }
            self.cause(
                lease.live_until,
                format!(
                    "{}'s lease was certainly live until {}",
                    who(hold),
                    seconds(lease.live_until)
                ),
            );
        }
    }

    pub(crate) fn faults(&mut self, from: u64, to: u64) {
        let windows: Vec<&FaultWindow> = self.model.faults_during(from, to);
        for w in windows {
            self.step(
                w.start,
                None,
                format!(
                    "the nemesis began a {} at {}",
                    w.describe(),
                    seconds(w.start)
                ),
            );
            if let Some(stop) = w.stop.filter(|stop| *stop <= to) {
                self.step(
                    stop,
                    None,
                    format!("the {} ended at {}", w.describe(), seconds(stop)),
                );
            }
        }
    }

    fn access(&mut self, access: &AccessRecord, holder: &Hold, violation: bool, note: &str) {
        let verb = match access.kind {
            AccessKind::Read => "read",
            AccessKind::Write => "wrote",
        };
        let verdict = if access.accepted {
            "accepted"
        } else {
            "rejected"
        };
        self.steps.push(Step {
            time: access.time,
            index: Some(access.index),
            text: format!(
                "{} {verb} with {} at {}: {verdict}{note}",
                who(holder),
                token(holder),
                seconds(access.time)
            ),
            violation,
            cause: false,
        });
    }

    pub(crate) fn released(&mut self, hold: &Hold) {
        let text = if let Some(failed) = hold.release_failed().filter(|_| hold.released) {
            format!(
                "{} released the lock at {}, and the release failed ({})",
                who(hold),
                seconds(hold.end),
                failed.words()
            )
        } else if hold.released {
            format!("{} released the lock at {}", who(hold), seconds(hold.end))
        } else {
            format!(
                "{} never released the lock (last seen at {})",
                who(hold),
                seconds(hold.end)
            )
        };
        self.step(hold.end, Some(hold.end_index), text);
    }

    fn accesses_of(&mut self, hold: &Hold, from: u64, to: u64) {
        let accesses: Vec<AccessRecord> = self
            .model
            .accesses
            .iter()
            .filter(|a| a.time >= from && a.time <= to)
            .filter(|a| self.model.holder(a).acquisition == hold.acquisition)
            .map(|a| AccessRecord::of(a, &hold.acquisition))
            .collect();
        for a in &accesses {
            self.access(a, hold, false, "");
        }
    }

    pub(crate) fn finish(mut self, kind: &str, title: String) -> Story {
        self.steps.sort_by_key(|s| s.time);
        self.steps.dedup_by(|a, b| a.text == b.text);
        Story {
            kind: kind.to_string(),
            title,
            steps: self.steps,
        }
    }
}

/// The story of two holders at once.
pub fn of_overlap(model: &Model, overlap: &Overlap) -> Story {
    let (a, b) = (&overlap.first, &overlap.second);
    let mut t = Teller::new(model);
    t.acquired(a);
    t.faults(a.start, overlap.to);
    match overlap.cause {
        OverlapCause::OutlivedLease => t.lease_ended(a, b.granted_after),
        OverlapCause::GrantedUnderLiveLease => match &overlap.regrant {
            Some(regrant) => {
                t.lease_ended(a, b.granted_after);
                t.regranted(a, b, regrant);
            }
            None => t.lease_live(a, b.granted_after, b.start),
        },
        OverlapCause::LostInFailover => {
            t.lease_live(a, b.granted_after, b.start);
            t.leadership_moved(a, b);
        }
        OverlapCause::Undecidable => {}
    }
    t.acquired(b);
    if overlap.cause == OverlapCause::LostInFailover {
        t.granted_by_new_leader(a, b);
    }
    t.accesses_of(a, a.start, a.end);
    t.accesses_of(b, b.start, b.end.min(overlap.to));
    t.steps.push(Step {
        time: overlap.to,
        index: Some(b.start_index),
        text: format!(
            "{} and {} both held the lock {}",
            who(a),
            who(b),
            overlap.span_words()
        ),
        violation: true,
        cause: false,
    });
    t.released(a);
    t.cause(
        overlap.to,
        format!("the cause: {}: {}", overlap.cause.describe(), overlap.why),
    );
    let title = format!(
        "{} and {} held the lock at once {} ({})",
        who(a),
        who(b),
        overlap.span_words(),
        overlap.cause.describe()
    );
    t.finish("overlap", title)
}

/// The story of a stale access the resource accepted.
pub fn of_stale_access(model: &Model, stale: &StaleAccess) -> Story {
    let (old, new) = (&stale.holder, &stale.newer_holder);
    let mut t = Teller::new(model);
    t.acquired(old);
    t.faults(old.start, stale.access.time);
    t.lease_ended(old, new.granted_after);
    t.acquired(new);
    t.access(&stale.overtaken_by, new, false, "");
    let kind = match stale.access.kind {
        AccessKind::Write => "stale-write",
        AccessKind::Read => "stale-read",
    };
    let why = match (old.token, model.setup.as_ref()) {
        (None, Some(setup)) if setup.fencing == "on" => {
            ", a stale access: fencing was on, but the lock gives no token to check"
        }
        (Some(_), Some(setup)) if setup.fencing == "off" => {
            ", a stale access the token would have stopped: fencing was off"
        }
        _ => ", a stale access",
    };
    t.access(&stale.access, old, true, why);
    let title = format!(
        "{} {} with {} after {} had accessed with {}",
        who(old),
        if kind == "stale-write" {
            "wrote"
        } else {
            "read"
        },
        token(old),
        who(new),
        token(new)
    );
    t.finish(kind, title)
}
