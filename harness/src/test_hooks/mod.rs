//! Faults lockpick's own tests inject into a run through the environment, to prove what a run
//! does when its controller errs or panics, its resource dies, or a client crashes, hangs or
//! hears of its grant late: `LOCKPICK_INJECT` ([`controller`]) and `LOCKPICK_INJECT_CLIENT`
//! ([`client`]).
//!
//! They exist only in debug builds, the binary `cargo test` runs: a release build (what
//! `cargo install` and the GitHub Action build) has neither the code nor the variables' names,
//! so nothing in a user's environment can change a run behind its verdict's back. In a debug
//! build, a run that had one set records it in its `run-end` line, and the checkers then never
//! call it valid: a hooked run is not the run its setup describes.

#[cfg(debug_assertions)]
mod client;
#[cfg(debug_assertions)]
mod controller;

#[cfg(debug_assertions)]
pub use client::wrap_client;
#[cfg(debug_assertions)]
pub use controller::ControllerHook;

/// The hooks set in this process's environment, as `NAME=value`, for the run's record.
#[cfg(debug_assertions)]
pub fn in_effect() -> Vec<String> {
    [controller::VARIABLE, client::VARIABLE]
        .into_iter()
        .filter_map(|name| {
            let value = std::env::var(name).ok().filter(|v| !v.is_empty())?;
            Some(format!("{name}={value}"))
        })
        .collect()
}

/// A release build has no hooks.
#[cfg(not(debug_assertions))]
pub fn in_effect() -> Vec<String> {
    Vec::new()
}

/// A release build's client is the lock's client as it is.
#[cfg(not(debug_assertions))]
pub fn wrap_client(
    lock: Box<dyn lockpick_workloads::LockClient>,
    _process: u64,
    _ttl: std::time::Duration,
) -> Box<dyn lockpick_workloads::LockClient> {
    lock
}

/// A release build's controller has no fault to inject.
#[cfg(not(debug_assertions))]
pub struct ControllerHook;

#[cfg(not(debug_assertions))]
impl ControllerHook {
    pub fn from_environment() -> ControllerHook {
        ControllerHook
    }

    pub fn after_recorded(
        &mut self,
        _log: &mut crate::history_log::HistoryLog,
        _cluster: &mut crate::cluster::Cluster,
    ) -> anyhow::Result<()> {
        Ok(())
    }
}
