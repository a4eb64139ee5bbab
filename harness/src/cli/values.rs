//! How the command line reads its values: lock, nemesis and runtime names from the catalogues,
//! and durations as words (parsed later, with the flag's name, by the configuration).

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// The `--lock` values: every lock in the catalogue, with its one-line description, and
/// `exec:<service>:<command>`, the user's own client program over a built-in lock's servers.
pub(super) fn lock_values() -> LockValues {
    LockValues
}

/// `compare --locks`'s help, its default the locks whose catalogue entries ask for it.
pub(super) fn compare_locks_help() -> String {
    format!(
        "Locks, comma-separated: a lock's name, `exec:<service>:<command>`, or the short name \
         the matrix file gives one of its locks [default: {}]",
        crate::locks::default_comparison()
    )
}

#[derive(Clone)]
pub(super) struct LockValues;

impl LockValues {
    fn built_in() -> PossibleValuesParser {
        PossibleValuesParser::new(
            crate::locks::LOCKS
                .iter()
                .map(|l| PossibleValue::new(l.name()).help(l.about())),
        )
    }
}

impl TypedValueParser for LockValues {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let text = value.to_string_lossy();
        if !text.starts_with(crate::locks::exec::PREFIX) {
            return Self::built_in().parse_ref(cmd, arg, value);
        }
        match crate::locks::exec::find(&text) {
            Ok(_) => Ok(text.into_owned()),
            Err(why) => Err(clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value '{text}' for '--lock <LOCK>': {why}\n"),
            )
            .with_cmd(cmd)),
        }
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let exec = PossibleValue::new("exec:<service>:<command>").help(format!(
            "Your own client program (workloads/PROTOCOL.md) over the servers of {}.",
            crate::locks::exec::service_names().join(", ")
        ));
        let built_in: Vec<PossibleValue> = Self::built_in()
            .possible_values()
            .map(|values| values.collect())
            .unwrap_or_default();
        Some(Box::new(built_in.into_iter().chain(std::iter::once(exec))))
    }
}

/// The `--runtime` values: every runtime in the catalogue.
pub(super) fn runtime_values() -> PossibleValuesParser {
    PossibleValuesParser::new(
        crate::runtime::RUNTIMES
            .iter()
            .map(|r| PossibleValue::new(r.name()).help(r.about())),
    )
}

/// The `--service` values of `protocol-check`: the built-in locks whose servers a user's program
/// can take.
pub(super) fn service_values() -> PossibleValuesParser {
    PossibleValuesParser::new(crate::locks::exec::service_names())
}

/// The `--nemesis` values: `none` and every nemesis in the catalogue.
pub(super) fn nemesis_values() -> PossibleValuesParser {
    let none = PossibleValue::new(crate::nemesis::NONE).help("No faults.");
    PossibleValuesParser::new(
        std::iter::once(none).chain(
            crate::nemesis::NEMESES
                .iter()
                .map(|n| PossibleValue::new(n.name()).help(n.about())),
        ),
    )
}

/// A duration flag's word, as typed. Duration flags take words that start with `-`, so that
/// `--ttl -1s` is refused by the duration parser under the flag's own name; a following flag
/// (`--ttl --store x`) is still a missing value, not a duration.
pub(super) fn duration_word(text: &str) -> Result<String, String> {
    if text.starts_with("--") {
        return Err(format!("a duration is needed here, not the flag {text}"));
    }
    Ok(text.to_string())
}
