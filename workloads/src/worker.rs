//! The loop every client process runs: acquire (one attempt at a time, with a random back-off
//! between attempts) → read the resource → work → write the resource → release → back off,
//! recording every step as an invoke and its outcome. Written once for every lock.
//!
//! The back-off after a release is what makes clients take turns: a lock that queues nobody
//! (a Redis `SET NX`) goes to whoever asks first after the release, and without a pause that is
//! the client that just released it, every time, while the others starve. Sleeping longer
//! than a waiter's retry interval hands the next turn to a waiter.
//!
//! The loop is bounded in time (`deadline`) and in count (`max_attempts`). After the deadline no
//! new acquire starts, but a held lock is still worked on and released, so a client frozen in
//! its critical section still shows what it does when it wakes up.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use lockpick_checkers::model::AccessKind;
use lockpick_checkers::{OpType, F};
use rand::Rng;
use serde_json::{json, Value};

use crate::lock_client::{Grant, LockClient, Outcome};
use crate::recorder::Recorder;
use crate::renewal_gate::RenewalGate;
use crate::resource_client::{AccessRequest, ResourceClient};

#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub process: u64,
    /// How long one acquire attempt may wait where the service queues waiters.
    pub acquire_wait: Duration,
    /// Time spent between the read and the write, as real work would.
    pub work: Duration,
    /// Longest random pause between failed acquire attempts; the pause after a release is
    /// drawn from half to twice this, so that a waiter's retry comes first.
    pub backoff: Duration,
    /// No acquire attempt starts after this (ns since the run began), unless the controller
    /// extends the quiet phase.
    pub deadline_ns: u64,
    /// The controller's extension of the quiet phase past the deadline.
    pub extension: QuietExtension,
    /// No more than this many acquire attempts in all.
    pub max_attempts: u64,
}

/// The quiet phase past the deadline, when the controller asks for it: a lock refused to
/// everyone at the end of a run is a jam only once refused for longer than the jam bound, so
/// the controller asks the clients to go on trying (`extended`, by at most `by_ns`) until the
/// history proves the jam or the lock is granted again (`ended`).
#[derive(Clone, Debug, Default)]
pub struct QuietExtension {
    pub by_ns: u64,
    pub extended: Arc<AtomicBool>,
    pub ended: Arc<AtomicBool>,
}

impl QuietExtension {
    /// The deadline in force: `base`, or `base` + the extension while it lasts.
    pub fn deadline(&self, base: u64) -> u64 {
        if self.extended.load(Ordering::SeqCst) && !self.ended.load(Ordering::SeqCst) {
            base.saturating_add(self.by_ns)
        } else {
            base
        }
    }
}

