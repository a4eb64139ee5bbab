//! The checks, in order, each judged from the program's own answers and printed as one line
//! when it ends. Two instances of the program contend for one lock, as two clients of a run:
//! instance 1 takes the lock, instance 2 is refused while it holds it, instance 1 releases and
//! instance 2 takes it; then every server is stopped, and a request of each (instance 1's
//! acquire, instance 2's release) must come back `unknown` within its bound. A check whose
//! premise an earlier one did not establish is skipped, naming it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use lockpick_workloads::exec_session::{Answer, Verdict};
use serde_json::{json, Value};

use super::instance::Instance;
use super::judge::{self, judge, Expected, Outcome};
use super::testbed::Testbed;
use super::CheckConfig;

pub const HELLO: &str = "hello";
pub const ACQUIRE: &str = "acquire";
pub const ACQUIRE_HELD: &str = "acquire while held";
pub const RELEASE: &str = "release";
pub const ACQUIRE_AFTER_RELEASE: &str = "acquire after release";
pub const ACQUIRE_STOPPED: &str = "acquire while stopped";
pub const RELEASE_STOPPED: &str = "release while stopped";

/// One check's result, as its line says it.
pub struct Finding {
    pub check: &'static str,
    pub outcome: Outcome,
    pub detail: String,
}

struct Checks<'a> {
    testbed: &'a Testbed,
    config: &'a CheckConfig,
    instances: [Instance; 2],
    findings: Vec<Finding>,
    interrupt: &'a AtomicBool,
    /// When instance 1's granted acquire was sent.
    held_since: Option<Instant>,
}

/// Runs every check against `testbed`'s servers, printing each line as it ends.
pub fn run(
    testbed: &Testbed,
    config: &CheckConfig,
    interrupt: &AtomicBool,
) -> Result<Vec<Finding>> {
    let instances = [1, 2].map(|n| Instance::new(n, testbed, config));
    let mut checks = Checks {
        testbed,
        config,
        instances,
        findings: Vec::new(),
        interrupt,
        held_since: None,
    };
    checks.step(HELLO, &[], Checks::hello);
    checks.step(ACQUIRE, &[HELLO], Checks::acquire);
    checks.step(ACQUIRE_HELD, &[ACQUIRE], Checks::acquire_held);
    checks.step(RELEASE, &[ACQUIRE], Checks::release);
    checks.step(
        ACQUIRE_AFTER_RELEASE,
        &[RELEASE, ACQUIRE_HELD],
        Checks::acquire_after_release,
    );
    // A program killed for a breakage starts afresh for its next acquire, as in a run, and
    // before the servers stop (its library may connect as it starts).
    let stop = checks.passed(HELLO) && !interrupt.load(Ordering::SeqCst);
    let restarted = match stop && !checks.instances[0].running() {
        true => Some(checks.instances[0].start(testbed, &config.program)),
        false => None,
    };
    let stopped_at = Instant::now();
    if stop {
        testbed.stop_servers()?;
    }
    checks.step(ACQUIRE_STOPPED, &[HELLO], |c| match restarted {
        Some(Err(breakage)) => (
            Outcome::Fail,
            format!("instance 1, started afresh after breaking, {breakage}"),
        ),
        _ => c.acquire_stopped(),
    });
    checks.step(
        RELEASE_STOPPED,
        &[ACQUIRE_AFTER_RELEASE],
        Checks::release_stopped,
    );
    if stop {
        // The stop outlasts an acquire's whole bound, however fast the answers came: a
        // request the program still has under way (a retry, a queued command) meets the
        // stopped server, not a resumed one.
        let (bound, _) = checks.acquire_bound();
        std::thread::sleep(bound.saturating_sub(stopped_at.elapsed()));
        testbed.resume_servers()?;
    }
    for instance in &mut checks.instances {
        instance.finish();
    }
    Ok(checks.findings)
}

