//! lockpick's integration tests, one binary: each module runs the real `lockpick` binary (as
//! root, against real servers, namespaces, signals and containers) for one part of it. One
//! binary links once, and `cargo test` runs every test of it at once (`RUST_TEST_THREADS` in
//! `.cargo/config.toml`): most of their time is spent waiting on servers and timers.

mod common;

mod bad_input;
mod bench;
mod causes;
mod ci_examples;
mod ci_sharded;
mod ci_templates;
mod client_clocks;
mod clock_shift;
mod clock_shift_servers;
mod compare_check;
mod compare_grid_layout;
mod compare_outputs;
mod composed_faults;
mod docker_runtime;
mod escaped_processes;
mod every_lock;
mod exec_clients;
mod exec_compare;
mod exec_granting_servers;
mod exec_libraries;
mod exec_names;
mod failover_causes;
mod gate;
mod hostile_inputs;
mod hostile_summaries;
mod leader_faults;
mod lease_claims;
mod leases;
mod lifecycle;
mod liveness;
mod lockpick_image;
mod mariadb;
mod nats;
mod nemeses;
mod parallel_identity;
mod postgres;
mod protocol_check;
mod protocol_check_flooding;
mod redis_lock;
mod reliability;
mod renewal_order;
mod repeats;
mod report_dom;
mod reports;
mod restarts;
mod sentinel;
mod server_clocks;
mod server_versions;
mod service_seams;
mod shard_args;
mod shard_merge;
mod shrink;
mod shrink_compare;
mod soak;
mod stopping;
mod sweeps;
mod until_decided;
mod verdicts;
