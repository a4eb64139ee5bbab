//! Checks that a stored schedule (`--schedule`) fits the run that would replay it, before
//! anything is created: the lock it was drawn for, the nodes it aims at, and the time its faults
//! need. A schedule from a redlock run names servers n1..n5; a redis run has only n1, and would
//! otherwise fail mid-run or silently replay faults meant for another lock.

use std::path::Path;
use std::time::Duration;

use crate::bad_input::bad;
use crate::locks::Lock;
use crate::nemesis;
use crate::nemesis::window::{Targets, LEADER};
use crate::schedule::Schedule;

/// The most fault windows a run may draw: more is a typo in a flag, and would take memory
/// without bound.
pub const MAX_WINDOWS: u64 = 100_000;

/// The nodes a run of `lock` with `clients` clients has.
struct Nodes {
    servers: usize,
    clients: u32,
}

impl Nodes {
    fn is_server(&self, name: &str) -> bool {
        numbered(name, "n").is_some_and(|i| i >= 1 && i <= self.servers as u64)
    }

    fn is_client(&self, name: &str) -> bool {
        numbered(name, "c").is_some_and(|i| i < self.clients as u64)
    }

    fn has(&self, name: &str) -> bool {
        self.is_server(name) || self.is_client(name) || name == "resource"
    }

    fn describe(&self) -> String {
        format!(
            "servers n1 to n{}, clients c0 to c{}, and resource",
            self.servers,
            self.clients.saturating_sub(1)
        )
    }
}

