//! What the controller follows of the clients as their lines pass through: each client's open
//! invocation (to complete it as `info` if the client dies) and who believes it holds the lock
//! (for the progress line's count of overlaps so far; the checkers decide).

use std::collections::{BTreeMap, BTreeSet};

use lockpick_checkers::{Op, OpType, Process, F};
use serde_json::{json, Value};

use super::Head;

/// A client's invocation still waiting for its completion.
struct Invocation {
    f: F,
    acquisition: Option<String>,
    token: Option<Value>,
}

#[derive(Default)]
pub struct Follower {
    holding: BTreeSet<u64>,
    overlaps_seen: u64,
    open_invocations: BTreeMap<u64, Invocation>,
    /// Each client's last line's time: it was alive then.
    last_seen: BTreeMap<u64, u64>,
}

/// The `info` completion of an invocation whose client ended before completing it.
pub struct Abandoned(pub Op);

impl Follower {
    /// How many times a client was granted the lock while another believed it held it.
    pub fn overlaps_seen(&self) -> u64 {
        self.overlaps_seen
    }

    /// Follows one client line.
    pub fn follow(&mut self, p: u64, head: &Head) {
        self.last_seen.insert(p, head.time);
        if head.kind == OpType::Invoke {
            let invocation = Invocation {
                f: head.f,
                acquisition: head.acquisition.clone(),
                token: head.token.clone(),
            };
            self.open_invocations.insert(p, invocation);
        } else if self.open_invocations.get(&p).is_some_and(|i| i.f == head.f) {
            // A completion of the open invocation (lines a client writes on its own, such as
            // a lease renewal, complete nothing).
            self.open_invocations.remove(&p);
        }
        match (head.f, head.kind) {
            (F::Acquire, OpType::Ok) => {
                if self.holding.iter().any(|h| *h != p) {
                    self.overlaps_seen += 1;
                }
                self.holding.insert(p);
            }
            (F::Acquire | F::Release, OpType::Invoke) => {
                self.holding.remove(&p);
            }
            _ => {}
        }
    }

    /// A client's stream closed with an invocation open (it crashed, hung and was killed, or
    /// was killed by a nemesis): nobody knows whether that operation took effect, so it is
    /// completed as `info`, as Jepsen does with a crashed process.
    /// Its hold, if it held the lock, ends there too, as the checker ends it at the client's
    /// last event: a dead holder is not counted against every later grant.
    ///
    /// The completion is dated at the earliest the client can have died: its last line, or
    /// when the harness killed it (`killed_at`, read before the kill), whichever is later. Not
    /// when its stream is seen closed (`now`), which is milliseconds after the death: a lock
    /// that frees on disconnect grants the next holder within those milliseconds, and a hold
    /// stretched to `now` would overlap that correct grant.
    pub fn abandoned(
        &mut self,
        process: u64,
        killed_at: Option<u64>,
        now: u64,
    ) -> Option<Abandoned> {
        let alive_at = self.last_seen.get(&process).copied();
        let died_by = match (alive_at, killed_at) {
            (Some(seen), Some(killed)) => seen.max(killed),
            (Some(seen), None) => seen,
            (None, Some(killed)) => killed,
            (None, None) => now,
        };
        self.holding.remove(&process);
        let invoke = self.open_invocations.remove(&process)?;
        let mut value = json!({
            "acquisition": invoke.acquisition,
            "error": "the client process ended before this operation completed",
        });
        if let Some(token) = invoke.token {
            value["token"] = token;
        }
        let op = Op::new(
            died_by,
            Process::Client(process),
            OpType::Info,
            invoke.f,
            value,
        );
        Some(Abandoned(op))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(kind: OpType, f: F, acquisition: &str) -> Head {
        Head {
            time: 1,
            process: Process::Client(1),
            kind,
            f,
            acquisition: Some(acquisition.to_string()),
            token: Some(json!(4)),
            nodes: Vec::new(),
        }
    }

    #[test]
    fn an_open_invocation_is_completed_as_info_when_its_client_ends() {
        let mut follower = Follower::default();
        follower.follow(1, &head(OpType::Invoke, F::Write, "1.2"));
        // Its last line was at 1; its stream was seen closed at 9.
        let Abandoned(op) = follower.abandoned(1, None, 9).unwrap();
        assert_eq!((op.kind, op.f, op.time), (OpType::Info, F::Write, 1));
        assert_eq!(op.value["acquisition"], "1.2");
        assert_eq!(op.value["token"], 4);
        assert!(follower.abandoned(1, None, 10).is_none());
    }

    #[test]
    fn a_killed_holders_open_write_is_dated_at_its_kill_not_when_its_stream_closed() {
        // Measured: the holder of a lock its server frees on disconnect, killed at 4.35 s; the
        // server granted the lock again at 4.353 s; the stream was seen closed at 4.354 s.
        // Dated then, the dead holder's hold overlapped that correct grant.
        let mut follower = Follower::default();
        let mut grant = head(OpType::Ok, F::Acquire, "1.2");
        grant.time = 4_249_000_000;
        follower.follow(1, &grant);
        let mut write = head(OpType::Invoke, F::Write, "1.2");
        write.time = 4_300_000_000;
        follower.follow(1, &write);
        let Abandoned(op) = follower
            .abandoned(1, Some(4_350_000_000), 4_354_000_000)
            .unwrap();
        assert_eq!(op.time, 4_350_000_000);
        assert!(op.time < 4_353_000_000);
    }

    #[test]
    fn a_completion_is_never_dated_before_its_clients_last_line() {
        // The kill's time is read before the kill; a line the client wrote after it still
        // came first.
        let mut follower = Follower::default();
        let mut write = head(OpType::Invoke, F::Write, "1.2");
        write.time = 7;
        follower.follow(1, &write);
        let Abandoned(op) = follower.abandoned(1, Some(5), 9).unwrap();
        assert_eq!(op.time, 7);
    }

    #[test]
    fn a_grant_while_another_holds_is_counted() {
        let mut follower = Follower::default();
        follower.follow(1, &head(OpType::Ok, F::Acquire, "1.1"));
        follower.follow(2, &head(OpType::Ok, F::Acquire, "2.1"));
        assert_eq!(follower.overlaps_seen(), 1);
    }

    #[test]
    fn a_grant_inside_a_hold_is_counted_even_if_it_is_its_clients_last_event() {
        // Client 2's grant is its last line (a hold of zero length) inside client 1's hold.
        let mut follower = Follower::default();
        follower.follow(1, &head(OpType::Ok, F::Acquire, "1.1"));
        follower.follow(2, &head(OpType::Ok, F::Acquire, "2.1"));
        assert!(follower.abandoned(2, None, 5).is_none());
        follower.follow(1, &head(OpType::Invoke, F::Release, "1.1"));
        assert_eq!(follower.overlaps_seen(), 1);
    }

    #[test]
    fn a_dead_holder_is_not_counted_against_later_grants() {
        let mut follower = Follower::default();
        follower.follow(1, &head(OpType::Ok, F::Acquire, "1.1"));
        assert!(follower.abandoned(1, None, 5).is_none());
        follower.follow(2, &head(OpType::Ok, F::Acquire, "2.1"));
        follower.follow(2, &head(OpType::Invoke, F::Release, "2.1"));
        follower.follow(3, &head(OpType::Ok, F::Acquire, "3.1"));
        assert_eq!(follower.overlaps_seen(), 0);
    }
}
