//! One run of a user's client program (`--lock exec:...`) and the JSON-lines protocol spoken
//! with it over its stdin and stdout (`workloads/PROTOCOL.md`). Every exchange is bounded by a
//! deadline: a program that is silent, dies, or prints anything that is not protocol is a
//! [`Breakage`], never a hang.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};

/// The protocol version this lockpick speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// The longest line a program may print: a longer one is garbage, not an answer.
const MAX_LINE: usize = 64 * 1024;

/// Why a program can no longer be spoken to. Each is one sentence the client's log shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Breakage {
    CannotStart(String),
    /// It exited (or closed its stdout); `status` in words.
    Died(String),
    /// No line came before the deadline.
    Silent(Duration),
    /// A line that is not a protocol message, or not the one expected.
    Garbage {
        line: String,
        why: String,
    },
    /// Its hello names a version this lockpick does not speak.
    WrongVersion(Value),
}

impl Breakage {
    /// A short name of the kind of breakage, so that each kind is logged once.
    pub fn kind(&self) -> &'static str {
        match self {
            Breakage::CannotStart(_) => "cannot start",
            Breakage::Died(_) => "died",
            Breakage::Silent(_) => "silent",
            Breakage::Garbage { .. } => "garbage",
            Breakage::WrongVersion(_) => "version",
        }
    }
}

impl std::fmt::Display for Breakage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Breakage::CannotStart(why) => write!(f, "could not be started: {why}"),
            Breakage::Died(status) => write!(f, "exited ({status}) in the middle of the protocol"),
            Breakage::Silent(after) => write!(f, "did not answer within {after:?}"),
            Breakage::Garbage { line, why } => {
                let shown: String = line.chars().take(120).collect();
                write!(
                    f,
                    "printed {shown:?}, which is not a protocol message ({why})"
                )
            }
            Breakage::WrongVersion(v) => write!(
                f,
                "speaks protocol version {v}; this lockpick speaks version {PROTOCOL_VERSION}"
            ),
        }
    }
}

/// What the program answered to one request.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub id: u64,
    pub result: Verdict,
    #[serde(default)]
    pub token: Option<u64>,
    /// The lease is certainly held at least this long after the request was sent.
    #[serde(default)]
    pub valid_ms: Option<u64>,
    /// The lease has certainly ended this long after the answer, unless extended.
    #[serde(default)]
    pub expires_ms: Option<u64>,
    /// The grant certainly came no earlier than this long after the request was received (a
    /// library that retries inside one acquire: when its last attempt was sent).
    #[serde(default)]
    pub granted_after_ms: Option<u64>,
    /// The program's wall clock, in ms since the Unix epoch (an answer to `clock`).
    #[serde(default)]
    pub wall_ms: Option<u64>,
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Fail,
    Unknown,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Hello {
    protocol: Value,
    #[serde(default)]
    library: Option<String>,
    #[serde(default)]
    extend: bool,
    #[serde(default)]
    clock: bool,
}

enum Line {
    Text(String),
    End,
}

/// A running program that has said hello.
pub struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Line>,
    next_id: u64,
    /// The first request whose answer has not come: a later answer to it may still arrive.
    oldest_unanswered: u64,
    /// Whether it answers `extend`.
    pub extends: bool,
    /// Whether it answers `clock` with its wall clock.
    pub tells_clock: bool,
    /// The library it names in its hello.
    pub library: Option<String>,
}

