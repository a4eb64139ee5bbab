//! The fault flags, checked into the knobs the nemeses read.

use std::time::Duration;

use super::{bad, parse_duration};
use crate::cli::{FaultFlags, PartitionMode, DEFAULT_FAULT_INTERVAL, DEFAULT_LOSS};
use crate::nemesis::FaultKnobs;

/// Checks the fault flags of a run whose lease is `ttl` and whose clients stop at
/// `time_limit`; the defaults are the ones the flags' help tells.
pub(super) fn check(
    flags: &FaultFlags,
    ttl: Duration,
    time_limit: Duration,
) -> anyhow::Result<FaultKnobs> {
    let twice_ttl = |flag: &str, value: &Option<String>| match value {
        Some(text) => parse_duration(flag, text),
        None => Ok(ttl * 2),
    };
    let fault_duration = twice_ttl("--fault-duration", &flags.fault_duration)?;
    let clock_jump = twice_ttl("--clock-jump", &flags.clock_jump)?;
    let delay = twice_ttl("--delay", &flags.delay)?;
    let fault_interval = parse_duration(
        "--fault-interval",
        flags
            .fault_interval
            .as_deref()
            .unwrap_or(DEFAULT_FAULT_INTERVAL),
    )?;
    // The schedule counts in whole milliseconds: anything shorter would be 0 there.
    for (flag, value) in [
        ("--fault-duration", fault_duration),
        ("--clock-jump", clock_jump),
        ("--delay", delay),
        ("--fault-interval", fault_interval),
    ] {
        if value < Duration::from_millis(1) {
            return Err(bad(format!("{flag} must be 1ms or more")));
        }
    }
    let restart_after = match &flags.restart_after {
        Some(text) => Some(parse_duration("--restart-after", text)?),
        None => None,
    };
    if restart_after.is_some_and(|d| d < Duration::from_millis(1)) {
        return Err(bad("--restart-after must be 1ms or more"));
    }
    let loss = flags.loss.unwrap_or(DEFAULT_LOSS);
    if loss == 0 || loss > 100 {
        return Err(bad(format!(
            "--loss {loss} must be a percentage from 1 to 100"
        )));
    }
    Ok(FaultKnobs {
        fault_duration,
        fault_duration_given: flags.fault_duration.is_some(),
        fault_interval,
        partition_mode: flags.partition_mode.unwrap_or(PartitionMode::Drop),
        clock_jump,
        delay,
        loss,
        restart_after,
        client_deadline_ns: time_limit.as_nanos() as u64,
    })
}
