//! `--persistence`: what a Redis server keeps on its own disk, so that a server the run kills
//! and restarts comes back with the locks it had granted, or empty. A service whose servers are
//! redis-server says so in its catalogue entry (`persistence: Support::Yes`) and gives each
//! server the words of [`Persistence::redis_args`]; any other service's entry says why the knob
//! means nothing to it, and the configuration refuses it there with that reason.
//!
//! The nemeses kill a process, not the machine: what redis-server has written survives a
//! SIGKILL whether or not it was fsynced. So `aof-always` keeps every acknowledged write, while
//! `aof-everysec` can lose only a write the server had not yet handed to the kernel (it delays
//! the write, not just the fsync, while an earlier fsync is slow).

use std::ffi::OsString;
use std::path::Path;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Persistence {
    /// Nothing on disk: a restarted server comes back empty (the servers' default here).
    #[default]
    None,
    /// An append-only file, fsynced once a second.
    AofEverysec,
    /// An append-only file, fsynced before every reply.
    AofAlways,
}

impl Persistence {
    /// The word `--persistence` takes for it.
    pub fn name(self) -> &'static str {
        match self {
            Persistence::None => "none",
            Persistence::AofEverysec => "aof-everysec",
            Persistence::AofAlways => "aof-always",
        }
    }

    /// Whether the servers write anything, and so need a data folder each.
    pub fn keeps_data(self) -> bool {
        self != Persistence::None
    }

    /// redis-server's words for it, its data in `dir` (the server's own folder when it keeps
    /// data: two servers appending to one file would corrupt it). RDB snapshots stay off
    /// either way: a snapshot taken between a grant and a kill would be one more, untimed,
    /// way to keep a key.
    pub fn redis_args(self, dir: &Path) -> Vec<OsString> {
        let mut args: Vec<OsString> = ["--save", ""].map(OsString::from).to_vec();
        let fsync = match self {
            Persistence::None => None,
            Persistence::AofEverysec => Some("everysec"),
            Persistence::AofAlways => Some("always"),
        };
        match fsync {
            None => args.extend(["--appendonly", "no"].map(OsString::from)),
            Some(fsync) => {
                args.extend(["--appendonly", "yes", "--appendfsync", fsync].map(OsString::from))
            }
        }
        args.push("--dir".into());
        args.push(dir.into());
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_choice_is_its_own_word_and_its_own_fsync() {
        for p in Persistence::value_variants() {
            let word = p.to_possible_value().unwrap();
            assert_eq!(word.get_name(), p.name());
            assert_eq!(serde_json::to_value(p).unwrap(), p.name());
        }
        let args = |p: Persistence| -> Vec<String> {
            p.redis_args(Path::new("/d"))
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            args(Persistence::None),
            ["--save", "", "--appendonly", "no", "--dir", "/d"]
        );
        let always = args(Persistence::AofAlways);
        assert!(always.windows(2).any(|w| w == ["--appendfsync", "always"]));
        assert!(always.windows(2).any(|w| w == ["--appendonly", "yes"]));
        let everysec = args(Persistence::AofEverysec);
        assert!(everysec
            .windows(2)
            .any(|w| w == ["--appendfsync", "everysec"]));
    }
}
