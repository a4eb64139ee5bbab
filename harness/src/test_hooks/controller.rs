//! `LOCKPICK_INJECT`, in debug builds only (see the parent module).

use anyhow::{bail, Result};

use crate::cluster::Cluster;
use crate::history_log::HistoryLog;
use crate::processes::children::Role;

pub const VARIABLE: &str = "LOCKPICK_INJECT";

/// Faults a test can inject into the controller: `error-after:N` or `panic-after:N` (after N
/// operations are recorded), or `kill-resource-after:N` (the protected resource dies, as a
/// crashed server would).
#[derive(Clone, Copy, Debug)]
enum Injection {
    Error(u64),
    Panic(u64),
    KillResource(u64),
}

/// The controller's injected fault, if the environment names one.
pub struct ControllerHook(Option<Injection>);

impl ControllerHook {
    pub fn from_environment() -> ControllerHook {
        ControllerHook(Self::read())
    }

    fn read() -> Option<Injection> {
        let text = std::env::var(VARIABLE).ok()?;
        let (kind, count) = text.split_once(':')?;
        let count = count.parse().ok()?;
        match kind {
            "error-after" => Some(Injection::Error(count)),
            "panic-after" => Some(Injection::Panic(count)),
            "kill-resource-after" => Some(Injection::KillResource(count)),
            _ => None,
        }
    }

    /// Called after each operation is recorded: injects the fault once its count is reached.
    pub fn after_recorded(&mut self, log: &mut HistoryLog, cluster: &mut Cluster) -> Result<()> {
        match self.0 {
            Some(Injection::Error(n)) if log.len() >= n => {
                log.flush()?;
                bail!("injected error after {n} operations ({VARIABLE})")
            }
            Some(Injection::Panic(n)) if log.len() >= n => {
                log.flush()?;
                panic!("injected panic after {n} operations ({VARIABLE})")
            }
            Some(Injection::KillResource(n)) if log.len() >= n => {
                self.0 = None;
                cluster.children().kill(&Role::Resource);
            }
            _ => {}
        }
        Ok(())
    }
}
