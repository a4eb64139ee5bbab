//! Properties of the checkers over generated histories: a correct lock's history (serial
//! critical sections, failed and unknown attempts, clients that crash holding the lock) is never
//! called invalid, and is valid exactly when two clients held the lock; one injected violation
//! is always found (a reused token among them); a missing record or final read is never valid;
//! and no input, however broken, makes the checkers panic or call it invalid. Results read
//! back from their JSON as they were written.

use lockpick_checkers::{check, check_reader, Op, OpType, Process, Results, Validity, F};
use proptest::prelude::*;
use serde_json::{json, Value};

/// One step a generated client takes while it has the lock, or instead of taking it.
#[derive(Clone, Debug)]
enum Turn {
    /// Take the lock, read and write, then release (or, `crash`, stop for good while holding).
    Hold {
        client: u64,
        crash: bool,
        release_unknown: bool,
    },
    /// An attempt that finds the lock taken.
    Refused { client: u64 },
    /// An attempt whose outcome is unknown (a timeout): not a hold.
    Unknown { client: u64 },
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        6 => (0..5u64, prop::bool::weighted(0.05), prop::bool::weighted(0.1))
            .prop_map(|(client, crash, release_unknown)| Turn::Hold { client, crash, release_unknown }),
        2 => (0..5u64).prop_map(|client| Turn::Refused { client }),
        1 => (0..5u64).prop_map(|client| Turn::Unknown { client }),
    ]
}

/// Builds the history of a correct lock from `turns`: one holder at a time, each grant after
/// the previous holder's release (or, for a crashed holder, after its last event), tokens
/// growing when `tokens`.
struct Builder {
    ops: Vec<Op>,
    time: u64,
    seq: u64,
    token: u64,
    attempts: [u64; 5],
    crashed: [bool; 5],
    tokens: bool,
}

impl Builder {
    fn new(tokens: bool) -> Builder {
        let mut b = Builder {
            ops: Vec::new(),
            time: 0,
            seq: 0,
            token: 100,
            attempts: [0; 5],
            crashed: [false; 5],
            tokens,
        };
        b.push(
            Process::named("harness"),
            OpType::Info,
            F::Setup,
            json!({"lock": "x", "token": "t", "ttl_ms": 1000, "fencing": "off", "nemesis": "none"}),
        );
        b
    }

    fn push(&mut self, process: Process, kind: OpType, f: F, value: Value) -> u64 {
        self.time += 1_000;
        let index = self.ops.len() as u64;
        self.ops.push(Op {
            index,
            ..Op::new(self.time, process, kind, f, value)
        });
        self.time
    }

    /// The harness's final read: it agrees with every access recorded.
    fn final_read(&mut self) {
        let applied = self.seq;
        self.push(
            Process::named("harness"),
            OpType::Ok,
            F::FinalRead,
            json!({"value": 0, "applied": applied}),
        );
    }

    /// The clients that ever held the lock.
    fn holders(&self) -> std::collections::BTreeSet<u64> {
        self.ops
            .iter()
            .filter(|op| op.f == F::Acquire && op.kind == OpType::Ok)
            .filter_map(|op| match op.process {
                Process::Client(p) => Some(p),
                Process::Named(_) => None,
            })
            .collect()
    }

    /// The history without the operation at `at`, renumbered.
    fn without(&self, at: usize) -> Vec<Op> {
        let mut ops = self.ops.clone();
        ops.remove(at);
        for (i, op) in ops.iter_mut().enumerate() {
            op.index = i as u64;
        }
        ops
    }

    fn acquisition(&mut self, client: u64) -> String {
        self.attempts[client as usize] += 1;
        format!("{client}.{}", self.attempts[client as usize])
    }

    fn client(&mut self, client: u64, kind: OpType, f: F, value: Value) -> u64 {
        self.push(Process::Client(client), kind, f, value)
    }

    fn access(
        &mut self,
        client: u64,
        acquisition: &str,
        token: Option<u64>,
        op: &str,
        accepted: bool,
    ) -> u64 {
        let f = if op == "read" { F::Read } else { F::Write };
        let v = json!({"acquisition": acquisition, "token": token});
        self.client(client, OpType::Invoke, f, v.clone());
        self.seq += 1;
        let kind = if accepted { OpType::Ok } else { OpType::Fail };
        let time = self.push(
            Process::named("resource"),
            kind,
            F::Access,
            json!({"seq": self.seq, "process": client, "acquisition": acquisition, "token": token, "op": op, "value": 0}),
        );
        self.client(client, kind, f, v);
        time
    }