impl Checks<'_> {
    fn passed(&self, check: &str) -> bool {
        self.findings
            .iter()
            .any(|f| f.check == check && f.outcome == Outcome::Pass)
    }

    /// Runs `body` unless the check was interrupted or a check it needs did not pass, and
    /// prints its line.
    fn step(
        &mut self,
        check: &'static str,
        needs: &[&str],
        body: impl FnOnce(&mut Self) -> (Outcome, String),
    ) {
        let unmet = needs.iter().find(|n| !self.passed(n));
        let (outcome, detail) = if self.interrupt.load(Ordering::SeqCst) {
            (Outcome::Skip, "interrupted".to_string())
        } else if let Some(need) = unmet {
            (Outcome::Skip, format!("needs `{need}` to pass"))
        } else {
            body(self)
        };
        crate::say!(
            "{}",
            crate::text::terminal::neutral(&format!("  {}  {check}: {detail}", outcome.word()))
        );
        self.findings.push(Finding {
            check,
            outcome,
            detail,
        });
    }

    /// The bound of an acquire (its wait, then the op timeout to answer) and of a release.
    fn acquire_bound(&self) -> (Duration, String) {
        let (wait, timeout) = (self.config.op_timeout, self.config.op_timeout);
        let bound = wait + timeout;
        let words = format!(
            "{} ms (wait_ms {} + op timeout {} ms)",
            bound.as_millis(),
            wait.as_millis(),
            timeout.as_millis()
        );
        (bound, words)
    }

    fn release_bound(&self) -> (Duration, String) {
        let timeout = self.config.op_timeout;
        (
            timeout,
            format!("{} ms (the op timeout)", timeout.as_millis()),
        )
    }

    fn acquire_fields(&self) -> Value {
        json!({ "wait_ms": self.config.op_timeout.as_millis() as u64 })
    }

    fn hello(&mut self) -> (Outcome, String) {
        let mut said = Vec::new();
        for instance in &mut self.instances {
            match instance.start(self.testbed, &self.config.program) {
                Ok(took) => said.push(format!(
                    "instance {} said {} in {} ms",
                    instance.number,
                    instance.hello(),
                    took.as_millis()
                )),
                Err(breakage) => {
                    let why = format!("instance {} {breakage}", instance.number);
                    return (Outcome::Fail, why + " (see workloads/PROTOCOL.md, hello)");
                }
            }
        }
        (Outcome::Pass, said.join("; "))
    }

    /// Instance `index` requests `op` and the answer is judged against what is expected.
    fn exchange(
        &mut self,
        index: usize,
        op: &str,
        situation: &str,
        want: Verdict,
        wrong: &dyn Fn(&Answer) -> String,
        late: &str,
    ) -> (Outcome, String, bool) {
        let ((bound, bound_words), fields) = match op {
            "acquire" => (self.acquire_bound(), self.acquire_fields()),
            _ => (self.release_bound(), json!({})),
        };
        let exchange = self.instances[index].request(op, fields, bound);
        let expected = Expected {
            who: format!("instance {} ({situation})", index + 1),
            want,
            bound: bound_words,
            wrong,
            late,
        };
        let (outcome, detail) = judge(&exchange, &expected);
        let ok = matches!(&exchange.reply, Ok(a) if a.result == Verdict::Ok);
        (outcome, detail, ok)
    }

    fn acquire(&mut self) -> (Outcome, String) {
        let sent = Instant::now();
        let wrong = |_: &Answer| {
            "the lock is free and the server answers, so it is granted: does the program \
             lock LOCKPICK_KEY on LOCKPICK_SERVERS?"
                .to_string()
        };
        let (outcome, detail, ok) = self.exchange(
            0,
            "acquire",
            "the lock free",
            Verdict::Ok,
            &wrong,
            judge::LATE_WHILE_UP,
        );
        self.held_since = ok.then_some(sent);
        (outcome, detail)
    }

    fn acquire_held(&mut self) -> (Outcome, String) {
        let since = self.held_since.map_or(0, |at| at.elapsed().as_millis());
        let ttl = self.config.ttl.as_millis();
        let wrong = move |answer: &Answer| match answer.result {
            Verdict::Ok => format!(
                "granted while instance 1 holds the lock (its acquire was sent {since} ms \
                 before, with a TTL of {ttl} ms): two holders at once; does every instance \
                 lock LOCKPICK_KEY with a lease of LOCKPICK_TTL_MS?"
            ),
            _ => "the server answered and the lock is held, so the refusal is certain: the \
                  answer is fail (unknown is for a request that may have taken effect)"
                .to_string(),
        };
        let (outcome, detail, _) = self.exchange(
            1,
            "acquire",
            "instance 1 holds the lock",
            Verdict::Fail,
            &wrong,
            judge::LATE_WHILE_UP,
        );
        (outcome, detail)
    }

    fn release(&mut self) -> (Outcome, String) {
        let wrong = |_: &Answer| {
            "instance 1 holds the lock within its TTL and the server answers, so its release \
             takes effect"
                .to_string()
        };
        let (outcome, detail, _) = self.exchange(
            0,
            "release",
            "it holds the lock",
            Verdict::Ok,
            &wrong,
            judge::LATE_WHILE_UP,
        );
        (outcome, detail)
    }

    fn acquire_after_release(&mut self) -> (Outcome, String) {
        let wrong = |_: &Answer| {
            "instance 1's release was ok, so the lock is free: did the release take effect?"
                .to_string()
        };
        let (outcome, detail, _) = self.exchange(
            1,
            "acquire",
            "instance 1 released the lock",
            Verdict::Ok,
            &wrong,
            judge::LATE_WHILE_UP,
        );
        (outcome, detail)
    }

    fn acquire_stopped(&mut self) -> (Outcome, String) {
        let server = self.testbed.server_program;
        let wrong = move |answer: &Answer| judge::not_unknown_while_stopped(answer, server);
        let situation = format!("every {server} process stopped with SIGSTOP");
        let (outcome, detail, _) = self.exchange(
            0,
            "acquire",
            &situation,
            Verdict::Unknown,
            &wrong,
            judge::LATE_WHILE_STOPPED,
        );
        (outcome, detail)
    }

    fn release_stopped(&mut self) -> (Outcome, String) {
        let server = self.testbed.server_program;
        let wrong = move |answer: &Answer| judge::not_unknown_while_stopped(answer, server);
        let situation = format!("it holds the lock, every {server} process stopped with SIGSTOP");
        let (outcome, detail, _) = self.exchange(
            1,
            "release",
            &situation,
            Verdict::Unknown,
            &wrong,
            judge::LATE_WHILE_STOPPED,
        );
        (outcome, detail)
    }
}
