//! A lock client that is someone else's program (`--lock exec:<service>:<command>`): a thin
//! adapter over a real library (redis-py, kazoo, etcd's Go client...) that speaks the JSON-lines
//! protocol of `workloads/PROTOCOL.md`. The worker loop, the resource accesses and the history
//! stay here, so every nemesis and checker applies unchanged.
//!
//! The program runs as a child of the `lockpick client` process, in its node and process group.
//! Whatever it does, each call returns by its deadline: a program that breaks the protocol is
//! killed, its operation recorded as `info` (it may have taken effect), one line says why in the
//! client's log, and the next operation starts the program afresh.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use crate::client_spec::ClientSpec;
use crate::clock::RunClock;
use crate::exec_clock::ClockAsks;
use crate::exec_renewal::Renewals;
use crate::exec_server_check::ServerCheck;
use crate::exec_session::{Answer, Breakage, Session, Verdict};
use crate::lease::{Lease, OnRenewal, Renewal, Renewed, ServerLease, Watchdog};
use crate::lock_client::{Grant, LockClient, Outcome, ReleaseFail, Released};

pub use crate::exec_launch::{environment, EXIT_GRACE, HELLO_WITHIN};

/// Why a request got no answer.
enum NoAnswer {
    /// The program could not be started: the request was never sent.
    NotSent(String),
    /// The program broke the protocol after the request was sent: it may have taken effect.
    Lost(String),
    /// The program that held the lock is gone (it broke during an `extend`).
    Gone,
}

pub struct ExecClient {
    program: Vec<String>,
    env: Vec<(String, String)>,
    ttl: Duration,
    timeout: Duration,
    clock: RunClock,
    shared: Arc<Mutex<Shared>>,
    watchdog: Option<Watchdog>,
    /// Asks the lock's server for its own count of each granted or extended lease, when it can
    /// be asked (shared with the watchdog that sends `extend`).
    server_check: Arc<Mutex<Option<Box<dyn ServerCheck>>>>,
    /// The library the program named in its first hello (of any start), cut to
    /// [`MAX_LIBRARY_CHARS`].
    library: OnceLock<String>,
    /// Where the renewals a program's library makes in the background are reported.
    renewals: Renewals,
    /// Answers `skew-clients`'s asks for the program's clock, before each request.
    clock_asks: Option<Mutex<ClockAsks>>,
}

/// The longest library a history records: a program's hello is its own word, of any length.
pub const MAX_LIBRARY_CHARS: usize = 200;

/// The running program (if any), shared with the watchdog that sends `extend`.
struct Shared {
    process: u64,
    session: Option<Session>,
    /// How many times each kind of breakage happened; only the first of each is logged.
    breakages: BTreeMap<&'static str, u64>,
}

impl Shared {
    /// Kills the program and says why, once per kind of breakage.
    fn broke(&mut self, program: &str, breakage: &Breakage, during: &str) -> String {
        if let Some(session) = self.session.take() {
            session.kill();
        }
        let message = format!("the client program `{program}` {breakage} during {during}");
        let count = self.breakages.entry(breakage.kind()).or_insert(0);
        *count += 1;
        if *count == 1 {
            eprintln!(
                "lockpick client {}: {message}; recorded as info, the program is restarted for \
                 the next operation (see workloads/PROTOCOL.md)",
                self.process
            );
        }
        message
    }
}

impl ExecClient {
    /// A client that runs `program` (already split into words) for the process `spec`
    /// describes. The program starts with the first operation.
    pub fn new(program: Vec<String>, spec: &ClientSpec) -> ExecClient {
        ExecClient {
            program,
            env: environment(
                &spec.nodes,
                spec.ttl_ms,
                spec.op_timeout_ms,
                spec.process,
                &spec.key,
            ),
            ttl: spec.ttl(),
            timeout: spec.op_timeout(),
            clock: spec.run_clock(),
            shared: Arc::new(Mutex::new(Shared {
                process: spec.process,
                session: None,
                breakages: BTreeMap::new(),
            })),
            watchdog: None,
            server_check: Arc::new(Mutex::new(None)),
            library: OnceLock::new(),
            renewals: Renewals::new(spec.run_clock()),
            clock_asks: None,
        }
    }

    /// The same client, asking `check` for the server's count of the lease after each grant
    /// or extend whose answer reports bounds.
    pub fn checked_by(self, check: Option<Box<dyn ServerCheck>>) -> ExecClient {
        *self.server_check.lock().unwrap_or_else(|e| e.into_inner()) = check;
        self
    }

    /// The same client, telling `asks` its program's clock when the harness asks.
    pub fn clock_asked_by(mut self, asks: ClockAsks) -> ExecClient {
        self.clock_asks = Some(Mutex::new(asks));
        self
    }

    /// The server's count of the lease an `ok` answer reports bounds for, if it can be asked.
    fn ask_server(
        check: &Mutex<Option<Box<dyn ServerCheck>>>,
        answer: &Answer,
        clock: &RunClock,
    ) -> Option<ServerLease> {
        if answer.valid_ms.is_none() && answer.expires_ms.is_none() {
            return None;
        }
        let mut check = check.lock().unwrap_or_else(|e| e.into_inner());
        check.as_mut().and_then(|c| c.ask(clock))
    }

