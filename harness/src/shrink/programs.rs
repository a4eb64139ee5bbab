//! The programs a run folder would have a shrink start. A folder's `command.txt` is hostile
//! input (anyone who could write the folder could have forged it), and its replays run as
//! root: an exec lock's client program, a `--server-bin` server, a `--image` image are started
//! only when the person names each again on the shrink's command line, or passes
//! `--trust-folder-programs`; either way they are printed before the first replay.

use anyhow::Result;

use super::source::Source;
use crate::bad_input::bad;
use crate::cli::{RunArgs, ShrinkArgs};
use crate::store;

/// A program the folder chose, as the `lockpick run` flag and value that name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredProgram {
    pub flag: &'static str,
    pub value: String,
}

impl StoredProgram {
    /// `--lock 'exec:redis:/usr/bin/client --fast'`, as a shell reads it back.
    pub fn words(&self) -> String {
        shell_words::join([self.flag, self.value.as_str()])
    }
}

/// Every program a run's flags name for its replays to start, in the order of the flags below.
/// Built-in locks and the host's packages are lockpick's own choice and are not listed.
fn programs_of(args: &RunArgs) -> Vec<StoredProgram> {
    let mut programs = Vec::new();
    if args.lock.starts_with(crate::locks::exec::PREFIX) {
        programs.push(StoredProgram {
            flag: "--lock",
            value: args.lock.clone(),
        });
    }
    for (flag, values) in [
        ("--server-bin", &args.knobs.server_bins),
        ("--image", &args.knobs.images),
    ] {
        programs.extend(values.iter().map(|value| StoredProgram {
            flag,
            value: value.clone(),
        }));
    }
    programs
}

/// The programs the person named again on the shrink's command line.
fn named_programs(args: &ShrinkArgs) -> Vec<StoredProgram> {
    let mut named: Vec<StoredProgram> = (args.lock.iter())
        .map(|lock| StoredProgram {
            flag: "--lock",
            value: lock.clone(),
        })
        .collect();
    for (flag, values) in [
        ("--server-bin", &args.server_bins),
        ("--image", &args.images),
    ] {
        named.extend(values.iter().map(|value| StoredProgram {
            flag,
            value: value.clone(),
        }));
    }
    named
}

/// Whether the shrink may start the programs `source`'s command names: each named again in
/// `args`, or `--trust-folder-programs`. Refuses (bad input, nothing started) otherwise, and a
/// named program the run did not use, since the shrink would not run it; when allowed, prints
/// the programs on standard error before anything runs.
pub fn allow(source: &Source, args: &ShrinkArgs) -> Result<()> {
    let command = source.dir.join(store::COMMAND);
    let stored = programs_of(source.run_args());
    let named = named_programs(args);
    if let Some(extra) = named.iter().find(|p| !stored.contains(p)) {
        let used: Vec<String> = stored.iter().map(StoredProgram::words).collect();
        return Err(bad(format!(
            "shrink {}: the run's command ({}) does not name it, so the shrink would not run \
             it; the run's programs are: {}",
            extra.words(),
            command.display(),
            if used.is_empty() {
                "none of its choosing".to_string()
            } else {
                used.join(" ")
            }
        )));
    }
    let unnamed: Vec<String> = (stored.iter())
        .filter(|p| !named.contains(p))
        .map(StoredProgram::words)
        .collect();
    if !unnamed.is_empty() && !args.trust_folder_programs {
        return Err(bad(format!(
            "{} would have each replay run, as root, the program{} it names: {}; a shrink runs \
             a run folder's programs only when they are named again (lockpick shrink {} {}) or \
             with --trust-folder-programs",
            command.display(),
            if unnamed.len() == 1 { "" } else { "s" },
            unnamed.join(" "),
            shell_words::quote(&args.run.display().to_string()),
            unnamed.join(" ")
        )));
    }
    if !stored.is_empty() {
        let all: Vec<String> = stored.iter().map(StoredProgram::words).collect();
        eprintln!(
            "lockpick shrink: every replay runs, as root, the programs {} names: {}",
            command.display(),
            all.join(" ")
        );
    }
    Ok(())
}

/// The `lockpick shrink` command that shrinks the run in `dir` made with `args`, its programs
/// named again: what a finished run offers, and what shrink then accepts.
pub fn shrink_command(dir: &std::path::Path, args: &RunArgs) -> String {
    let mut words = vec![
        "lockpick".to_string(),
        "shrink".to_string(),
        dir.display().to_string(),
    ];
    for program in programs_of(args) {
        words.extend([program.flag.to_string(), program.value]);
    }
    crate::text::shell::command(&words)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn run_args(line: &str) -> RunArgs {
        match Cli::try_parse_from(shell_words::split(line).unwrap()) {
            Ok(Cli {
                command: Command::Run(args),
            }) => *args,
            _ => panic!("not a run: {line}"),
        }
    }

    #[test]
    fn a_runs_offered_shrink_names_its_exec_lock_and_server_programs_again() {
        let dir = std::path::Path::new("store/x/1");
        assert_eq!(
            shrink_command(dir, &run_args("lockpick run --lock redis --seed 3")),
            "lockpick shrink store/x/1"
        );
        let exec = "lockpick run --lock 'exec:redis:/bin/client --fast' --server-bin \
                    redis=/opt/redis-server --image etcd=etcd:3";
        assert_eq!(
            shrink_command(dir, &run_args(exec)),
            "lockpick shrink store/x/1 --lock 'exec:redis:/bin/client --fast' --server-bin \
             'redis=/opt/redis-server' --image 'etcd=etcd:3'"
        );
    }
}