impl Session {
    /// Starts `program` with `env` and waits up to `hello_within` for its hello. The program
    /// dies with this process (it gets SIGKILL when its parent goes), and shares its process
    /// group, so freezing the client freezes it too.
    pub fn start(
        program: &[String],
        env: &[(String, String)],
        hello_within: Duration,
    ) -> Result<Session, Breakage> {
        let (name, args) = program
            .split_first()
            .ok_or_else(|| Breakage::CannotStart("the command is empty".to_string()))?;
        let mut command = Command::new(name);
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: only prctl runs between fork and exec; it is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
                Ok(())
            });
        }
        let mut child = command
            .spawn()
            .map_err(|e| Breakage::CannotStart(format!("{name}: {e}")))?;
        let stdin = child.stdin.take().expect("piped");
        let lines = read_lines(child.stdout.take().expect("piped"));
        let mut session = Session {
            child,
            stdin,
            lines,
            next_id: 1,
            oldest_unanswered: 1,
            extends: false,
            tells_clock: false,
            library: None,
        };
        let line = session.next_line(Instant::now() + hello_within, hello_within)?;
        let hello: Hello = serde_json::from_str(&line).map_err(|e| Breakage::Garbage {
            line: line.clone(),
            why: format!("expected the hello, {{\"protocol\": {PROTOCOL_VERSION}}}: {e}"),
        })?;
        if hello.protocol != json!(PROTOCOL_VERSION) {
            return Err(Breakage::WrongVersion(hello.protocol));
        }
        session.extends = hello.extend;
        session.tells_clock = hello.clock;
        session.library = hello.library;
        Ok(session)
    }

    /// Sends one request (`op` plus `fields`) and waits up to `bound` for its answer.
    pub fn request(
        &mut self,
        op: &str,
        fields: Value,
        bound: Duration,
    ) -> Result<Answer, Breakage> {
        let deadline = Instant::now() + bound;
        let id = self.next_id;
        self.next_id += 1;
        let mut request = json!({ "id": id, "op": op });
        if let (Value::Object(request), Value::Object(fields)) = (&mut request, fields) {
            request.extend(fields);
        }
        let sent = writeln!(self.stdin, "{request}").and_then(|()| self.stdin.flush());
        if sent.is_err() {
            return Err(self.died());
        }
        loop {
            let line = self.next_line(deadline, bound)?;
            let answer: Answer = serde_json::from_str(&line).map_err(|e| Breakage::Garbage {
                line: line.clone(),
                why: format!("expected the answer to {op} {id}: {e}"),
            })?;
            // A late answer to an earlier request that was given up on (an `extend` that timed
            // out while the program kept its lease): skip it, the program is still in step.
            if answer.id < id && answer.id >= self.oldest_unanswered {
                continue;
            }
            if answer.id != id {
                return Err(Breakage::Garbage {
                    line,
                    why: format!("it answers request {}, but {op} {id} was asked", answer.id),
                });
            }
            self.oldest_unanswered = id + 1;
            return Ok(answer);
        }
    }

    /// The next line, by `deadline`; `bound` is the whole time allowed, for the message.
    fn next_line(&mut self, deadline: Instant, bound: Duration) -> Result<String, Breakage> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(Line::Text(line)) => Ok(line),
            Ok(Line::End) | Err(RecvTimeoutError::Disconnected) => Err(self.died()),
            Err(RecvTimeoutError::Timeout) => Err(Breakage::Silent(bound)),
        }
    }

    /// The program closed its stdout or stdin: how it exited, if it did within a moment.
    fn died(&mut self) -> Breakage {
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Breakage::Died(status.to_string());
            }
            thread::sleep(Duration::from_millis(5));
        }
        Breakage::Died("it closed its stdout or stdin".to_string())
    }

    /// Ends the program at once.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Ends the program politely: its stdin closes, which tells it to release what it holds
    /// and exit; it is killed if it has not within `grace`.
    pub fn finish(self, grace: Duration) {
        let Session {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Reads the program's stdout on a thread of its own, line by line.
fn read_lines(stdout: impl std::io::Read + Send + 'static) -> Receiver<Line> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match reader
                .by_ref()
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut line)
            {
                Ok(0) | Err(_) => {
                    let _ = sender.send(Line::End);
                    return;
                }
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line);
                    let text = text.strip_suffix('\n').unwrap_or(&text);
                    if sender.send(Line::Text(text.to_string())).is_err() {
                        return;
                    }
                }
            }
        }
    });
    receiver
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Vec<String> {
        vec!["/bin/sh".into(), "-c".into(), script.into()]
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn an_answer_comes_back_with_its_fields() {
        let program = shell(
            r#"echo '{"protocol": 1, "extend": true}'; read line;
               echo '{"id": 1, "result": "ok", "token": 7, "valid_ms": 900}'"#,
        );
        let mut session = Session::start(&program, &[], SECOND).unwrap();
        assert!(session.extends);
        let answer = session
            .request("acquire", json!({"wait_ms": 5}), SECOND)
            .unwrap();
        assert_eq!(answer.result, Verdict::Ok);
        assert_eq!((answer.token, answer.valid_ms), (Some(7), Some(900)));
        session.kill();
    }

    #[test]
    fn a_late_answer_to_a_request_given_up_on_is_skipped() {
        // Request 1 is answered only after it was given up on; request 2 still gets its own.
        let program = shell(
            r#"echo '{"protocol": 1, "extend": true}'; read one; sleep 0.4;
               echo '{"id": 1, "result": "ok"}'; read two; echo '{"id": 2, "result": "fail"}'"#,
        );
        let mut session = Session::start(&program, &[], SECOND).unwrap();
        let slow = Duration::from_millis(100);
        let silent = session.request("extend", json!({}), slow).unwrap_err();
        assert!(matches!(silent, Breakage::Silent(_)), "{silent:?}");
        let answer = session.request("release", json!({}), SECOND).unwrap();
        assert_eq!((answer.id, answer.result), (2, Verdict::Fail));
        session.kill();
    }

    #[test]
    fn another_version_is_refused() {
        let program = shell(r#"echo '{"protocol": 2}'; sleep 5"#);
        let refused = Session::start(&program, &[], SECOND).err().unwrap();
        assert_eq!(refused, Breakage::WrongVersion(json!(2)));
    }

    #[test]
    fn a_wrong_id_a_death_and_silence_are_breakages() {
        let hello = r#"echo '{"protocol": 1}'; read line;"#;
        let cases = [
            (r#"echo '{"id": 9, "result": "ok"}'"#, "garbage"),
            ("exit 4", "died"),
            ("sleep 5", "silent"),
        ];
        for (then, kind) in cases {
            let program = shell(&format!("{hello} {then}"));
            let mut session = Session::start(&program, &[], SECOND).unwrap();
            let broke = session
                .request("release", json!({}), Duration::from_millis(300))
                .unwrap_err();
            assert_eq!(broke.kind(), kind, "{broke}");
            session.kill();
        }
    }
}