/// `n3` → 3 for the letter `n`; `None` for anything else (`n03` included).
fn numbered(name: &str, letter: &str) -> Option<u64> {
    let digits = name.strip_prefix(letter)?;
    let canonical = !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

/// Refuses a schedule that the run of `lock` with `clients` clients, whose faults must all end
/// by `fault_time`, would not replay as written.
pub fn check_replay(
    path: &Path,
    schedule: &Schedule,
    lock: &dyn Lock,
    clients: u32,
    fault_time: Duration,
) -> anyhow::Result<()> {
    let file = path.display();
    if let Some(drawn_for) = &schedule.lock {
        if drawn_for != lock.name() {
            return Err(bad(format!(
                "--schedule {file} was drawn for --lock {drawn_for}, not --lock {}",
                lock.name()
            )));
        }
    }
    if schedule.windows.len() as u64 > MAX_WINDOWS {
        return Err(bad(format!(
            "--schedule {file} holds {} faults: at most {MAX_WINDOWS}",
            schedule.windows.len()
        )));
    }
    let nodes = Nodes {
        servers: lock.capabilities().servers,
        clients,
    };
    let fault_ms = fault_time.as_millis() as u64;
    for (i, window) in schedule.windows.iter().enumerate() {
        let nemesis = window.nemesis.as_str();
        let Some(entry) = nemesis::find(nemesis) else {
            return Err(bad(format!(
                "--schedule {file}: fault {i} is of nemesis {nemesis:?}, which lockpick does not \
                 know"
            )));
        };
        if window.duration_ms == 0 {
            return Err(bad(format!(
                "--schedule {file}: fault {i} ({nemesis}) lasts 0 ms"
            )));
        }
        let end = window.start_ms.saturating_add(window.duration_ms);
        if end > fault_ms {
            return Err(bad(format!(
                "--schedule {file}: fault {i} ({nemesis}) lasts until {:.3} s, after the faults \
                 of this run end at {:.3} s (--time-limit minus --quiet)",
                end as f64 / 1e3,
                fault_ms as f64 / 1e3
            )));
        }
        let kind = entry.aim().targets();
        // A leader nemesis's window names "the leader", found when the fault opens.
        let names_leader = |name: &String| kind == Targets::Leader && name == LEADER;
        let named = (window.targets.iter())
            .chain(window.cuts.iter().flat_map(|(a, b)| [a, b]))
            .filter(|name| !names_leader(name));
        for name in named {
            if !nodes.has(name) {
                return Err(bad(format!(
                    "--schedule {file}: fault {i} ({nemesis}) aims at node {name:?}, which a \
                     --lock {} run with --clients {clients} does not have (it has {})",
                    lock.name(),
                    nodes.describe()
                )));
            }
        }
        let fits = |name: &String| match kind {
            Targets::Servers => nodes.is_server(name),
            Targets::Clients => nodes.is_client(name),
            Targets::Leader => name == LEADER,
            Targets::Holder => false,
        };
        if let Some(name) = window.targets.iter().find(|name| !fits(name)) {
            return Err(bad(format!(
                "--schedule {file}: fault {i} ({nemesis}) aims at node {name}, which is not a \
                 node it can hit"
            )));
        }
        if kind != Targets::Holder && window.targets.is_empty() {
            return Err(bad(format!(
                "--schedule {file}: fault {i} ({nemesis}) names no node to hit"
            )));
        }
    }
    Ok(())
}

/// Refuses fault timings that would draw more than `MAX_WINDOWS` windows. Each nemesis's
/// windows are at least its duration plus half the interval apart (see `Schedule::plan`), so
/// this is known before anything is drawn.
pub fn refuse_runaway(
    args: &crate::cli::RunArgs,
    durations: &[Duration],
    fault_time: Duration,
    interval: Duration,
) -> anyhow::Result<()> {
    let windows: u128 = durations
        .iter()
        .map(|d| {
            let spacing = (d.as_millis() + interval.as_millis() / 2).max(1);
            fault_time.as_millis() / spacing
        })
        .sum();
    if windows > MAX_WINDOWS as u128 {
        return Err(bad(format!(
            "--fault-interval {} and --fault-duration {} would draw about {windows} faults in \
             --time-limit {}: at most {MAX_WINDOWS} (make them longer)",
            args.faults
                .fault_interval
                .as_deref()
                .unwrap_or(crate::cli::DEFAULT_FAULT_INTERVAL),
            args.faults
                .fault_duration
                .as_deref()
                .unwrap_or("(each nemesis's default)"),
            args.knobs.time_limit()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nemesis::window::Window;

    fn window(nemesis: &str, targets: &[&str]) -> Window {
        Window {
            nemesis: nemesis.to_string(),
            start_ms: 1000,
            duration_ms: 500,
            targets: targets.iter().map(|t| t.to_string()).collect(),
            cuts: Vec::new(),
            one_way: false,
        }
    }

    fn schedule(lock: Option<&str>, windows: Vec<Window>) -> Schedule {
        Schedule {
            seed: 1,
            lock: lock.map(str::to_string),
            windows,
        }
    }

    fn check(schedule: &Schedule, lock: &str) -> Result<(), String> {
        check_replay(
            Path::new("s.json"),
            schedule,
            crate::locks::find(lock).unwrap(),
            5,
            Duration::from_secs(9),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_redlock_schedule_does_not_replay_on_one_redis_server() {
        let s = schedule(None, vec![window("pause-node", &["n4"])]);
        assert!(check(&s, "redlock").is_ok());
        let refused = check(&s, "redis").unwrap_err();
        assert!(
            refused.contains("s.json") && refused.contains("\"n4\""),
            "{refused}"
        );
    }

    #[test]
    fn a_schedule_replays_only_on_the_lock_it_was_drawn_for() {
        let s = schedule(Some("redlock"), vec![window("pause-node", &["n1"])]);
        assert!(check(&s, "redlock").is_ok());
        let refused = check(&s, "rslock").unwrap_err();
        assert!(refused.contains("drawn for --lock redlock"), "{refused}");
    }

    #[test]
    fn faults_must_hit_the_kind_of_node_they_act_on() {
        let client_paused = schedule(None, vec![window("pause-node", &["c1"])]);
        assert!(check(&client_paused, "redis").is_err());
        let missing_client = schedule(None, vec![window("kill-client", &["c5"])]);
        assert!(check(&missing_client, "redis").is_err());
        let padded = schedule(None, vec![window("kill-client", &["c01"])]);
        assert!(check(&padded, "redis").is_err());
    }

    #[test]
    fn a_leader_window_names_the_leader_and_no_node() {
        let aimed = schedule(None, vec![window("kill-leader", &["leader"])]);
        assert!(check(&aimed, "etcd").is_ok());
        let at_a_node = schedule(None, vec![window("kill-leader", &["n1"])]);
        assert!(check(&at_a_node, "etcd").is_err());
        let leader_for_a_server_fault = schedule(None, vec![window("kill-node", &["leader"])]);
        assert!(check(&leader_for_a_server_fault, "etcd").is_err());
    }

    #[test]
    fn faults_must_end_before_the_quiet_period() {
        let mut late = window("pause-node", &["n1"]);
        late.start_ms = 8800;
        let refused = check(&schedule(None, vec![late]), "redis").unwrap_err();
        assert!(refused.contains("9.300 s"), "{refused}");
    }
}
