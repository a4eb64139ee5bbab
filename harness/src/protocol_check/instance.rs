//! One running copy of the program under check, in a client node of its own, spoken to through
//! the session a run's client uses, with the same bounds. A program that breaks the protocol is
//! killed, as in a run, and started afresh for its next acquire.

use std::time::{Duration, Instant};

use lockpick_workloads::clock::RunClock;
use lockpick_workloads::exec_client::{environment, EXIT_GRACE, HELLO_WITHIN};
use lockpick_workloads::exec_renewal::Renewals;
use lockpick_workloads::exec_session::{Answer, Breakage, Session};
use serde_json::Value;

use super::testbed::Testbed;
use super::CheckConfig;

/// The lock's name every instance is given (LOCKPICK_KEY), as in a run.
const KEY: &str = "lockpick";

pub struct Instance {
    /// 1 or 2, as the check's lines name it; its LOCKPICK_CLIENT is one less.
    pub number: usize,
    env: Vec<(String, String)>,
    session: Option<Session>,
    /// Where its renewal reports would go: the check holds no lock of a run, so none is
    /// recorded.
    renewals: Renewals,
}

/// One request and what came of it.
pub struct Exchange {
    /// The request, as written to the program.
    pub sent: Value,
    /// From the request's writing to its answer (or to the bound, without one).
    pub took: Duration,
    pub reply: Result<Answer, Breakage>,
}

impl Instance {
    pub fn new(number: usize, testbed: &Testbed, config: &CheckConfig) -> Instance {
        Instance {
            number,
            env: environment(
                &testbed.endpoints,
                config.ttl.as_millis() as u64,
                config.op_timeout.as_millis() as u64,
                number as u64 - 1,
                KEY,
            ),
            session: None,
            renewals: Renewals::new(RunClock::start()),
        }
    }

    pub fn running(&self) -> bool {
        self.session.is_some()
    }

    /// Starts the program in its node and waits for its hello; gives how long that took.
    pub fn start(&mut self, testbed: &Testbed, program: &[String]) -> Result<Duration, Breakage> {
        let command = testbed
            .program_command(self.number - 1, program, &self.env)
            .map_err(|e| Breakage::CannotStart(format!("{e:#}")))?;
        let began = Instant::now();
        self.session = Some(Session::start_command(
            command,
            HELLO_WITHIN,
            &self.renewals,
        )?);
        Ok(began.elapsed())
    }

    /// The hello it said, as it wrote it (every field, `clock` and `reports_renewals`
    /// included), cut to the first 300 characters.
    pub fn hello(&self) -> String {
        let Some(session) = &self.session else {
            return "nothing".to_string();
        };
        let line = session.hello_line.trim_end();
        let mut shown: String = line.chars().take(300).collect();
        if shown.len() < line.len() {
            shown.push('…');
        }
        shown
    }

    /// Sends `op` with `fields` and waits up to `bound` for the answer. A program that breaks
    /// the protocol (silent past the bound included) is killed, as a run's client kills it.
    pub fn request(&mut self, op: &str, fields: Value, bound: Duration) -> Exchange {
        let Some(session) = self.session.as_mut() else {
            return Exchange {
                sent: Value::Null,
                took: Duration::ZERO,
                reply: Err(Breakage::Died("it is not running".to_string())),
            };
        };
        let sent = session.next_request(op, fields.clone());
        let began = Instant::now();
        let reply = session.request(op, fields, bound);
        let took = began.elapsed();
        if reply.is_err() {
            if let Some(session) = self.session.take() {
                session.kill();
            }
        }
        Exchange { sent, took, reply }
    }

    /// Ends the program as a run does: its stdin closes (it should release what it holds and
    /// exit) and it is killed if it has not exited within the grace.
    pub fn finish(&mut self) {
        if let Some(session) = self.session.take() {
            session.finish(EXIT_GRACE);
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            session.kill();
        }
    }
}
