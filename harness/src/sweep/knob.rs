//! The catalogue of knobs a sweep can vary: one self-describing entry each, with the flag it
//! sets on every run, what its values are, whether a plot reads it against the TTL, and when a
//! run would ignore it (then the sweep is refused before it starts).

use crate::cli::CellKnobs;
use crate::locks::Lock;
use crate::nemesis::Nemesis;

/// What a knob's values are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A duration (`500ms`, `2s`, or a multiple of the TTL as `1.5x`).
    Duration,
    /// A whole number.
    Count,
}

/// One knob a sweep can vary.
pub struct Knob {
    /// Its flag without the dashes, as `--vary` names it.
    pub name: &'static str,
    /// What it is, for the plots' axis and `--help`.
    pub about: &'static str,
    pub unit: Unit,
    /// Whether its plot's x axis is its ratio to the TTL (a pause against the lease), with the
    /// line at 1 drawn; the TTL's own sweep draws that line where the TTL equals the pause.
    pub against_ttl: bool,
    /// Why a run of `lock` under `nemeses` would ignore this knob, or `None`.
    pub ignored: fn(&dyn Lock, &[&'static dyn Nemesis]) -> Option<String>,
    /// Sets the knob to `value` (a whole flag word) in the knobs every run shares.
    pub set: fn(&mut CellKnobs, String),
    /// Whether the knobs already set it (the sweep owns it then: refused).
    pub given: fn(&CellKnobs) -> bool,
}

/// Every knob a sweep can vary.
pub static KNOBS: &[Knob] = &[
    Knob {
        name: "fault-duration",
        about: "fault duration",
        unit: Unit::Duration,
        against_ttl: true,
        ignored: |_, nemeses| {
            nemeses
                .is_empty()
                .then(|| "no nemesis runs, so no fault has a duration".to_string())
        },
        set: |k, v| k.faults.fault_duration = Some(v),
        given: |k| k.faults.fault_duration.is_some(),
    },
    Knob {
        name: "ttl",
        about: "lease time (TTL)",
        unit: Unit::Duration,
        against_ttl: false,
        ignored: |lock, _| {
            (!lock.reads_ttl()).then(|| {
                format!(
                    "{} reads no TTL (its session is the lease): its TTL changes nothing",
                    lock.label()
                )
            })
        },
        set: |k, v| k.run.ttl = Some(v),
        given: |k| k.run.ttl.is_some(),
    },
    Knob {
        name: "clock-jump",
        about: "clock jump",
        unit: Unit::Duration,
        against_ttl: true,
        ignored: |_, nemeses| {
            let moves = |n: &&dyn Nemesis| n.needs().server_clock || n.needs().client_clock;
            (!nemeses.iter().any(moves))
                .then(|| "no nemesis of the sweep moves a clock".to_string())
        },
        set: |k, v| k.faults.clock_jump = Some(v),
        given: |k| k.faults.clock_jump.is_some(),
    },
    Knob {
        name: "delay",
        about: "delay of a client's traffic",
        unit: Unit::Duration,
        against_ttl: true,
        ignored: |_, nemeses| {
            let delays = |n: &&dyn Nemesis| n.needs().resource_links || n.needs().server_links;
            (!nemeses.iter().any(delays))
                .then(|| "no nemesis of the sweep delays traffic".to_string())
        },
        set: |k, v| k.faults.delay = Some(v),
        given: |k| k.faults.delay.is_some(),
    },
    Knob {
        name: "work",
        about: "work time between a holder's read and its write",
        unit: Unit::Duration,
        against_ttl: true,
        ignored: |_, _| None,
        set: |k, v| k.run.work = Some(v),
        given: |k| k.run.work.is_some(),
    },
    Knob {
        name: "clients",
        about: "number of clients",
        unit: Unit::Count,
        against_ttl: false,
        ignored: |_, _| None,
        set: |k, v| k.run.clients = v.parse().ok(),
        given: |k| k.run.clients.is_some(),
    },
];

/// Finds a knob by its name.
pub fn find(name: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.name == name)
}

/// The names of every knob, for an error's "use one of".
pub fn names() -> Vec<&'static str> {
    KNOBS.iter().map(|k| k.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_sets_what_it_reads_as_given() {
        for knob in KNOBS {
            let mut knobs = CellKnobs::default();
            assert!(!(knob.given)(&knobs), "{}", knob.name);
            (knob.set)(&mut knobs, "3".to_string());
            assert!((knob.given)(&knobs), "{}", knob.name);
            assert_eq!(knobs.words()[0], format!("--{}", knob.name));
            assert_eq!(find(knob.name).map(|k| k.name), Some(knob.name));
        }
    }

    #[test]
    fn a_knob_no_nemesis_reads_is_ignored_and_one_every_run_reads_is_not() {
        let redis = crate::locks::find("redis").unwrap();
        let pause = crate::nemesis::find("pause-holder").unwrap();
        let clock = crate::nemesis::find("clock-forward").unwrap();
        let knob = |name| find(name).unwrap();
        assert!((knob("clock-jump").ignored)(redis, &[pause]).is_some());
        assert!((knob("clock-jump").ignored)(redis, &[clock]).is_none());
        assert!((knob("delay").ignored)(redis, &[pause]).is_some());
        assert!((knob("fault-duration").ignored)(redis, &[]).is_some());
        assert!((knob("ttl").ignored)(redis, &[pause]).is_none());
        let advisory = crate::locks::find("postgres-advisory").unwrap();
        assert!((knob("ttl").ignored)(advisory, &[pause]).is_some());
        let mariadb = crate::locks::find("mariadb").unwrap();
        assert!((knob("ttl").ignored)(mariadb, &[pause]).is_some());
        // An exec program is given the TTL (LOCKPICK_TTL_MS) though it reports no lease length.
        let exec = crate::locks::find_named("exec:redis:./client", Some("mine")).unwrap();
        assert!(exec
            .lease_silence(std::time::Duration::from_secs(1))
            .is_none());
        assert!((knob("ttl").ignored)(exec, &[pause]).is_none());
    }
}
