//! `exec:<service>:<command>`: the servers of a built-in lock, taken by the user's own program
//! (a thin adapter over the library their service ships) speaking `workloads/PROTOCOL.md`.
//! Everything about the servers (their count, their clocks, their leases' slack) is the
//! built-in lock's; the token is whatever the program reports.
//!
//! An exec lock may carry a short name (`--name`, or `name` in a matrix's lock entry): the whole
//! command is no name for a store folder, a grid row or an expectation, and two programs may
//! share one script. Outputs show it through [`Lock::label`]; `--lock` keeps the whole string.
//!
//! The catalogue holds `&'static dyn Lock`, so an entry is made when its name is first looked
//! up and kept for the life of the process (one per distinct name and short name).

use std::sync::Mutex;
use std::time::Duration;

use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::exec_client::ExecClient;
use lockpick_workloads::exec_clock::{self, ClockAsks};
use lockpick_workloads::exec_server_check::ServerCheck;
use lockpick_workloads::LockClient;

use super::{boxed, Capabilities, ClientClockMover, Lock, Support};
use crate::service::{LockService, ServiceEntry};

pub const PREFIX: &str = "exec:";

/// The built-in locks whose servers an exec lock can run (the `<service>` it names).
pub fn service_names() -> Vec<&'static str> {
    super::LOCKS
        .iter()
        .filter(|lock| lock.lends_servers())
        .map(|lock| lock.name())
        .collect()
}

/// The longest short name: a grid column and a folder name stay readable.
pub const MAX_SHORT_NAME: usize = 32;

/// Refuses a short name that is not one safe word: it names a store folder and a JUnit suite,
/// and comes from a matrix file or a flag (hostile input). A built-in lock's name is refused
/// too, or `locks = ["redis"]` in an expectation would mean two locks.
pub fn check_short_name(name: &str) -> Result<(), String> {
    let safe = name
        .chars()
        .enumerate()
        .all(|(i, c)| c.is_ascii_alphanumeric() || (i > 0 && matches!(c, '-' | '_' | '.')));
    if name.is_empty() || name.len() > MAX_SHORT_NAME || !safe {
        return Err(format!(
            "the short name {name:?} must be 1 to {MAX_SHORT_NAME} letters, digits, '-', '_' or \
             '.', starting with a letter or digit"
        ));
    }
    if super::LOCKS.iter().any(|l| l.name() == name) {
        return Err(format!(
            "the short name {name:?} is a built-in lock's name: choose another"
        ));
    }
    Ok(())
}

/// The built-in lock named `name` whose servers an exec lock can run.
pub fn service(name: &str) -> Option<&'static dyn Lock> {
    super::LOCKS
        .iter()
        .copied()
        .find(|lock| lock.name() == name && lock.lends_servers())
}

pub struct Exec {
    name: &'static str,
    /// The short name outputs show, when one was given.
    short_name: Option<&'static str>,
    about: &'static str,
    service: &'static dyn Lock,
    program: Vec<String>,
}

/// Every exec entry made so far, so that looking a name up twice gives the same entry.
static MADE: Mutex<Vec<&'static Exec>> = Mutex::new(Vec::new());

/// The entry for `name` (`exec:redis:python3 client.py`), made on first use.
pub fn find(name: &str) -> Result<&'static Exec, String> {
    find_named(name, None)
}

/// The entry for `name` shown as `short_name` (checked by [`check_short_name`]).
pub fn find_named(name: &str, short_name: Option<&str>) -> Result<&'static Exec, String> {
    if let Some(short) = short_name {
        check_short_name(short)?;
    }
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(entry) = made
        .iter()
        .find(|e| e.name == name && e.short_name == short_name)
    {
        return Ok(entry);
    }
    let mut entry = parse(name)?;
    entry.short_name = short_name.map(|s| &*Box::leak(s.to_string().into_boxed_str()));
    let entry: &'static Exec = Box::leak(Box::new(entry));
    made.push(entry);
    Ok(entry)
}

/// Reads `exec:<service>:<command>`, with the reason when it is not one.
fn parse(name: &str) -> Result<Exec, String> {
    let rest = name
        .strip_prefix(PREFIX)
        .ok_or_else(|| format!("an exec lock is written {PREFIX}<service>:<command>"))?;
    let (service, command) = rest.split_once(':').ok_or_else(|| {
        format!("{name} names no command: write {PREFIX}<service>:<command>, as exec:redis:python3 client.py")
    })?;
    let Some(service) = self::service(service) else {
        return Err(format!(
            "{service:?} is not a service an exec lock can use: one of {}",
            service_names().join(", ")
        ));
    };
    let program = shell_words::split(command)
        .map_err(|e| format!("the command {command:?} cannot be split into words: {e}"))?;
    if program.is_empty() {
        return Err(format!("{name} has an empty command"));
    }
    let about = format!(
        "Your program `{command}` over the servers of {}",
        service.name()
    );
    Ok(Exec {
        name: Box::leak(name.to_string().into_boxed_str()),
        short_name: None,
        about: Box::leak(about.into_boxed_str()),
        service,
        program,
    })
}