/// Runs the loop until the deadline or the attempt bound. Returns an error only when the
/// operations cannot be recorded (the controller is gone).
pub fn run<W: Write + Send + 'static>(
    config: &WorkerConfig,
    lock: &mut dyn LockClient,
    resource: &mut ResourceClient,
    recorder: &Recorder<W>,
) -> io::Result<()> {
    let mut rng = rand::thread_rng();
    let mut attempts = 0;
    let mut library_said = false;
    while attempts < config.max_attempts
        && recorder.clock().now() < config.extension.deadline(config.deadline_ns)
    {
        attempts += 1;
        let acquisition = format!("{}.{}", config.process, attempts);
        recorder.record(
            OpType::Invoke,
            F::Acquire,
            json!({ "acquisition": acquisition }),
        )?;
        // The client may renew before it returns: the gate holds those renewals until the
        // grant is recorded, so a `renew` never comes before its `acquire ok`.
        let gate = RenewalGate::new(recorder, &acquisition);
        let outcome = lock.try_acquire(config.acquire_wait, gate.on_renewal());
        // Once per process, on the first completion that knows it (an exec program's hello
        // comes with its first operation).
        let library = match lock.library() {
            Some(library) if !library_said => {
                library_said = true;
                Some(library)
            }
            _ => None,
        };
        match outcome {
            Outcome::Ok(grant) => {
                let mut value = json!({
                    "acquisition": acquisition,
                    "token": grant.token,
                    "lease": grant.lease,
                });
                if let Some(library) = library {
                    value["library"] = json!(library);
                }
                if !grant.granted_by.is_empty() {
                    value["nodes"] = json!(grant.granted_by);
                }
                if let Some(granted_after) = grant.granted_after {
                    value["granted_after"] = json!(granted_after);
                }
                if grant.lower_tokens_gone {
                    value["lower_tokens_gone"] = json!(true);
                }
                if let Some(server_lease) = grant.server_lease {
                    value["server_lease"] = json!(server_lease);
                }
                gate.open(|| recorder.record(OpType::Ok, F::Acquire, value))?;
                critical_section(config, &acquisition, &grant, resource, recorder)?;
                recorder.record(
                    OpType::Invoke,
                    F::Release,
                    json!({ "acquisition": acquisition }),
                )?;
                let mut body = json!({ "acquisition": acquisition, "token": grant.token });
                let outcome = match lock.release(&grant) {
                    Outcome::Ok(()) => Outcome::Ok(()),
                    Outcome::Fail(failed) => {
                        if let Some(kind) = failed.kind {
                            body["kind"] = json!(kind);
                        }
                        Outcome::Fail(failed.error)
                    }
                    Outcome::Info(why) => Outcome::Info(why),
                };
                record_outcome(recorder, F::Release, body, outcome, |_| Value::Null)?;
                // Turns: a client that just released waits longer than a refused client's
                // back-off, so a waiting client takes the lock next instead of the releaser
                // taking it again at once (on Redis, the fastest client would hold it forever
                // and the others would never be tested).
                let backoff = config.backoff.as_micros() as u64;
                thread::sleep(Duration::from_micros(rng.gen_range(backoff..=backoff * 2)));
            }
            outcome => {
                let mut body = json!({ "acquisition": acquisition, "token": null });
                if let Some(library) = library {
                    body["library"] = json!(library);
                }
                if matches!(outcome, Outcome::Info(_)) {
                    if let Some(server_lease) = lock.server_lease_after_unknown() {
                        body["server_lease"] = json!(server_lease);
                    }
                }
                record_outcome(recorder, F::Acquire, body, outcome, |_: Grant| Value::Null)?;
                let backoff = config.backoff.as_micros() as u64;
                thread::sleep(Duration::from_micros(rng.gen_range(backoff / 4..=backoff)));
            }
        }
    }
    Ok(())
}

/// Read, work, write. Stops at the first access that did not succeed: a client that was refused
/// or got no answer does not go on as if it knew the value.
fn critical_section<W: Write>(
    config: &WorkerConfig,
    acquisition: &str,
    grant: &Grant,
    resource: &mut ResourceClient,
    recorder: &Recorder<W>,
) -> io::Result<()> {
    let mut request = AccessRequest {
        process: config.process,
        acquisition: acquisition.to_string(),
        token: grant.token,
        op: AccessKind::Read,
        value: 0,
    };
    let mut access = |request: &AccessRequest, f: F, recorder: &Recorder<W>| {
        let mut invoke = json!({ "acquisition": acquisition, "token": grant.token });
        if f == F::Write {
            invoke["value"] = json!(request.value);
        }
        recorder.record(OpType::Invoke, f, invoke)?;
        let outcome = resource.access(request);
        let value = match &outcome {
            Outcome::Ok(v) => Some(*v),
            _ => None,
        };
        let body = json!({ "acquisition": acquisition, "token": grant.token });
        record_outcome(recorder, f, body, outcome, |v| json!(v))?;
        Ok::<_, io::Error>(value)
    };

    let Some(read) = access(&request, F::Read, recorder)? else {
        return Ok(());
    };
    thread::sleep(config.work);
    request.op = AccessKind::Write;
    request.value = read + 1;
    access(&request, F::Write, recorder)?;
    Ok(())
}

/// Records the completion of an operation (`body` holds its acquisition and token): `ok` with
/// its value, `fail` or `info` with the error.
fn record_outcome<W: Write, T>(
    recorder: &Recorder<W>,
    f: F,
    mut body: Value,
    outcome: Outcome<T>,
    value: impl FnOnce(T) -> Value,
) -> io::Result<()> {
    let kind = match outcome {
        Outcome::Ok(v) => {
            let v = value(v);
            if !v.is_null() {
                body["value"] = v;
            }
            OpType::Ok
        }
        Outcome::Fail(error) => {
            body["error"] = json!(error);
            OpType::Fail
        }
        Outcome::Info(error) => {
            body["error"] = json!(error);
            OpType::Info
        }
    };
    recorder.record(kind, f, body)
}
