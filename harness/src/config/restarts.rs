//! `--persistence` and `--restart-after`: what a killed server keeps, and how long it stays
//! down. Each means something to some runs only (a lock whose servers are redis-server; a
//! nemesis that kills servers): `run` refuses either elsewhere with the reason below, and a
//! comparison makes such a cell n/a with the same reason, as it does a nemesis its lock
//! refuses.

use crate::locks::{Lock, Support};
use crate::nemesis::{self, Nemesis};
use crate::service::persistence::Persistence;

/// Why `--persistence` (as given) or `--restart-after` (as typed) cannot apply to a run of
/// `lock` under `nemeses`, in one line naming the lock or the nemeses; `None` when both apply
/// or neither is given.
pub fn refusal(
    lock: &dyn Lock,
    nemeses: &[&dyn Nemesis],
    persistence: Option<Persistence>,
    restart_after: Option<&str>,
) -> Option<String> {
    if let (Some(asked), Support::No(why)) = (persistence, lock.service_entry().persistence) {
        return Some(format!(
            "--persistence {} does not apply to --lock {}: {why}",
            asked.name(),
            lock.label()
        ));
    }
    let restart_after = restart_after?;
    if nemeses.iter().any(|n| n.kills_servers()) {
        return None;
    }
    let killers: Vec<&str> = nemesis::NEMESES
        .iter()
        .filter(|n| n.kills_servers())
        .map(|n| n.name())
        .collect();
    let asked: Vec<&str> = nemeses.iter().map(|n| n.name()).collect();
    let asked = if asked.is_empty() {
        nemesis::NONE.to_string()
    } else {
        asked.join(",")
    };
    Some(format!(
        "--restart-after {restart_after} says how long a killed server stays down, and \
         --nemesis {asked} kills no server (those that do: {})",
        killers.join(", ")
    ))
}

/// What the run's servers keep: `--persistence`, else none, for a lock whose servers take it;
/// `None` for any other lock (it has no such knob).
pub fn kept(lock: &dyn Lock, persistence: Option<Persistence>) -> Option<Persistence> {
    lock.service_entry()
        .persistence
        .is_yes()
        .then(|| persistence.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nemesis(name: &str) -> &'static dyn Nemesis {
        nemesis::find(name).unwrap()
    }

    fn lock(name: &str) -> &'static dyn Lock {
        crate::locks::find(name).unwrap()
    }

    #[test]
    fn persistence_is_refused_by_a_lock_whose_servers_are_not_redis_naming_the_lock() {
        let aof = Some(Persistence::AofAlways);
        for redis in ["redis", "redlock", "rslock"] {
            assert_eq!(refusal(lock(redis), &[], aof, None), None, "{redis}");
            assert_eq!(kept(lock(redis), None), Some(Persistence::None));
        }
        let why = refusal(lock("etcd"), &[], aof, None).expect("refused");
        assert!(
            why.starts_with("--persistence aof-always does not apply to --lock etcd: "),
            "{why}"
        );
        assert!(!why.contains('\n'));
        assert_eq!(kept(lock("zookeeper"), aof), None);
        // The default is no knob at all: nothing to refuse.
        assert_eq!(refusal(lock("etcd"), &[], None, None), None);
    }

    #[test]
    fn restart_after_needs_a_nemesis_that_kills_a_server() {
        let kill = nemesis("kill-node");
        let pause = nemesis("pause-holder");
        assert_eq!(refusal(lock("redis"), &[kill], None, Some("2s")), None);
        assert_eq!(
            refusal(lock("redis"), &[pause, kill], None, Some("2s")),
            None
        );
        let why = refusal(lock("redis"), &[pause], None, Some("2s")).expect("refused");
        assert!(
            why.contains("--nemesis pause-holder kills no server"),
            "{why}"
        );
        assert!(why.contains("kill-node"), "{why}");
        let why = refusal(lock("redis"), &[], None, Some("2s")).expect("refused");
        assert!(why.contains("--nemesis none kills no server"), "{why}");
    }
}
