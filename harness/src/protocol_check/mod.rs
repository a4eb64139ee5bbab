//! `lockpick protocol-check [--service redis] [--ttl 1s] [--op-timeout ..] -- <command...>`: a
//! self-test of a client program for `--lock exec:<service>:<command>`, in seconds, before a run
//! spends minutes on it. Library defaults that break the protocol's contract (redis-py 6's
//! retries of a timed-out command, ioredis's offline queue) go unnoticed in a run: a program
//! that overruns its bound is killed and its operation recorded `info`, which can even turn an
//! invalid run valid. Here the program runs as in a run (its own client node, the run's
//! environment, the same session and bounds) against the service's real servers, and each
//! expectation of `workloads/PROTOCOL.md` is one check with one line: the hello; an acquire
//! granted within its bound; a contender refused (`fail`) while the lock is held; a release;
//! and, with every server stopped (SIGSTOP) past the op timeout, an acquire and a release that
//! come back `unknown` (not `fail`, not a late `ok`) within their bounds.
//!
//! Exit codes: 0 every check passed, 1 one failed, 2 interrupted before every check ran, 254
//! bad input, 255 the harness itself failed (a server that did not start, say).

mod checks;
mod instance;
mod judge;
mod testbed;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;

use crate::bad_input::bad;
use crate::cli::ProtocolCheckArgs;
use crate::config::parse_duration;
use crate::locks::Lock;
use judge::Outcome;

pub use checks::Finding;

/// What a check runs with, validated from the command line before anything is created.
pub struct CheckConfig {
    /// The built-in lock whose servers the program talks to.
    pub service: &'static dyn Lock,
    pub ttl: Duration,
    /// The bound on each request, and every acquire's `wait_ms`.
    pub op_timeout: Duration,
    /// The program and its arguments.
    pub program: Vec<String>,
}

impl CheckConfig {
    pub fn from_args(args: &ProtocolCheckArgs) -> Result<CheckConfig> {
        let service = crate::locks::exec::service(&args.service).ok_or_else(|| {
            bad(format!(
                "--service {} is not a service a client program can use: one of {}",
                args.service,
                crate::locks::exec::service_names().join(", ")
            ))
        })?;
        let ttl = parse_duration("--ttl", &args.ttl)?;
        if ttl < Duration::from_millis(10) {
            return Err(bad(format!(
                "--ttl {} is too short: a lease needs at least 10ms (try --ttl 1s)",
                args.ttl
            )));
        }
        if let Err(why) = service.check_ttl(ttl) {
            return Err(bad(format!(
                "--ttl {} does not suit {}: {why}",
                args.ttl,
                service.name()
            )));
        }
        let op_timeout = match &args.op_timeout {
            Some(text) => parse_duration("--op-timeout", text)?,
            None => (ttl / 2).min(Duration::from_secs(1)),
        };
        // The contender's acquire (its wait, then the op timeout) must end before the lease it
        // is refused under can: else a grant to it would prove nothing.
        if op_timeout < crate::config::MIN_OP_TIMEOUT || op_timeout * 2 > ttl {
            return Err(bad(format!(
                "--op-timeout {} must be at least 1ms and at most half --ttl {}: the held \
                 lock must outlive a contender's whole acquire (wait_ms + op timeout)",
                args.op_timeout.as_deref().unwrap_or("?"),
                args.ttl
            )));
        }
        let program = args.command.clone();
        check_program(program.first().map(String::as_str).unwrap_or(""))?;
        Ok(CheckConfig {
            service,
            ttl,
            op_timeout,
            program,
        })
    }
}

/// A program that cannot be found is bad input, refused before anything is made.
fn check_program(name: &str) -> Result<()> {
    let found = match name.contains('/') {
        true => Path::new(name).is_file(),
        false => !name.is_empty() && crate::runtime::program::find_program(name).is_some(),
    };
    match found {
        true => Ok(()),
        false => Err(bad(format!(
            "the command's program {name:?} is not a file (nor found on PATH)"
        ))),
    }
}

/// Runs every check; the exit code says how they went (see the module's doc).
pub fn protocol_check(args: &ProtocolCheckArgs, interrupt: &AtomicBool) -> Result<u8> {
    let config = CheckConfig::from_args(args)?;
    if !nix::unistd::geteuid().is_root() {
        return Err(bad(
            "lockpick protocol-check needs root: it creates network namespaces for the servers \
             and the program (run it with sudo)",
        ));
    }
    crate::run::require_programs(config.service.service().requirements())?;
    let testbed = testbed::Testbed::start(config.service, 2, config.ttl)?;
    crate::tell!(
        "lockpick protocol-check: `{}` against {} ({} at {}), TTL {} ms, op timeout {} ms (run \
         {})",
        crate::text::terminal::neutral(&shell_words::join(&config.program)),
        config.service.name(),
        testbed.server_program,
        testbed.endpoints.join(", "),
        config.ttl.as_millis(),
        config.op_timeout.as_millis(),
        testbed.prefix.name
    );
    let findings = checks::run(&testbed, &config, interrupt)?;
    drop(testbed);
    crate::say!("{}", summary(&findings));
    let failed = findings.iter().any(|f| f.outcome == Outcome::Fail);
    Ok(match failed {
        true => 1,
        false if interrupt.load(Ordering::SeqCst) => 2,
        false => 0,
    })
}

/// The last line: how many checks passed, and which failed.
fn summary(findings: &[Finding]) -> String {
    let named = |outcome: Outcome| -> Vec<&str> {
        findings
            .iter()
            .filter(|f| f.outcome == outcome)
            .map(|f| f.check)
            .collect()
    };
    let (passed, failed, skipped) = (
        named(Outcome::Pass),
        named(Outcome::Fail),
        named(Outcome::Skip),
    );
    let mut line = format!(
        "protocol-check: {} of {} checks passed",
        passed.len(),
        findings.len()
    );
    if !failed.is_empty() {
        line += &format!("; failed: {}", failed.join(", "));
    }
    if !skipped.is_empty() {
        line += &format!("; skipped: {}", skipped.join(", "));
    }
    line
}