    fn shown(&self) -> String {
        self.program.join(" ")
    }

    /// Sends one request and waits up to `bound` for its answer, starting the program first
    /// (and waiting for its hello apart) if it is not running and `start` says so. Gives the
    /// answer and when the request was sent (after any start: a lease the program took is
    /// live from its request, not from before the program ran).
    fn exchange(
        &self,
        op: &str,
        fields: Value,
        bound: Duration,
        start: bool,
    ) -> Result<(Answer, u64), NoAnswer> {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if shared.session.is_none() {
            if !start {
                return Err(NoAnswer::Gone);
            }
            match Session::start(&self.program, &self.env, HELLO_WITHIN, &self.renewals) {
                Ok(session) => {
                    if let Some(library) = &session.library {
                        let _ = self
                            .library
                            .set(library.chars().take(MAX_LIBRARY_CHARS).collect());
                    }
                    shared.session = Some(session);
                }
                Err(breakage) => {
                    let message = shared.broke(&self.shown(), &breakage, "its start");
                    return Err(NoAnswer::NotSent(format!("{message}: nothing was sent")));
                }
            }
        }
        let session = shared.session.as_mut().expect("started above");
        if let Some(asks) = &self.clock_asks {
            let mut asks = asks.lock().unwrap_or_else(|e| e.into_inner());
            if let Err(breakage) = asks.answer(session, self.timeout) {
                let message = shared.broke(&self.shown(), &breakage, "clock");
                return Err(NoAnswer::NotSent(format!("{message}: {op} was not sent")));
            }
        }
        let session = shared.session.as_mut().expect("started above");
        let sent = self.clock.now();
        session
            .request(op, fields, bound)
            .map(|answer| (answer, sent))
            .map_err(|breakage| NoAnswer::Lost(shared.broke(&self.shown(), &breakage, op)))
    }

    /// The lease an answer describes, for a request sent at `invoke` and answered at
    /// `completion`: without `valid_ms` nothing beyond the request is promised, and without
    /// `expires_ms` the lease has no known end. `valid_ms` counts from the request, or from the
    /// grant's lower bound when the answer gives one (the program read the request after
    /// `invoke`, so that bound is no later than its last attempt was really sent).
    fn lease(answer: &Answer, invoke: u64, completion: u64) -> Lease {
        let from = Self::granted_after(answer, invoke, completion).unwrap_or(invoke);
        Lease {
            live_until: from.saturating_add(answer.valid_ms.unwrap_or(0).saturating_mul(1_000_000)),
            expires_by: answer
                .expires_ms
                .map(|ms| completion.saturating_add(ms.saturating_mul(1_000_000))),
        }
    }

    /// The lower bound of the grant an answer gives, on the run clock, never past its answer.
    fn granted_after(answer: &Answer, invoke: u64, completion: u64) -> Option<u64> {
        answer.granted_after_ms.map(|ms| {
            invoke
                .saturating_add(ms.saturating_mul(1_000_000))
                .min(completion)
        })
    }

    fn start_watchdog(&mut self, lease: Lease, mut on_renewal: OnRenewal) {
        let (shared, clock, timeout) = (Arc::clone(&self.shared), self.clock, self.timeout);
        let shown = self.shown();
        // The server's count of an extended lease goes with the renewal the watchdog reports
        // next: the one this extend made (an unknown or lost one reports no count).
        let counted: Arc<Mutex<Option<ServerLease>>> = Arc::default();
        let (check, count) = (Arc::clone(&self.server_check), Arc::clone(&counted));
        let report: OnRenewal = Box::new(move |renewal| {
            let server = counted.lock().unwrap_or_else(|e| e.into_inner()).take();
            on_renewal(Renewal { server, ..renewal })
        });
        let renew = move || {
            let mut shared = shared.lock().unwrap_or_else(|e| e.into_inner());
            let Some(session) = shared.session.as_mut() else {
                return Renewed::GaveUp;
            };
            let invoke = clock.now();
            match session.request("extend", json!({}), timeout) {
                Ok(answer) => match answer.result {
                    Verdict::Ok => {
                        let lease = Self::lease(&answer, invoke, clock.now());
                        *count.lock().unwrap_or_else(|e| e.into_inner()) =
                            Self::ask_server(&check, &answer, &clock);
                        Renewed::Extended(lease)
                    }
                    Verdict::Fail => Renewed::Lost,
                    Verdict::Unknown => Renewed::Unknown,
                },
                // A slow extend (its server paused or cut off) is not the program breaking:
                // killing it would end its session and free the lock under a holder still at
                // work, a violation of lockpick's making. Its lease is unknown from now on.
                Err(Breakage::Silent(_)) => Renewed::Unknown,
                Err(breakage) => {
                    shared.broke(&shown, &breakage, "extend");
                    Renewed::GaveUp
                }
            }
        };
        let period = self.ttl / 3;
        self.watchdog = Some(Watchdog::start(
            self.clock, lease, period, period, report, renew,
        ));
    }
}