    /// Grants the lock to `client`; returns the acquisition and its token.
    fn grant(&mut self, client: u64) -> (String, Option<u64>) {
        let acquisition = self.acquisition(client);
        self.client(
            client,
            OpType::Invoke,
            F::Acquire,
            json!({"acquisition": acquisition}),
        );
        self.token += 1;
        let token = self.tokens.then_some(self.token);
        self.client(
            client,
            OpType::Ok,
            F::Acquire,
            json!({"acquisition": acquisition, "token": token}),
        );
        (acquisition, token)
    }

    fn take(&mut self, turn: &Turn) {
        match *turn {
            Turn::Hold {
                client,
                crash,
                release_unknown,
            } => {
                if self.crashed[client as usize] {
                    return;
                }
                let (acquisition, token) = self.grant(client);
                self.access(client, &acquisition, token, "read", true);
                self.access(client, &acquisition, token, "write", true);
                if crash {
                    // The client dies holding the lock; the lease frees it later.
                    self.crashed[client as usize] = true;
                    return;
                }
                let v = json!({"acquisition": acquisition});
                self.client(client, OpType::Invoke, F::Release, v.clone());
                let kind = if release_unknown {
                    OpType::Info
                } else {
                    OpType::Ok
                };
                self.client(client, kind, F::Release, v);
            }
            Turn::Refused { client } | Turn::Unknown { client } => {
                if self.crashed[client as usize] {
                    return;
                }
                let acquisition = self.acquisition(client);
                let v = json!({"acquisition": acquisition});
                self.client(client, OpType::Invoke, F::Acquire, v.clone());
                let kind = if matches!(turn, Turn::Refused { .. }) {
                    OpType::Fail
                } else {
                    OpType::Info
                };
                self.client(client, kind, F::Acquire, v);
            }
        }
    }
}

fn correct_history(turns: &[Turn], tokens: bool) -> Builder {
    let mut b = Builder::new(tokens);
    for turn in turns {
        b.take(turn);
    }
    b
}

