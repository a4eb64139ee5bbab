//! What follows from a validated configuration: the run's name, the shape of its nodes, its
//! schedule, each fault's duration, what its nemeses need, and the knobs they read.

use std::time::Duration;

use super::{names, RunConfig};
use crate::bad_input::bad;
use crate::cli::RunArgs;
use crate::locks;
use crate::nemesis::window::Shape;
use crate::nemesis::{Needs, Nemesis};
use crate::schedule::{self, Plan, Schedule};

impl RunConfig {
    /// The nemesis part of the run's name: `none`, or the nemeses joined by `+`.
    pub fn nemesis_name(&self) -> String {
        if self.nemeses.is_empty() {
            "none".to_string()
        } else {
            names(&self.nemeses).replace(',', "+")
        }
    }

    /// The nodes a run of this lock with this many clients has (the same in every runtime).
    pub fn shape(&self) -> Shape {
        Shape::of(self.lock.capabilities().servers, self.clients as usize)
    }

    /// The schedule the run's seed draws for its nemeses.
    pub fn plan_schedule(&self) -> Schedule {
        let nemeses: Vec<(&'static dyn Nemesis, Duration)> = self
            .nemeses
            .iter()
            .map(|n| (*n, self.duration_of(*n)))
            .collect();
        Schedule::plan(&Plan {
            seed: self.seed,
            lock: self.lock.name(),
            nemeses: &nemeses,
            shape: &self.shape(),
            heal_at: self.heal_at(),
            fault_interval: self.faults.fault_interval,
        })
    }

    /// Refuses a plan that would run away (too many windows to hold) or that is known to be
    /// empty for some nemesis before the run starts: a run whose faults never happen proves
    /// nothing.
    pub(super) fn check_plan(&self, args: &RunArgs) -> anyhow::Result<()> {
        let durations: Vec<Duration> = self.nemeses.iter().map(|n| self.duration_of(*n)).collect();
        schedule::check::refuse_runaway(
            args,
            &durations,
            self.heal_at(),
            self.faults.fault_interval,
        )?;
        let schedule = self.plan_schedule();
        for n in &self.nemeses {
            if !schedule.windows.iter().any(|w| w.nemesis == n.name()) {
                return Err(bad(format!(
                    "--nemesis {} has no fault window that fits: its first fault starts after \
                     about --fault-interval ({:?}) and lasts {:?}, but faults must end by \
                     --time-limit minus --quiet ({:?}); give a longer --time-limit",
                    n.name(),
                    self.faults.fault_interval,
                    self.duration_of(*n),
                    self.heal_at()
                )));
            }
        }
        Ok(())
    }

    /// How long each fault of `nemesis` lasts: a killed server's downtime is `--restart-after`
    /// when given, any other fault `--fault-duration`, else the nemesis's own default.
    pub fn duration_of(&self, nemesis: &dyn Nemesis) -> Duration {
        if let Some(downtime) = self
            .faults
            .restart_after
            .filter(|_| nemesis.kills_servers())
        {
            downtime
        } else if self.faults.fault_duration_given {
            self.faults.fault_duration
        } else {
            nemesis.default_duration(self.ttl)
        }
    }

    /// The longest fault of the run.
    pub fn longest_fault(&self) -> Duration {
        self.nemeses
            .iter()
            .map(|n| self.duration_of(*n))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// What the run's nemeses need, together.
    pub fn needs(&self) -> Needs {
        self.nemeses
            .iter()
            .fold(Needs::default(), |needs, n| needs.union(n.needs()))
    }

    /// How far past the time limit the quiet phase may go on while a jam suspected at its end
    /// is decided: the jam bound (`--jam-bound`, else the checkers' default for the TTL).
    pub fn quiet_extension(&self) -> Duration {
        let given = self.jam_bound.map(|d| d.as_millis() as u64);
        let ms = lockpick_checkers::liveness::bound_ms(self.ttl.as_millis() as u64, given);
        Duration::from_millis(ms)
    }

    /// When faults must all be healed: the quiet period follows.
    pub fn heal_at(&self) -> Duration {
        self.time_limit - self.quiet
    }

    /// The run's name in the store: `<lock>-<nemesis>`. A long list of nemeses would not fit in
    /// a file name: it becomes their count and a short hash of the list.
    pub fn name(&self) -> String {
        let nemesis = self.nemesis_name();
        let lock = locks::store_name(self.lock);
        if nemesis.len() <= 80 {
            return format!("{lock}-{nemesis}");
        }
        let hash = crate::stable_hash::fnv1a(&nemesis);
        format!("{lock}-{}-nemeses-{:08x}", self.nemeses.len(), hash as u32)
    }
}
