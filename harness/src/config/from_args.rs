//! `RunConfig::from_args`: the run's flags checked one stage at a time (the lock, the
//! timings, the nemeses and a replayed schedule, the critical section, where the nodes live),
//! each refusing bad input in one line before anything is created.

use std::time::Duration;

use super::{
    bad, fault_knobs, names, parse_duration, restarts, runtime_choice, RunConfig, DEFAULT_WORK,
    MAX_CLIENTS, MIN_OP_TIMEOUT,
};
use crate::cli::{RunArgs, RunKnobs};
use crate::locks::{self, Lock};
use crate::nemesis::{self, Needs, Nemesis};
use crate::schedule::{self, Schedule};

impl RunConfig {
    pub fn from_args(args: &RunArgs, command: Vec<String>) -> anyhow::Result<RunConfig> {
        let lock = lock_of(args)?;
        let knobs = &args.knobs;
        if let Some(why) = restarts::refusal(lock, &[], knobs.persistence, None) {
            return Err(bad(why));
        }
        let timings = Timings::of(lock, knobs)?;
        if let Some(replicas) = knobs.wait_replicas {
            check_wait_replicas(lock, replicas)?;
        }
        let faults = fault_knobs::check(&args.faults, timings.ttl, timings.time_limit)?;
        let (nemeses, replayed_seed) = nemeses_of(args, lock, &timings)?;
        let restart_after = args.faults.restart_after.as_deref();
        if let Some(why) = restarts::refusal(lock, &nemeses, None, restart_after) {
            return Err(bad(why));
        }
        let work = work_of(knobs, &nemeses, &timings)?;
        let needs = (nemeses.iter()).fold(Needs::default(), |needs, n| needs.union(n.needs()));
        refuse_unreachable_program_clock(lock, knobs, needs)?;
        let chosen = runtime_choice::choose(
            knobs.runtime(),
            &knobs.images,
            &knobs.server_bins,
            lock.service().name(),
            needs.server_clock,
        )?;
        let config = RunConfig {
            lock,
            nemeses,
            clients: knobs.clients(),
            ttl: timings.ttl,
            time_limit: timings.time_limit,
            fencing: args.fencing,
            seed: args.seed.or(replayed_seed).unwrap_or_else(rand::random),
            work,
            quiet: timings.quiet,
            faults,
            persistence: restarts::kept(lock, knobs.persistence),
            schedule: args.schedule.clone(),
            op_timeout: timings.op_timeout,
            jam_bound: timings.jam_bound,
            // Absolute, because servers change their working directory (redis-server's --dir)
            // before they open the log files the store holds.
            store: std::path::absolute(&args.store)
                .map_err(|e| bad(format!("--store {}: {e}", args.store.display())))?,
            runtime: chosen.kind,
            images: chosen.images,
            server_bins: chosen.server_bins,
            until: args.until,
            wait_replicas: knobs.wait_replicas,
            command,
        };
        if config.schedule.is_none() && !config.nemeses.is_empty() {
            config.check_plan(args)?;
        }
        crate::store::check_writable(&config.store, &config.name())?;
        Ok(config)
    }
}

/// The lock `--lock` names (and `--name` shows an exec lock by).
fn lock_of(args: &RunArgs) -> anyhow::Result<&'static dyn Lock> {
    let lock = locks::find(&args.lock).ok_or_else(|| {
        bad(format!(
            "--lock {} is not a lock lockpick knows: use one of {}",
            args.lock,
            locks::names().join(", ")
        ))
    })?;
    match &args.name {
        Some(short) => locks::find_named(&args.lock, Some(short))
            .map_err(|why| bad(format!("--name {short}: {why}"))),
        None => Ok(lock),
    }
}

/// The run's durations, each checked against the others: a lease, a run, a request, a jam.
struct Timings {
    ttl: Duration,
    time_limit: Duration,
    op_timeout: Duration,
    jam_bound: Option<Duration>,
    quiet: Duration,
}

