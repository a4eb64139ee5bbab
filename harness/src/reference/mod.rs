//! The reference tables of the book (`docs/reference/`), written from the catalogues and the
//! command line's own definition, so that what the book lists is what the binary has: every
//! lock, service, nemesis and runtime with its own words, and every command with its flags.
//! A test (in `book`) compares each generated block of the book with what these functions
//! write now, and rewrites them when asked (`LOCKPICK_WRITE_BOOK=1`).

pub mod book;

use clap::CommandFactory;

use crate::locks::{Support, LOCKS};
use crate::nemesis::window::Targets;
use crate::nemesis::{Aim, Trigger, NEMESES};
use crate::runtime::RUNTIMES;
use crate::service::SERVICES;

/// A table cell: one line, with the characters that would end a cell or a line made inert.
fn cell(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line.replace('|', "\\|")
}

fn support(support: Support) -> String {
    match support {
        Support::Yes => "yes".to_string(),
        Support::No(why) => format!("no: {}", cell(why)),
    }
}

fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!("|{}\n", " --- |".repeat(header.len())));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// Every lock of the catalogue: its name, what it is, its servers, its token, whether `--ttl`
/// changes it, and which faults aimed at a leader or a server's clock it can be put through.
pub fn locks() -> String {
    let rows = LOCKS
        .iter()
        .map(|lock| {
            let c = lock.capabilities();
            vec![
                format!("`{}`", lock.name()),
                cell(lock.about()),
                format!("`{}` × {}", lock.service_entry().name, c.servers),
                cell(c.token),
                (if lock.reads_ttl() {
                    "yes"
                } else {
                    "no: its session is the lease"
                })
                .to_string(),
                support(c.server_clock),
                support(c.leader),
            ]
        })
        .collect();
    table(
        &[
            "lock",
            "what it is",
            "servers",
            "fencing token",
            "reads the TTL",
            "server clocks move",
            "a leader to aim at",
        ],
        rows,
    )
}

/// Every `<service>` a client program can be run against (`exec:<service>:<command>`): the
/// servers lockpick starts for it, what `LOCKPICK_SERVERS` then holds and how to talk to them
/// (the service's own `connection` facts), and whether lockpick asks the server for the lease
/// the program reports. Written into `workloads/PROTOCOL.md` and the guide.
pub fn exec_services() -> String {
    let rows = LOCKS
        .iter()
        .filter(|lock| lock.lends_servers())
        .map(|lock| {
            let entry = lock.service_entry();
            vec![
                format!("`exec:{}:`", lock.name()),
                format!("`{}` × {}", entry.name, lock.capabilities().servers),
                cell(entry.connection),
            ]
        })
        .collect();
    table(
        &[
            "lock",
            "servers",
            "what LOCKPICK_SERVERS names, and how to connect",
        ],
        rows,
    )
}

/// Every service of the catalogue.
pub fn services() -> String {
    let rows = SERVICES
        .iter()
        .map(|s| {
            vec![
                format!("`{}`", s.name),
                cell(s.about),
                format!("`{}={}`", s.name, s.server_bin_example),
                support(s.server_clock),
                support(s.leader),
            ]
        })
        .collect();
    table(
        &[
            "service",
            "its servers",
            "another build (`--server-bin`)",
            "clocks move",
            "leader",
        ],
        rows,
    )
}

/// Every nemesis of the catalogue, with what it aims at.
pub fn nemeses() -> String {
    let rows = NEMESES
        .iter()
        .map(|n| {
            let aim = match n.aim() {
                Aim::Server(_) => "a random server".to_string(),
                Aim::Leader(_) => "the leader, as the servers name it".to_string(),
                Aim::Client(_) => "a random client".to_string(),
                Aim::Holder(Trigger::Read, _) => "the holder, as it reads".to_string(),
                Aim::Holder(_, _) => "the holder, as it is granted".to_string(),
                Aim::Drawn(Targets::Clients, _) => "clients it draws itself".to_string(),
                Aim::Drawn(_, _) => "servers it draws itself".to_string(),
            };
            vec![format!("`{}`", n.name()), cell(n.about()), aim]
        })
        .collect();
    table(&["nemesis", "what it does", "aimed at"], rows)
}

/// Every runtime of the catalogue.
pub fn runtimes() -> String {
    let rows = RUNTIMES
        .iter()
        .map(|r| vec![format!("`{}`", r.name()), cell(r.about())])
        .collect();
    table(&["runtime", "where nodes live"], rows)
}

/// Every command users type, each with its flags (the knobs of `run` and `compare` among
/// them), as `--help` defines them.
pub fn commands() -> String {
    let cli = crate::cli::Cli::command();
    let mut out = String::new();
    for command in cli.get_subcommands().filter(|c| !c.is_hide_set()) {
        out.push_str(&format!("### `lockpick {}`\n\n", command.get_name()));
        if let Some(about) = command.get_about() {
            out.push_str(&format!("{}\n\n", cell(&about.to_string())));
        }
        let rows: Vec<Vec<String>> = command
            .get_arguments()
            .filter(|a| !a.is_hide_set() && a.get_id() != "help")
            .map(|a| {
                let name = match a.get_long() {
                    Some(long) => format!("`--{long}`"),
                    None => format!("`<{}>`", a.get_id()),
                };
                let defaults: Vec<String> = (a.get_default_values().iter())
                    .map(|v| v.to_string_lossy().into_owned())
                    .collect();
                let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                vec![name, cell(&help), cell(&defaults.join(", "))]
            })
            .collect();
        if !rows.is_empty() {
            out.push_str(&table(&["flag", "what it sets", "default"], rows));
            out.push('\n');
        }
    }
    out.trim_end().to_string() + "\n"
}
