//! lockpick's harness as a library: the binary (`main.rs`) parses the command line and calls
//! in here, and the unit tests reach the scheduler, the schedule and the catalogues directly.
//!
//! Data flows one way: `cli` (flags as plain data) → `config` (validated, consulting the
//! catalogues in `locks`, `service`, `nemesis` and `runtime`) → `schedule` (the seeded plan) →
//! `run` (preflight, setup, events with its scheduler, teardown) over a `runtime`'s nodes and a
//! `service`'s servers, the nemeses acting through the `cluster`'s verbs → the history
//! (`history_log`) → the checkers → one verdict → `report`, `store`, `compare`. The modules
//! below are grouped in that order.

// The command line and the configuration it becomes.
pub mod bad_input;
pub mod cli;
pub mod config;

// The catalogues: what a run can be made of, each entry self-describing.
pub mod locks;
pub mod nemesis;
pub mod runtime;
pub mod service;

// The plan, and one run of it.
pub mod run;
pub mod schedule;
pub mod stable_hash;

// What a run sets up and acts through.
pub mod clock_shift;
pub mod cluster;
pub mod processes;
pub mod resource;
pub mod run_prefix;
pub mod scratch;

// What a run leaves: its history, its stored folder, its reports.
pub mod files;
pub mod history_log;
pub mod report;
pub mod store;
pub mod text;

// The other commands.
pub mod bench;
pub mod clean;
pub mod client;
pub mod compare;
pub mod protocol_check;
pub mod reference;
pub mod shrink;
pub mod sweep;

// Faults lockpick's own tests inject (debug builds only).
pub mod test_hooks;
