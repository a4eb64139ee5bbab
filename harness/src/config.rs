//! A run's configuration, validated from the command line before anything is created.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::cli::{Fencing, LockKind, NemesisKind, RunArgs};

/// Bad input from the user or the environment: exit code 254, and nothing was created.
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

pub fn bad(message: impl Into<String>) -> anyhow::Error {
    BadInput(message.into()).into()
}

/// Everything a run needs, checked. Defaults are documented on the flags in `cli`.
#[derive(Clone, Debug, Serialize)]
pub struct RunConfig {
    pub lock: LockKind,
    /// The nemeses to compose; empty means no faults.
    pub nemeses: Vec<NemesisKind>,
    pub clients: u32,
    #[serde(serialize_with = "as_millis")]
    pub ttl: Duration,
    #[serde(serialize_with = "as_millis")]
    pub time_limit: Duration,
    pub fencing: Fencing,
    pub seed: u64,
    #[serde(serialize_with = "as_millis")]
    pub work: Duration,
    #[serde(serialize_with = "as_millis")]
    pub pause: Duration,
    #[serde(serialize_with = "as_millis")]
    pub fault_interval: Duration,
    #[serde(serialize_with = "as_millis")]
    pub op_timeout: Duration,
    pub store: PathBuf,
    /// The exact command line, to reproduce the run.
    pub command: Vec<String>,
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

pub const MAX_CLIENTS: u32 = 200;

impl RunConfig {
    pub fn from_args(args: &RunArgs, command: Vec<String>) -> anyhow::Result<RunConfig> {
        let ttl = parse_duration("--ttl", &args.ttl)?;
        if ttl < Duration::from_millis(10) {
            return Err(bad(format!(
                "--ttl {} is too short: a lease needs at least 10ms (try --ttl 1s)",
                args.ttl
            )));
        }
        match args.lock {
            LockKind::Etcd if ttl.subsec_nanos() != 0 => {
                return Err(bad(format!(
                    "--ttl {} does not suit etcd: its leases are whole seconds (try --ttl 1s)",
                    args.ttl
                )))
            }
            LockKind::Zookeeper
                if ttl < Duration::from_secs(1) || ttl > Duration::from_secs(10) =>
            {
                return Err(bad(format!(
                    "--ttl {} does not suit ZooKeeper: its session timeout is between 1s and 10s \
                     here (2 to 20 ticks of 500ms)",
                    args.ttl
                )))
            }
            _ => {}
        }
        let time_limit = parse_duration("--time-limit", &args.time_limit)?;
        if time_limit.is_zero() || time_limit > Duration::from_secs(24 * 3600) {
            return Err(bad(format!(
                "--time-limit {} must be more than 0 and at most 24h",
                args.time_limit
            )));
        }
        if args.clients == 0 || args.clients > MAX_CLIENTS {
            return Err(bad(format!(
                "--clients {} must be between 1 and {MAX_CLIENTS}",
                args.clients
            )));
        }
        let op_timeout = match &args.op_timeout {
            Some(text) => parse_duration("--op-timeout", text)?,
            None => (ttl / 2).min(Duration::from_secs(1)),
        };
        if op_timeout.is_zero() || op_timeout >= ttl {
            return Err(bad(format!(
                "--op-timeout {} must be more than 0 and shorter than --ttl {}: a client must \
                 give up on a request before its lease can run out",
                args.op_timeout.as_deref().unwrap_or("?"),
                args.ttl
            )));
        }
        let pause = match &args.pause {
            Some(text) => parse_duration("--pause", text)?,
            None => ttl * 2,
        };
        if pause.is_zero() {
            return Err(bad("--pause must be more than 0"));
        }
        let fault_interval = parse_duration("--fault-interval", &args.fault_interval)?;
        if fault_interval.is_zero() {
            return Err(bad("--fault-interval must be more than 0"));
        }
        let mut nemeses: Vec<NemesisKind> = Vec::new();
        for n in &args.nemesis {
            if *n != NemesisKind::None && !nemeses.contains(n) {
                nemeses.push(*n);
            }
        }
        Ok(RunConfig {
            lock: args.lock,
            nemeses,
            clients: args.clients,
            ttl,
            time_limit,
            fencing: args.fencing,
            seed: args.seed.unwrap_or_else(rand::random),
            work: parse_duration("--work", &args.work)?,
            pause,
            fault_interval,
            op_timeout,
            store: args.store.clone(),
            command,
        })
    }

    /// The nemesis part of the run's name: `none`, or the nemeses joined by `+`.
    pub fn nemesis_name(&self) -> String {
        if self.nemeses.is_empty() {
            "none".to_string()
        } else {
            let names: Vec<&str> = self.nemeses.iter().map(|n| n.name()).collect();
            names.join("+")
        }
    }

    /// The run's name in the store: `<lock>-<nemesis>`.
    pub fn name(&self) -> String {
        format!("{}-{}", self.lock.name(), self.nemesis_name())
    }
}

/// Parses `1.5s`, `500ms`, `2m`, `1h`, or a plain number of seconds.
pub fn parse_duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    match number.parse::<f64>() {
        Ok(n) if scale.is_finite() && n.is_finite() && n * scale < 1e9 => {
            Ok(Duration::from_secs_f64(n * scale))
        }
        _ => Err(bad(format!(
            "{flag} {text:?} is not a duration: write it like 30s, 500ms, 2m or 1h"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_and_without_units() {
        let d = |t| parse_duration("--x", t).unwrap();
        assert_eq!(d("30s"), Duration::from_secs(30));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("1.5s"), Duration::from_millis(1500));
        assert_eq!(d("2m"), Duration::from_secs(120));
        assert_eq!(d("7"), Duration::from_secs(7));
        for bad in ["", "s", "ten seconds", "5 parsecs", "-1s", "1e400"] {
            assert!(parse_duration("--x", bad).is_err(), "{bad:?} parsed");
        }
    }
}