impl LockClient for ExecClient {
    fn try_acquire(&mut self, wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        // The program may wait `wait` for the lock, then has the op timeout to answer. Which of
        // `extend` or reported renewals it uses is known from its hello, once it has started;
        // both hear of renewals through one `on_renewal`.
        let on_renewal = Arc::new(Mutex::new(on_renewal));
        self.renewals.expect(shared_renewal(&on_renewal));
        let fields = json!({ "wait_ms": wait.as_millis() as u64 });
        let exchanged = self.exchange("acquire", fields, wait + self.timeout, true);
        if !matches!(&exchanged, Ok((answer, _)) if answer.result == Verdict::Ok) {
            self.renewals.stop();
        }
        let (answer, invoke) = match exchanged {
            Ok(sent) => sent,
            Err(NoAnswer::Lost(why)) => return Outcome::Info(why),
            Err(NoAnswer::NotSent(why)) => {
                // Nothing runs to be asked: wait as an attempt would, rather than spin.
                std::thread::sleep(wait);
                return Outcome::Fail(why);
            }
            Err(NoAnswer::Gone) => unreachable!("an acquire starts the program"),
        };
        let error = answer.error.clone();
        match answer.result {
            Verdict::Ok => {
                let completion = self.clock.now();
                let lease = Self::lease(&answer, invoke, completion);
                let granted_after = Self::granted_after(&answer, invoke, completion);
                // Asked before the work starts; a freeze in between can only make the server's
                // count later, never contradict an honest report.
                let server_lease = Self::ask_server(&self.server_check, &answer, &self.clock);
                let extends = {
                    let shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
                    shared.session.as_ref().is_some_and(|s| s.extends)
                };
                if extends {
                    self.start_watchdog(lease, shared_renewal(&on_renewal));
                }
                self.renewals.granted(lease);
                Outcome::Ok(Grant {
                    token: answer.token,
                    handle: answer.id.to_string(),
                    granted_by: answer.granted_by.unwrap_or_default(),
                    lease,
                    granted_after,
                    lower_tokens_gone: false,
                    server_lease,
                })
            }
            Verdict::Fail => Outcome::Fail(error.unwrap_or_else(|| "not granted".to_string())),
            Verdict::Unknown => {
                Outcome::Info(error.unwrap_or_else(|| "the program does not know".to_string()))
            }
        }
    }

    fn server_lease_after_unknown(&mut self) -> Option<ServerLease> {
        // Only a key with no expiry is worth telling: one with an expiry ends by itself.
        let mut check = self.server_check.lock().unwrap_or_else(|e| e.into_inner());
        check
            .as_mut()
            .and_then(|c| c.ask(&self.clock))
            .filter(|s| s.ended_by.is_none())
    }

    fn library(&self) -> Option<String> {
        self.library.get().cloned()
    }

    fn release(&mut self, _grant: &Grant) -> Released {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        let released = self.exchange("release", json!({}), self.timeout, false);
        // A renewal the library finished while releasing (python-redis-lock's release waits for
        // its renewal thread) is reported before the answer, and still recorded.
        self.renewals.stop();
        match released {
            Ok((answer, _)) => match answer.result {
                Verdict::Ok => Outcome::Ok(()),
                Verdict::Fail => Outcome::Fail(ReleaseFail {
                    kind: answer.kind,
                    error: answer
                        .error
                        .unwrap_or_else(|| "the program said fail".to_string()),
                }),
                Verdict::Unknown => Outcome::Info(
                    answer
                        .error
                        .unwrap_or_else(|| "the program does not know".to_string()),
                ),
            },
            Err(NoAnswer::Lost(why)) | Err(NoAnswer::NotSent(why)) => Outcome::Info(why),
            // A fresh program would hold nothing: the one that held the lock is gone, and
            // whether its lease has ended is not known.
            Err(NoAnswer::Gone) => Outcome::Info(
                "the client program that held the lock broke while extending it".to_string(),
            ),
        }
    }
}

/// One more caller of a grant's `on_renewal`.
fn shared_renewal(on_renewal: &Arc<Mutex<OnRenewal>>) -> OnRenewal {
    let on_renewal = Arc::clone(on_renewal);
    Box::new(move |renewal| (on_renewal.lock().unwrap_or_else(|e| e.into_inner()))(renewal))
}

impl Drop for ExecClient {
    fn drop(&mut self) {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        self.renewals.stop();
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(session) = shared.session.take() {
            session.finish(EXIT_GRACE);
        }
        let repeats: u64 = shared.breakages.values().map(|n| n - 1).sum();
        if repeats > 0 {
            eprintln!(
                "lockpick client {}: the client program broke the protocol {repeats} more \
                 time(s) after the lines above",
                shared.process
            );
        }
    }
}

#[cfg(test)]
mod tests;
