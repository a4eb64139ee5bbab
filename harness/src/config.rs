//! A run's configuration, validated from the command line before anything is created.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub use crate::bad_input::{bad, BadInput};
use crate::cli::{Fencing, PartitionMode, RunArgs};
use crate::locks::{self, Lock};
use crate::nemesis::{self, FaultKnobs, Needs, Nemesis};
use crate::runtime::{self, RuntimeKind};

/// Everything a run needs, checked. Defaults are documented on the flags in `cli`.
#[derive(Clone, Debug, Serialize)]
pub struct RunConfig {
    #[serde(serialize_with = "lock_name")]
    pub lock: &'static dyn Lock,
    /// The nemeses to compose; empty means no faults.
    #[serde(serialize_with = "nemesis_names")]
    pub nemeses: Vec<&'static dyn Nemesis>,
    pub clients: u32,
    #[serde(serialize_with = "as_millis")]
    pub ttl: Duration,
    #[serde(serialize_with = "as_millis")]
    pub time_limit: Duration,
    pub fencing: Fencing,
    pub seed: u64,
    #[serde(serialize_with = "as_millis")]
    pub work: Duration,
    /// How long each fault lasts.
    #[serde(serialize_with = "as_millis")]
    pub fault_duration: Duration,
    #[serde(serialize_with = "as_millis")]
    pub fault_interval: Duration,
    /// Healed time at the end of the workload.
    #[serde(serialize_with = "as_millis")]
    pub quiet: Duration,
    pub partition_mode: PartitionMode,
    #[serde(serialize_with = "as_millis")]
    pub clock_jump: Duration,
    #[serde(serialize_with = "as_millis")]
    pub delay: Duration,
    pub loss: u8,
    /// A schedule to replay instead of drawing one.
    pub schedule: Option<PathBuf>,
    #[serde(serialize_with = "as_millis")]
    pub op_timeout: Duration,
    pub store: PathBuf,
    /// Where the nodes live.
    #[serde(serialize_with = "runtime_name")]
    pub runtime: &'static dyn RuntimeKind,
    /// Server images by service (`--runtime docker`).
    pub images: BTreeMap<String, String>,
    /// The exact command line, to reproduce the run.
    pub command: Vec<String>,
}

fn lock_name<S: serde::Serializer>(lock: &&'static dyn Lock, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(lock.name())
}

fn runtime_name<S: serde::Serializer>(
    runtime: &&'static dyn RuntimeKind,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(runtime.name())
}