impl Lock for Exec {
    fn name(&self) -> &'static str {
        self.name
    }

    fn label(&self) -> &'static str {
        self.short_name.unwrap_or(self.name)
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn capabilities(&self) -> Capabilities {
        let servers = self.service.capabilities();
        Capabilities {
            token: "the token the client program reports",
            // Decided per grant: a program names its granting servers in the acquire's
            // `granted_by` (PROTOCOL.md), and a grant that names none is not aimed at.
            names_granting_servers: Support::Yes,
            // Its program's wall clock moves by a patched vDSO, whatever its language.
            client_clock: Support::Yes,
            ..servers
        }
    }

    fn service_entry(&self) -> &'static ServiceEntry {
        self.service.service_entry()
    }

    fn service(&self) -> Box<dyn LockService> {
        self.service.service()
    }

    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        self.service.check_ttl(ttl)
    }

    /// The user's program chooses its own lease (nothing obliges it to use LOCKPICK_TTL_MS),
    /// so no bound on how long a frozen holder's lease lives can be claimed for it: only the
    /// program's own reports end it (`expires_ms`, and for a library that renews in the
    /// background, a `renewed` line for each renewal).
    fn lease_silence(&self, _ttl: Duration) -> Option<Duration> {
        None
    }

    fn client(&self, spec: &ClientSpec) -> anyhow::Result<Box<dyn LockClient>> {
        // One redis-server holds the lock key: its PTTL is the server's word on the lease. The
        // other services' leases are not yet asked (Redlock's are five counts, etcd's and
        // ZooKeeper's live in sessions the program's library owns).
        let check = match (self.service.name(), spec.nodes.first()) {
            ("redis", Some(node)) => ServerCheck::redis(node, &spec.key, spec.op_timeout()),
            _ => None,
        };
        let client = ExecClient::new(self.program.clone(), spec).checked_by(check);
        Ok(boxed(match &spec.skew_file {
            Some(skew_file) => client.clock_asked_by(clock_asks(skew_file)),
            None => client,
        }))
    }

    fn client_clock_mover(&self) -> ClientClockMover {
        ClientClockMover::ProgramVdso
    }
}

/// Tells the harness the program's clock, in the file beside `skew_file` (replaced whole, never
/// written through a link).
fn clock_asks(skew_file: &std::path::Path) -> ClockAsks {
    let to = exec_clock::reading_file(skew_file);
    ClockAsks::new(
        skew_file.to_path_buf(),
        Box::new(move |reading| {
            let text = serde_json::to_string(reading).expect("a reading serialises");
            if let Err(e) = crate::files::safe_write::replace(&to, format!("{text}\n")) {
                eprintln!("cannot write {}: {e}", to.display());
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_gives_its_service_and_its_words() {
        let entry = find("exec:etcd:./client --flag 'two words'").unwrap();
        assert_eq!(entry.service.name(), "etcd");
        assert_eq!(entry.program, ["./client", "--flag", "two words"]);
        assert_eq!(entry.capabilities().servers, 3);
        let again = find("exec:etcd:./client --flag 'two words'").unwrap();
        assert!(std::ptr::eq(entry, again), "one entry per name");
    }

    #[test]
    fn a_store_folder_name_is_one_safe_component() {
        let entry = find("exec:redis:/usr/bin/python3 'my client.py'").unwrap();
        let name = super::super::store_name(entry);
        assert!(name.starts_with("exec_redis__usr_bin_python3"), "{name}");
        assert!(
            name.len() <= 49 && !name.contains('/') && !name.contains(' '),
            "{name}"
        );
        assert_eq!(
            super::super::store_name(&super::super::redis::Redis),
            "redis"
        );
    }

    #[test]
    fn a_short_name_names_the_store_folder_and_a_bad_one_is_refused() {
        let spec = "exec:redis:/usr/bin/python3 'my client.py'";
        let named = find_named(spec, Some("Mutex")).unwrap();
        assert_eq!((named.name(), named.label()), (spec, "Mutex"));
        assert_eq!(super::super::store_name(named), "Mutex");
        assert_eq!(
            find(spec).unwrap().label(),
            spec,
            "unnamed, the whole string"
        );
        assert!(!std::ptr::eq(named, find(spec).unwrap()));
        for bad in ["", "-x", "a/b", "a b", "..", "é", "redis", &"x".repeat(33)] {
            assert!(find_named(spec, Some(bad)).is_err(), "{bad:?} was accepted");
        }
        assert!(check_short_name(&"x".repeat(32)).is_ok());
        assert!(check_short_name("redlock-mutex_2.0").is_ok());
    }

    #[test]
    fn a_name_that_is_not_an_exec_lock_says_why() {
        assert!(find("exec:redis")
            .err()
            .unwrap()
            .contains("names no command"));
        assert!(find("exec:rslock:x")
            .err()
            .unwrap()
            .contains("one of redis"));
        assert!(find("exec:redis:'open")
            .err()
            .unwrap()
            .contains("cannot be split"));
        assert!(find("exec:redis:  ")
            .err()
            .unwrap()
            .contains("empty command"));
    }
}
