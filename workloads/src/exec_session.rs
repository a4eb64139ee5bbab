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

pub use crate::exec_answer::{Answer, Verdict};
use crate::exec_renewal::{renewal_report, Renewals, ReportsPromised};
use crate::exec_stderr::StderrCopy;

pub use crate::exec_breakage::{Breakage, PROTOCOL_VERSION};

/// The longest line a program may print (`workloads/PROTOCOL.md`): a longer one is garbage, not
/// an answer, and the program is read no further.
pub const MAX_LINE: usize = 64 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Hello {
    protocol: Value,
    #[serde(default)]
    library: Option<String>,
    #[serde(default)]
    extend: bool,
    /// It reports every renewal its library makes in the background (`renewed` lines).
    #[serde(default)]
    reports_renewals: bool,
    #[serde(default)]
    clock: bool,
}

enum Line {
    Text(String),
    /// A line longer than [`MAX_LINE`], by its start: nothing after it is read.
    TooLong(String),
    End,
}

/// How long an ended program's stderr may take to be copied out (a child it left behind may
/// hold it open: its copy is then left to go on by itself).
const STDERR_FLUSH: Duration = Duration::from_secs(1);

/// How many lines the reader may read ahead of the session: past them it waits, and so does
/// the program on its full pipe, however much it prints between requests.
const LINES_AHEAD: usize = 64;

/// A running program that has said hello.
pub struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Line>,
    stderr: StderrCopy,
    next_id: u64,
    /// The first request whose answer has not come: a later answer to it may still arrive.
    oldest_unanswered: u64,
    /// Whether it answers `extend`.
    pub extends: bool,
    /// Whether it answers `clock` with its wall clock.
    pub tells_clock: bool,
    /// The library it names in its hello.
    pub library: Option<String>,
    /// Its hello, as it wrote it (for `protocol-check` to show it back unchanged).
    pub hello_line: String,
    /// Where its renewal reports go, told of each request sent.
    renewals: Renewals,
    /// The servers it was given (`LOCKPICK_SERVERS`): all a `granted_by` may name.
    servers: Vec<String>,
}

