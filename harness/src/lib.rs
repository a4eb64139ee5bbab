//! lockpick's harness as a library: the binary (`main.rs`) parses the command line and calls
//! in here, and the unit tests reach the scheduler, the schedule and the catalogues directly.
//!
//! Data flows one way: `cli` (flags as plain data) → `config` (validated, consulting the
//! catalogues in `locks` and `nemesis`) → `run` (preflight, setup, events, teardown) over a
//! `runtime` and a `service`, with the `scheduler` driving the nemeses through the `cluster`'s
//! verbs → the history → the checkers → one verdict → `report`, `summary`, `compare`.

pub mod bad_input;
pub mod bench;
pub mod children;
pub mod clean;
pub mod cli;
pub mod client;
pub mod clock_shift;
pub mod cluster;
pub mod compare;
pub mod config;
pub mod delay_proxy;
pub mod faketime;
pub mod files;
pub mod firewall;
pub mod freezer;
pub mod history_log;
pub mod locks;
pub mod nemesis;
pub mod protocol_check;
pub mod report;
pub mod resource;
pub mod run;
pub mod run_cgroup;
pub mod run_prefix;
pub mod runtime;
pub mod schedule;
pub mod scratch;
pub mod service;
pub mod shrink;
pub mod stable_hash;
pub mod store;
pub mod text;
