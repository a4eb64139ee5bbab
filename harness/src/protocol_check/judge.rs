//! How one exchange becomes one line: the answer the protocol asks for in that situation, and,
//! when another came (or none within the bound), why that breaks the contract.

use lockpick_workloads::exec_session::{Answer, Breakage, Verdict};

use super::instance::Exchange;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    Skip,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Skip => "skip",
        }
    }
}

/// What a request should get back, and what to say when it does not.
pub struct Expected<'a> {
    /// Which instance sent it and in what situation, as `instance 1 (the lock free)`.
    pub who: String,
    pub want: Verdict,
    /// The bound in words, as `1000 ms (wait_ms 500 + op timeout 500 ms)`.
    pub bound: String,
    /// Why another answer breaks the contract.
    pub wrong: &'a dyn Fn(&Answer) -> String,
    /// Why no answer within the bound does.
    pub late: &'a str,
}

/// The outcome of `exchange` against what was expected, and its line's detail: what was sent,
/// what came back and in how long, and why that fails when it does.
pub fn judge(exchange: &Exchange, expected: &Expected) -> (Outcome, String) {
    let sent = format!("{} was sent {}", expected.who, exchange.sent);
    let took = exchange.took.as_millis();
    match &exchange.reply {
        Ok(answer) => {
            let shown = serde_json::to_string(answer).unwrap_or_default();
            if answer.result == expected.want {
                let detail = format!(
                    "{sent}, answered {shown} in {took} ms, within its bound of {}",
                    expected.bound
                );
                (Outcome::Pass, detail)
            } else if expected.want == Verdict::Unknown && answer.never_sent() {
                // Its own word that nothing left it: nothing can be applied later, so `fail`
                // is the truth (a connection still being made when the bound ran out).
                let detail = format!(
                    "{sent}, answered {shown} in {took} ms, within its bound of {}: the program \
                     says the request never left it (`sent: false`), so a fail is truthful",
                    expected.bound
                );
                (Outcome::Pass, detail)
            } else {
                let why = (expected.wrong)(answer);
                (
                    Outcome::Fail,
                    format!("{sent}, answered {shown} in {took} ms: {why}"),
                )
            }
        }
        Err(Breakage::Silent(_)) => (
            Outcome::Fail,
            format!(
                "{sent}, no answer within its bound of {}, so a run kills the program and \
                 records the request as info: {}",
                expected.bound, expected.late
            ),
        ),
        Err(breakage) => (
            Outcome::Fail,
            format!("{sent}: the program {breakage} after {took} ms (see workloads/PROTOCOL.md)"),
        ),
    }
}

/// Why an answer that is not `unknown` is wrong for a request the stopped server holds.
pub fn not_unknown_while_stopped(answer: &Answer, server: &str) -> String {
    match answer.result {
        Verdict::Fail => format!(
            "the request may have reached {server}, which applies it when it resumes: the \
             answer is unknown (never fail while a request may have been sent; a program that \
             knows its request never left, its connection still being made, says so with \
             `\"sent\": false` beside its fail)"
        ),
        _ => format!("answered ok while every {server} is stopped: no server granted it"),
    }
}

/// Why no answer within the bound is wrong while the server is stopped.
pub const LATE_WHILE_STOPPED: &str = "the library retries or waits past the op timeout (several \
     retry a timed-out command by default, or queue it and re-send it on reconnection): answer \
     unknown at the first timeout, see Pitfalls by library in examples/README.md";

/// Why no answer within the bound is wrong while the server answers.
pub const LATE_WHILE_UP: &str = "the server answers, so the program waits on itself or its \
     library past the request's bound (PROTOCOL.md, Errors)";