impl Session {
    /// Starts `program` with `env` and waits up to `hello_within` for its hello. The program
    /// dies with this process (it gets SIGKILL when its parent goes), and shares its process
    /// group, so freezing the client freezes it too. Its renewal reports, if its hello
    /// promises them, go to `renewals` as they are read.
    pub fn start(
        program: &[String],
        env: &[(String, String)],
        hello_within: Duration,
        renewals: &Renewals,
    ) -> Result<Session, Breakage> {
        let (name, args) = program
            .split_first()
            .ok_or_else(|| Breakage::CannotStart("the command is empty".to_string()))?;
        let mut command = Command::new(name);
        command.args(args).envs(env.iter().map(|(k, v)| (k, v)));
        // SAFETY: only prctl runs between fork and exec; it is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
                Ok(())
            });
        }
        Session::start_command(command, hello_within, renewals)
    }

    /// Starts a command already made (program, arguments, environment, where it runs and how it
    /// dies) with its stdin and stdout as the protocol, and waits up to `hello_within` for its
    /// hello; its renewal reports, if its hello promises them, go to `renewals`. Its stderr is
    /// copied to this process's, bounded ([`StderrCopy`]).
    pub fn start_command(
        mut command: Command,
        hello_within: Duration,
        renewals: &Renewals,
    ) -> Result<Session, Breakage> {
        let name = command.get_program().to_string_lossy().into_owned();
        let servers = command
            .get_envs()
            .find(|(key, _)| *key == "LOCKPICK_SERVERS")
            .and_then(|(_, value)| value?.to_str())
            .map(|list| list.split(',').map(str::to_string).collect())
            .unwrap_or_default();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Breakage::CannotStart(format!("{name}: {e}")))?;
        let stdin = child.stdin.take().expect("piped");
        let promised = ReportsPromised::default();
        let stdout = child.stdout.take().expect("piped");
        let lines = read_lines(stdout, renewals.clone(), promised.clone());
        let stderr = child.stderr.take().expect("piped");
        let stderr = StderrCopy::start(name.clone(), stderr, std::io::stderr());
        let mut session = Session {
            child,
            stdin,
            lines,
            stderr,
            next_id: 1,
            oldest_unanswered: 1,
            extends: false,
            tells_clock: false,
            library: None,
            hello_line: String::new(),
            renewals: renewals.clone(),
            servers,
        };
        match session.hello(hello_within, &promised) {
            Ok(()) => Ok(session),
            // A program that cannot be spoken to is not left running.
            Err(breakage) => {
                session.kill();
                Err(breakage)
            }
        }
    }

    /// Reads the hello, the program's first line.
    fn hello(&mut self, within: Duration, promised: &ReportsPromised) -> Result<(), Breakage> {
        let line = self.next_line(Instant::now() + within, within)?;
        let hello: Hello = serde_json::from_str(&line).map_err(|e| Breakage::Garbage {
            line: line.clone(),
            why: format!("expected the hello, {{\"protocol\": {PROTOCOL_VERSION}}}: {e}"),
        })?;
        if hello.protocol != json!(PROTOCOL_VERSION) {
            return Err(Breakage::WrongVersion(hello.protocol));
        }
        if hello.extend && hello.reports_renewals {
            return Err(Breakage::Garbage {
                line,
                why: "a library that renews in the background (reports_renewals) takes no extend"
                    .to_string(),
            });
        }
        if hello.reports_renewals {
            promised.promise();
        }
        self.extends = hello.extend;
        self.tells_clock = hello.clock;
        self.library = hello.library;
        self.hello_line = line;
        Ok(())
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
        let request = self.next_request(op, fields);
        self.next_id += 1;
        // Before the write: the program receives the request after this moment, which a
        // renewal report's `sent_after_ms` counts from.
        self.renewals.request_sent(id);
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
            if let Some(why) = answer.misplaced(op, &self.servers) {
                return Err(Breakage::Garbage { line, why });
            }
            return Ok(answer);
        }
    }

    /// The line the next request of `op` with `fields` will be.
    pub fn next_request(&self, op: &str, fields: Value) -> Value {
        let mut request = json!({ "id": self.next_id, "op": op });
        if let (Value::Object(request), Value::Object(fields)) = (&mut request, fields) {
            request.extend(fields);
        }
        request
    }

    /// The next line, by `deadline`; `bound` is the whole time allowed, for the message.
    fn next_line(&mut self, deadline: Instant, bound: Duration) -> Result<String, Breakage> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(Line::Text(line)) => Ok(line),
            Ok(Line::TooLong(start)) => Err(Breakage::Garbage {
                line: start,
                why: format!(
                    "a line longer than {} KiB, the protocol's bound",
                    MAX_LINE / 1024
                ),
            }),
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
        self.stderr.finish(STDERR_FLUSH);
    }

    /// Ends the program politely: its stdin closes, which tells it to release what it holds
    /// and exit; it is killed if it has not within `grace`.
    pub fn finish(self, grace: Duration) {
        let Session {
            mut child,
            stdin,
            stderr,
            ..
        } = self;
        drop(stdin);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                stderr.finish(STDERR_FLUSH);
                return;
            }
            thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
        stderr.finish(STDERR_FLUSH);
    }
}

/// Reads the program's stdout on a thread of its own, line by line, at most [`LINES_AHEAD`]
/// lines ahead of the session and no further than a line longer than [`MAX_LINE`]. A renewal
/// report, once the hello promised them, goes to `renewals` the moment it is read, dated then; a
/// line that names `renewed` but is no proper report is passed on, to be refused as garbage.
fn read_lines(
    stdout: impl std::io::Read + Send + 'static,
    renewals: Renewals,
    promised: ReportsPromised,
) -> Receiver<Line> {
    let (sender, receiver) = mpsc::sync_channel(LINES_AHEAD);
    let clock = renewals.clock();
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
                Ok(_) if line.len() == MAX_LINE && !line.ends_with(b"\n") => {
                    // Reading on would only feed more of a program that does not speak the
                    // protocol: it is refused, and its pipe left to fill. The pipe stays open
                    // (closing it would kill the program before the refusal is read) until the
                    // session is gone: each send blocks once the channel is full.
                    let start = String::from_utf8_lossy(&line[..120]).into_owned();
                    while sender.send(Line::TooLong(start.clone())).is_ok() {}
                    return;
                }
                Ok(_) => {
                    let read_at = clock.now();
                    let text = String::from_utf8_lossy(&line);
                    let text = text.strip_suffix('\n').unwrap_or(&text);
                    if promised.given() {
                        if let Some(Ok(report)) = renewal_report(text) {
                            renewals.heard(read_at, report);
                            continue;
                        }
                    }
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
mod tests;