impl Timings {
    fn of(lock: &dyn Lock, knobs: &RunKnobs) -> anyhow::Result<Timings> {
        let ttl = parse_duration("--ttl", knobs.ttl())?;
        if ttl < Duration::from_millis(10) {
            return Err(bad(format!(
                "--ttl {} is too short: a lease needs at least 10ms (try --ttl 1s)",
                knobs.ttl()
            )));
        }
        if let Err(why) = lock.check_ttl(ttl) {
            return Err(bad(format!(
                "--ttl {} does not suit {}: {why}",
                knobs.ttl(),
                lock.name()
            )));
        }
        let time_limit = parse_duration("--time-limit", knobs.time_limit())?;
        if time_limit < Duration::from_millis(1) || time_limit > Duration::from_secs(24 * 3600) {
            return Err(bad(format!(
                "--time-limit {} must be 1ms or more and at most 24h",
                knobs.time_limit()
            )));
        }
        if knobs.clients() == 0 || knobs.clients() > MAX_CLIENTS {
            return Err(bad(format!(
                "--clients {} must be between 1 and {MAX_CLIENTS}",
                knobs.clients()
            )));
        }
        let op_timeout = match &knobs.op_timeout {
            Some(text) => parse_duration("--op-timeout", text)?,
            None => (ttl / 2).min(Duration::from_secs(1)),
        };
        if op_timeout < MIN_OP_TIMEOUT {
            return Err(bad(format!(
                "--op-timeout {} is shorter than 1ms, the shortest request timeout a client \
                 honours",
                knobs.op_timeout.as_deref().unwrap_or("?"),
            )));
        }
        if op_timeout.is_zero() || op_timeout >= ttl {
            return Err(bad(format!(
                "--op-timeout {} must be more than 0 and shorter than --ttl {}: a client must \
                 give up on a request before its lease can run out",
                knobs.op_timeout.as_deref().unwrap_or("?"),
                knobs.ttl()
            )));
        }
        let jam_bound = match &knobs.jam_bound {
            Some(text) => {
                let bound = parse_duration("--jam-bound", text)?;
                if bound < ttl {
                    return Err(bad(format!(
                        "--jam-bound {text} is shorter than --ttl {}: a lease outlives its dead \
                         holder by up to the TTL, so a correct lock would be called jammed",
                        knobs.ttl()
                    )));
                }
                Some(bound)
            }
            None => None,
        };
        let quiet = parse_duration("--quiet", knobs.quiet())?;
        if quiet >= time_limit {
            return Err(bad(format!(
                "--quiet {} leaves no time for faults within --time-limit {}",
                knobs.quiet(),
                knobs.time_limit()
            )));
        }
        Ok(Timings {
            ttl,
            time_limit,
            op_timeout,
            jam_bound,
            quiet,
        })
    }
}

/// The nemeses `--nemesis` names, or those of the schedule `--schedule` replays (with its
/// seed), each checked against the lock.
fn nemeses_of(
    args: &RunArgs,
    lock: &dyn Lock,
    timings: &Timings,
) -> anyhow::Result<(Vec<&'static dyn Nemesis>, Option<u64>)> {
    let knobs = &args.knobs;
    let time_limit = timings.time_limit;
    let quiet = timings.quiet;
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
        let schedule = Schedule::load(path)?;
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
        schedule::check::check_replay(path, &schedule, lock, knobs.clients(), time_limit - quiet)?;
        nemeses = replayed;
    }
    for n in &nemeses {
        refuse_mismatch(lock, *n)?;
    }
    Ok((nemeses, replayed_seed))
}

/// The critical section: as asked, or long enough for every nemesis's classic failure.
fn work_of(
    knobs: &RunKnobs,
    nemeses: &[&'static dyn Nemesis],
    timings: &Timings,
) -> anyhow::Result<Duration> {
    let (ttl, time_limit) = (timings.ttl, timings.time_limit);
    let work = match &knobs.work {
        Some(text) => parse_duration("--work", text)?,
        None => nemeses
            .iter()
            .filter_map(|n| n.default_work(ttl))
            .fold(DEFAULT_WORK, Duration::max),
    };
    if work >= time_limit {
        return Err(bad(format!(
            "--work {} must be shorter than --time-limit {}: a client would never finish \
             its first critical section",
            knobs.work.as_deref().unwrap_or("(the nemeses' default)"),
            knobs.time_limit()
        )));
    }
    Ok(work)
}

/// Refuses skew-clients on a client program where its clock cannot be reached: its vDSO is
/// patched through ptrace, which needs its own pid.
fn refuse_unreachable_program_clock(
    lock: &dyn Lock,
    knobs: &RunKnobs,
    needs: Needs,
) -> anyhow::Result<()> {
    let program_clock = lock.client_clock_mover() == locks::ClientClockMover::ProgramVdso;
    if needs.client_clock && program_clock {
        let reachable = crate::runtime::find(knobs.runtime())
            .is_none_or(|kind| kind.client_programs_reachable());
        if !reachable {
            return Err(bad(format!(
                "--nemesis skew-clients on {} needs --runtime netns: a client program's \
                 clock moves by patching its vDSO through ptrace, which needs its own pid \
                 (in a container it runs behind docker)",
                lock.name()
            )));
        }
    }
    Ok(())
}

/// Refuses `--wait-replicas` on a lock without as many replicas to wait for.
fn check_wait_replicas(lock: &dyn Lock, replicas: u32) -> anyhow::Result<()> {
    let has = lock.replicas();
    if has == 0 {
        let replicating: Vec<&str> = (locks::LOCKS.iter())
            .filter(|l| l.replicas() > 0)
            .map(|l| l.name())
            .collect();
        return Err(bad(format!(
            "--wait-replicas does not apply to --lock {}: its servers have no replicas to wait \
             for (locks that replicate: {})",
            lock.name(),
            replicating.join(", ")
        )));
    }
    if replicas == 0 || replicas > has {
        return Err(bad(format!(
            "--wait-replicas {replicas} must be between 1 and {has}: --lock {} has {has} \
             replica(s)",
            lock.name()
        )));
    }
    Ok(())
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