fn nemesis_names<S: serde::Serializer>(
    nemeses: &[&'static dyn Nemesis],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(nemeses.iter().map(|n| n.name()))
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

pub const MAX_CLIENTS: u32 = 200;
/// The shortest request timeout the client can honour (its per-node timeout's floor).
pub const MIN_OP_TIMEOUT: Duration = Duration::from_millis(5);
/// The most fault windows a run may draw: more is a typo in a flag, and would take memory
/// without bound.
pub const MAX_WINDOWS: u64 = 100_000;

impl RunConfig {
    pub fn from_args(args: &RunArgs, command: Vec<String>) -> anyhow::Result<RunConfig> {
        let lock = locks::find(&args.lock).ok_or_else(|| {
            bad(format!(
                "--lock {} is not a lock lockpick knows: use one of {}",
                args.lock,
                locks::names().join(", ")
            ))
        })?;
        let ttl = parse_duration("--ttl", &args.ttl)?;
        if ttl < Duration::from_millis(10) {
            return Err(bad(format!(
                "--ttl {} is too short: a lease needs at least 10ms (try --ttl 1s)",
                args.ttl
            )));
        }
        if let Err(why) = lock.check_ttl(ttl) {
            return Err(bad(format!(
                "--ttl {} does not suit {}: {why}",
                args.ttl,
                lock.name()
            )));
        }
        let time_limit = parse_duration("--time-limit", &args.time_limit)?;
        if time_limit < Duration::from_millis(1) || time_limit > Duration::from_secs(24 * 3600) {
            return Err(bad(format!(
                "--time-limit {} must be 1ms or more and at most 24h",
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
        // The client asks each node with ttl/10, clamped to [5ms, op timeout]: below 5ms that
        // range is empty, and the client could not honour the timeout at all.
        if op_timeout < MIN_OP_TIMEOUT {
            return Err(bad(format!(
                "--op-timeout {} is shorter than 5ms, the shortest request timeout a client \
                 honours",
                args.op_timeout.as_deref().unwrap_or("?"),
            )));
        }
        if op_timeout.is_zero() || op_timeout >= ttl {
            return Err(bad(format!(
                "--op-timeout {} must be more than 0 and shorter than --ttl {}: a client must \
                 give up on a request before its lease can run out",
                args.op_timeout.as_deref().unwrap_or("?"),
                args.ttl
            )));
        }
        let twice_ttl = |flag: &str, value: &Option<String>| match value {
            Some(text) => parse_duration(flag, text),
            None => Ok(ttl * 2),
        };
        let fault_duration = twice_ttl("--fault-duration", &args.fault_duration)?;
        let clock_jump = twice_ttl("--clock-jump", &args.clock_jump)?;
        let delay = twice_ttl("--delay", &args.delay)?;
        let fault_interval = parse_duration("--fault-interval", &args.fault_interval)?;
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
        let quiet = parse_duration("--quiet", &args.quiet)?;
        if quiet >= time_limit {
            return Err(bad(format!(
                "--quiet {} leaves no time for faults within --time-limit {}",
                args.quiet, args.time_limit
            )));
        }
        let work = parse_duration("--work", &args.work)?;
        if work >= time_limit {
            return Err(bad(format!(
                "--work {} must be shorter than --time-limit {}: a client would never finish \
                 its first critical section",
                args.work, args.time_limit
            )));
        }
        if args.loss == 0 || args.loss > 100 {
            return Err(bad(format!(
                "--loss {} must be a percentage from 1 to 100",
                args.loss
            )));
        }
        let mut nemeses: Vec<&'static dyn Nemesis> = Vec::new();
        for name in &args.nemesis {
            if name == nemesis::NONE {
                continue;
            }
            let n = nemesis::find(name).ok_or_else(|| {
                bad(format!(
                    "--nemesis {name} is not a nemesis lockpick knows: use {} or one of {}",
                    nemesis::NONE,
                    nemesis::names().join(", ")
                ))
            })?;
            if !nemeses.iter().any(|m| m.name() == n.name()) {
                nemeses.push(n);
            }
        }
        // A replayed schedule brings its own seed, unless --seed says otherwise.
        let mut replayed_seed = None;
        if let Some(path) = &args.schedule {
            let schedule = crate::schedule::Schedule::load(path)?;
            replayed_seed = Some(schedule.seed);
            let replayed = schedule
                .nemeses()
                .map_err(|e| bad(format!("--schedule {}: {e}", path.display())))?;
            let mut asked: Vec<&str> = nemeses.iter().map(|n| n.name()).collect();
            asked.sort();
            let replayed_names: Vec<&str> = replayed.iter().map(|n| n.name()).collect();
            if !nemeses.is_empty() && asked != replayed_names {
                return Err(bad(format!(
                    "--nemesis {} differs from the schedule in {} ({}): leave --nemesis out to \
                     replay it",
                    names(&nemeses),
                    path.display(),
                    names(&replayed)
                )));
            }
            crate::schedule_check::check_replay(
                path,
                &schedule,
                lock,
                args.clients,
                time_limit - quiet,
            )?;
            nemeses = replayed;
        } else {
            refuse_runaway_schedule(args, &nemeses, time_limit - quiet, fault_duration)?;
        }
        for n in &nemeses {
            refuse_mismatch(lock, *n)?;
        }
        let needs = nemeses
            .iter()
            .fold(Needs::default(), |needs, n| needs.union(n.needs()));
        let (runtime, images) = runtime::choose(
            &args.runtime,
            &args.images,
            lock.service().name(),
            needs.server_clock,
        )?;
        let config = RunConfig {
            lock,
            nemeses,
            clients: args.clients,
            ttl,
            time_limit,
            fencing: args.fencing,
            seed: args.seed.or(replayed_seed).unwrap_or_else(rand::random),
            work,
            fault_duration,
            fault_interval,
            quiet,
            partition_mode: args.partition_mode,
            clock_jump,
            delay,
            loss: args.loss,
            schedule: args.schedule.clone(),
            op_timeout,
            // Absolute, because servers change their working directory (redis-server's --dir)
            // before they open the log files the store holds.
            store: std::path::absolute(&args.store)
                .map_err(|e| bad(format!("--store {}: {e}", args.store.display())))?,
            runtime,
            images,
            command,
        };
        crate::store::check_writable(&config.store, &config.name())?;
        Ok(config)
    }

    /// The nemesis part of the run's name: `none`, or the nemeses joined by `+`.
    pub fn nemesis_name(&self) -> String {
        if self.nemeses.is_empty() {
            "none".to_string()
        } else {
            names(&self.nemeses).replace(',', "+")
        }
    }

    /// What the run's nemeses need, together.
    pub fn needs(&self) -> Needs {
        self.nemeses
            .iter()
            .fold(Needs::default(), |needs, n| needs.union(n.needs()))
    }

    /// The knobs that shape faults.
    pub fn fault_knobs(&self) -> FaultKnobs {
        FaultKnobs {
            clock_jump: self.clock_jump,
            delay: self.delay,
            loss: self.loss,
            partition_mode: self.partition_mode,
            client_deadline_ns: self.time_limit.as_nanos() as u64,
        }
    }

    /// When faults must all be healed: the quiet period follows.
    pub fn heal_at(&self) -> Duration {
        self.time_limit - self.quiet
    }

    /// The run's name in the store: `<lock>-<nemesis>`. A long list of nemeses would not fit in
    /// a file name: it becomes their count and a short hash of the list.
    pub fn name(&self) -> String {
        let nemesis = self.nemesis_name();
        if nemesis.len() <= 80 {
            return format!("{}-{nemesis}", self.lock.name());
        }
        // FNV-1a: stable across runs and builds, unlike the standard library's hasher.
        let hash = nemesis.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        format!(
            "{}-{}-nemeses-{:08x}",
            self.lock.name(),
            self.nemeses.len(),
            hash as u32
        )
    }
}

/// Refuses fault timings that would draw more than `MAX_WINDOWS` windows. Each nemesis's windows
/// are at least its duration plus half the interval apart (see `Schedule::plan`).
fn refuse_runaway_schedule(
    args: &RunArgs,
    nemeses: &[&'static dyn Nemesis],
    fault_time: Duration,
    fault_duration: Duration,
) -> anyhow::Result<()> {
    let interval = parse_duration("--fault-interval", &args.fault_interval)?;
    let spacing = (fault_duration.as_millis() + interval.as_millis() / 2).max(1);
    let windows = nemeses.len() as u128 * (fault_time.as_millis() / spacing);
    if windows > MAX_WINDOWS as u128 {
        return Err(bad(format!(
            "--fault-interval {} and --fault-duration {} would draw about {windows} faults in \
             --time-limit {}: at most {MAX_WINDOWS} (make them longer)",
            args.fault_interval,
            args.fault_duration.as_deref().unwrap_or("(twice the TTL)"),
            args.time_limit
        )));
    }
    Ok(())
}

fn names(nemeses: &[&dyn Nemesis]) -> String {
    let names: Vec<&str> = nemeses.iter().map(|n| n.name()).collect();
    names.join(",")
}

/// Refuses a nemesis that cannot do what it says to this lock, rather than pretend: the
/// nemesis's needs against the lock's capabilities.
fn refuse_mismatch(lock: &dyn Lock, nemesis: &dyn Nemesis) -> anyhow::Result<()> {
    match nemesis.needs().refusal(&lock.capabilities()) {
        Some(why) => Err(bad(format!(
            "--nemesis {} cannot apply to --lock {}: {why}",
            nemesis.name(),
            lock.name()
        ))),
        None => Ok(()),
    }
}

/// Parses `1.5s`, `500ms`, `2m`, `1h`, or a plain number of seconds.
pub fn parse_duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(bad(format!(
            "{flag} {text} is negative: a duration is 0 or more"
        )));
    }
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
