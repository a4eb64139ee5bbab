//! What `Runtime::spawn` starts: a program with its arguments and environment, and where its
//! standard streams go. A description, not a `Command`, so that a runtime whose nodes live
//! elsewhere can start it its own way; `spawn_here` is how the runtimes of this machine do.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::files::safe_write;
use crate::processes::node_process::{LocalProcess, NodeProcess};

/// Whose files the program and the paths in its arguments are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Programs {
    /// The harness's own (lockpick itself, a client program): in a container, the host's,
    /// with only the network the node's.
    Harness,
    /// The node's own system (a lock-service server): in a container, the image's.
    Node,
}

/// Where a standard stream goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stream {
    Null,
    /// A pipe to the controller, taken from the `NodeProcess`.
    Piped,
    /// A log file of the run (stdout and stderr naming the same one share it).
    Log(LogFile),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFile {
    pub path: PathBuf,
    /// Appended to (a restarted server keeps its earlier log), else created new.
    pub append: bool,
}

impl Stream {
    /// A log file of its own, which must not exist yet.
    pub fn new_log(path: &Path) -> Stream {
        Stream::Log(LogFile {
            path: path.to_path_buf(),
            append: false,
        })
    }

    /// A log file appended to, made if missing.
    pub fn appended_log(path: &Path) -> Stream {
        Stream::Log(LogFile {
            path: path.to_path_buf(),
            append: true,
        })
    }
}

impl LogFile {
    fn open(&self) -> Result<File> {
        let file = if self.append {
            safe_write::append(&self.path)
        } else {
            safe_write::create_new(&self.path)
        };
        file.with_context(|| format!("cannot open {}", self.path.display()))
    }
}

#[derive(Clone, Debug)]
pub struct ProcessSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(String, String)>,
    pub programs: Programs,
    /// Only `Null` or `Piped`.
    pub stdin: Stream,
    pub stdout: Stream,
    pub stderr: Stream,
    /// What the process is, for the error when it cannot start ("a client").
    pub what: String,
}

impl ProcessSpec {
    /// `program` with nothing wired: no input, output thrown away.
    pub fn new(what: &str, programs: Programs, program: &Path) -> ProcessSpec {
        ProcessSpec {
            program: program.to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
            programs,
            stdin: Stream::Null,
            stdout: Stream::Null,
            stderr: Stream::Null,
            what: what.to_string(),
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> ProcessSpec {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: Into<OsString>>(mut self, args: impl IntoIterator<Item = I>) -> ProcessSpec {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn streams(mut self, stdin: Stream, stdout: Stream, stderr: Stream) -> ProcessSpec {
        self.stdin = stdin;
        self.stdout = stdout;
        self.stderr = stderr;
        self
    }
}

/// Starts `spec` through `command`, a command of a runtime of this machine for `spec.program`
/// (its process group, network, cgroup and parent-death signal already set). Call it from the
/// main thread, as `Runtime::spawn` says.
pub fn spawn_here(mut command: Command, spec: &ProcessSpec) -> Result<Box<dyn NodeProcess>> {
    let stdout_file = match &spec.stdout {
        Stream::Log(log) => Some(log.open()?),
        _ => None,
    };
    let stderr = match (&spec.stderr, &stdout_file) {
        (Stream::Log(_), Some(file)) if spec.stdout == spec.stderr => {
            Stdio::from(file.try_clone()?)
        }
        (stream, _) => stdio(stream, None)?,
    };
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(stdio(&spec.stdin, None)?)
        .stdout(stdio(&spec.stdout, stdout_file)?)
        .stderr(stderr);
    let child = command
        .spawn()
        .with_context(|| format!("cannot start {} ({})", spec.what, spec.program.display()))?;
    Ok(Box::new(LocalProcess(child)))
}

/// The `Stdio` of one stream; `opened` is its log file when already open.
fn stdio(stream: &Stream, opened: Option<File>) -> Result<Stdio> {
    Ok(match (stream, opened) {
        (Stream::Null, _) => Stdio::null(),
        (Stream::Piped, _) => Stdio::piped(),
        (Stream::Log(_), Some(file)) => Stdio::from(file),
        (Stream::Log(log), None) => Stdio::from(log.open()?),
    })
}

#[cfg(test)]
#[path = "process_spec_tests.rs"]
mod tests;
