//! A builder for small hand-drawn histories. Times are in milliseconds-as-nanoseconds where the
//! checkers only compare them; lease bounds are given on the same scale.
#![allow(dead_code)] // each test file uses a part of it

use lockpick_checkers::{Op, OpType, Process, F};
use serde_json::{json, Value};

#[derive(Default)]
pub struct History {
    pub ops: Vec<Op>,
    pub seq: u64,
}

impl History {
    /// A history that starts with a setup line.
    pub fn with_setup(token: &str, nemesis: &str, lease_silence_ms: Option<u64>) -> History {
        let mut h = History::default();
        let value = json!({"lock": "test", "token": token, "ttl_ms": 1000, "fencing": "on",
            "nemesis": nemesis, "lease_silence_ms": lease_silence_ms});
        h.push(0, Process::named("harness"), OpType::Info, F::Setup, value);
        h
    }

    pub fn push(
        &mut self,
        time: u64,
        process: Process,
        kind: OpType,
        f: F,
        value: Value,
    ) -> &mut Self {
        let index = self.ops.len() as u64;
        self.ops.push(Op {
            index,
            ..Op::new(time, process, kind, f, value)
        });
        self
    }

    pub fn client(
        &mut self,
        p: u64,
        time: u64,
        kind: OpType,
        f: F,
        acq: &str,
        token: Option<u64>,
    ) -> &mut Self {
        self.push(
            time,
            Process::Client(p),
            kind,
            f,
            json!({"acquisition": acq, "token": token}),
        )
    }

    /// A successful acquire: invoked at `invoked`, ok at `ok`.
    pub fn acquire(
        &mut self,
        p: u64,
        acq: &str,
        invoked: u64,
        ok: u64,
        token: Option<u64>,
    ) -> &mut Self {
        self.client(p, invoked, OpType::Invoke, F::Acquire, acq, None)
            .client(p, ok, OpType::Ok, F::Acquire, acq, token)
    }

    /// A successful acquire whose ok records a lease (`expires_by` `None` for unbounded) and,
    /// optionally, a `granted_after`.
    pub fn acquire_leased(
        &mut self,
        p: u64,
        acq: &str,
        (invoked, ok): (u64, u64),
        (live_until, expires_by): (u64, Option<u64>),
        granted_after: Option<u64>,
    ) -> &mut Self {
        let mut value = json!({"acquisition": acq, "token": null,
            "lease": {"live_until": live_until, "expires_by": expires_by}});
        if let Some(g) = granted_after {
            value["granted_after"] = json!(g);
        }
        self.client(p, invoked, OpType::Invoke, F::Acquire, acq, None)
            .push(ok, Process::Client(p), OpType::Ok, F::Acquire, value)
    }

    /// A background renewal of `acq`'s lease.
    pub fn renew(
        &mut self,
        p: u64,
        acq: &str,
        time: u64,
        live_until: u64,
        expires_by: Option<u64>,
    ) -> &mut Self {
        let value = json!({"acquisition": acq,
            "lease": {"live_until": live_until, "expires_by": expires_by}});
        self.push(time, Process::Client(p), OpType::Ok, F::Renew, value)
    }

    pub fn release(&mut self, p: u64, acq: &str, invoked: u64, done: u64) -> &mut Self {
        self.client(p, invoked, OpType::Invoke, F::Release, acq, None)
            .client(p, done, OpType::Ok, F::Release, acq, None)
    }

    /// The resource's record of the next access (numbered in order).
    pub fn resource(
        &mut self,
        time: u64,
        p: u64,
        acq: &str,
        token: Option<u64>,
        op: &str,
        accepted: bool,
    ) -> &mut Self {
        self.seq += 1;
        let value = json!({"seq": self.seq, "process": p, "acquisition": acq, "token": token, "op": op, "value": 0});
        let kind = if accepted { OpType::Ok } else { OpType::Fail };
        self.push(time, Process::named("resource"), kind, F::Access, value)
    }

    pub fn final_read(&mut self, time: u64, value: i64, applied: u64) -> &mut Self {
        let v = json!({"value": value, "applied": applied});
        self.push(time, Process::named("harness"), OpType::Ok, F::FinalRead, v)
    }

    /// The final read the clean way: it agrees with every access recorded so far.
    pub fn final_read_agreeing(&mut self, time: u64) -> &mut Self {
        let applied = self.seq;
        self.final_read(time, 0, applied)
    }

    pub fn fault(&mut self, id: u64, start: u64, stop: u64, target: &str) -> &mut Self {
        let value = json!({"id": id, "fault": "pause", "targets": [target]});
        self.fault_with(start, Some(stop), value)
    }

    /// A fault window with the given start value (`id`, `fault`, `targets`, ...); its stop
    /// repeats it. `stop` `None`: it never stopped.
    pub fn fault_with(&mut self, start: u64, stop: Option<u64>, value: Value) -> &mut Self {
        let nemesis = Process::named("nemesis");
        self.push(
            start,
            nemesis.clone(),
            OpType::Info,
            F::Start,
            value.clone(),
        );
        if let Some(stop) = stop {
            self.push(stop, nemesis, OpType::Info, F::Stop, value);
        }
        self
    }

    /// The history as the JSON lines a run writes.
    pub fn text(&self) -> String {
        self.ops.iter().map(|op| op.to_json_line() + "\n").collect()
    }
}