/// A correct history that ends, as a run does, with its final read.
fn finished_history(turns: &[Turn], tokens: bool) -> Builder {
    let mut b = correct_history(turns, tokens);
    b.final_read();
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn a_correct_locks_history_is_valid_once_two_clients_held_it(turns in prop::collection::vec(turn(), 0..60), tokens: bool) {
        let b = finished_history(&turns, tokens);
        let results = check(&b.ops);
        if b.holders().len() >= 2 {
            prop_assert_eq!(results.valid, Validity::Valid, "{:#?}", results);
        } else {
            // Mutual exclusion was never exercised: not proven, never a violation.
            prop_assert_eq!(results.valid, Validity::Unknown);
            prop_assert!(results.unknown_reasons.iter().any(|r| r.contains("held the lock")));
        }
    }

    #[test]
    fn a_correct_history_of_a_lock_that_reuses_a_token_is_invalid(turns in prop::collection::vec(turn(), 0..60), pick: (prop::sample::Index, prop::sample::Index)) {
        let mut b = finished_history(&turns, true);
        let grants: Vec<usize> = (0..b.ops.len())
            .filter(|&i| b.ops[i].f == F::Acquire && b.ops[i].kind == OpType::Ok)
            .collect();
        prop_assume!(grants.len() >= 2);
        let (i, j) = (pick.0.index(grants.len()), pick.1.index(grants.len()));
        prop_assume!(i != j);
        // Two different clients: a client handed its own token again broke no promise.
        prop_assume!(b.ops[grants[i]].process != b.ops[grants[j]].process);
        // Grant j is handed grant i's token; everything else stays serial and correct.
        let token = b.ops[grants[i]].value["token"].clone();
        b.ops[grants[j]].value["token"] = token;
        let results = check(&b.ops);
        prop_assert_eq!(results.valid, Validity::Invalid);
        prop_assert!(results.token_violations.unwrap().reused >= 1);
    }

    #[test]
    fn a_history_missing_any_access_record_is_never_valid(turns in prop::collection::vec(turn(), 1..60), tokens: bool, pick: prop::sample::Index) {
        let b = finished_history(&turns, tokens);
        let records: Vec<usize> = (0..b.ops.len()).filter(|&i| b.ops[i].f == F::Access).collect();
        prop_assume!(!records.is_empty());
        let results = check(&b.without(records[pick.index(records.len())]));
        prop_assert_ne!(results.valid, Validity::Valid);
        prop_assert!(results.unknown_reasons.iter().any(|r| r.contains("missing")), "{:?}", results.unknown_reasons);
    }

    #[test]
    fn dropping_the_final_read_makes_a_history_unknown(turns in prop::collection::vec(turn(), 1..60), tokens: bool) {
        let b = finished_history(&turns, tokens);
        let results = check(&b.without(b.ops.len() - 1));
        prop_assert_eq!(results.valid, Validity::Unknown);
        prop_assert!(results.unknown_reasons.contains(&"the run ended before its final read".to_string()));
    }

    #[test]
    fn an_injected_overlap_is_found(turns in prop::collection::vec(turn(), 0..40), tokens: bool, client in 0..5u64) {
        let mut b = correct_history(&turns, tokens);
        let other = (client + 1) % 5;
        prop_assume!(!b.crashed[client as usize] && !b.crashed[other as usize]);
        // `client` takes the lock and, while it still holds it (it writes afterwards), so does
        // `other`.
        let (first, token) = b.grant(client);
        b.access(client, &first, token, "read", true);
        let (second, second_token) = b.grant(other);
        b.access(other, &second, second_token, "read", true);
        b.access(client, &first, token, "write", true);
        let results = check(&b.ops);
        prop_assert_eq!(results.valid, Validity::Invalid);
        prop_assert_eq!(results.overlapping_holders.unwrap().overlaps.len(), 1);
    }

    #[test]
    fn an_injected_stale_write_is_found(turns in prop::collection::vec(turn(), 0..40), tokens: bool, client in 0..5u64) {
        let mut b = correct_history(&turns, tokens);
        let other = (client + 1) % 5;
        prop_assume!(!b.crashed[client as usize] && !b.crashed[other as usize]);
        // `client` holds the lock and goes quiet; its lease ends; `other` takes the lock and
        // writes; then `client`'s late write is accepted.
        let (old, old_token) = b.grant(client);
        let (new, new_token) = b.grant(other);
        b.access(other, &new, new_token, "write", true);
        b.access(client, &old, old_token, "write", true);
        let results = check(&b.ops);
        prop_assert_eq!(results.valid, Validity::Invalid);
        prop_assert_eq!(results.stale_accesses.unwrap().stale_writes, 1);
    }

    #[test]
    fn results_read_back_as_they_were_written(turns in prop::collection::vec(turn(), 0..40), tokens: bool, client in 0..5u64, cut in 0usize..3000) {
        // A stale write behind an overlap, so that every part of the results has something in
        // it; and the same history cut short, malformed.
        let mut b = correct_history(&turns, tokens);
        let other = (client + 1) % 5;
        prop_assume!(!b.crashed[client as usize] && !b.crashed[other as usize]);
        let (old, old_token) = b.grant(client);
        let (new, new_token) = b.grant(other);
        b.access(other, &new, new_token, "write", true);
        b.access(client, &old, old_token, "write", true);
        let text: String = b.ops.iter().map(|op| op.to_json_line() + "\n").collect();
        let cut = &text.as_bytes()[..cut.min(text.len())];
        for results in [check(&b.ops), check_reader(cut)] {
            let written = serde_json::to_value(&results).unwrap();
            let read: Results = serde_json::from_value(written.clone()).unwrap();
            prop_assert_eq!(serde_json::to_value(&read).unwrap(), written);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_are_never_invalid(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let results = check_reader(bytes.as_slice());
        prop_assert_ne!(results.valid, Validity::Invalid);
    }

    #[test]
    fn a_damaged_history_never_panics(turns in prop::collection::vec(turn(), 1..30), cut in 0usize..5000, flips in prop::collection::vec((0usize..5000, any::<u8>()), 0..5)) {
        let b = finished_history(&turns, true);
        let mut text: Vec<u8> = b.ops.iter().flat_map(|op| (op.to_json_line() + "\n").into_bytes()).collect();
        for (at, byte) in flips {
            if !text.is_empty() {
                let at = at % text.len();
                text[at] = byte;
            }
        }
        text.truncate(cut.min(text.len()));
        let _ = check_reader(text.as_slice());
    }
}
