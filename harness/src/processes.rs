//! The processes a run starts: each one kept and waited for (`children`), all of them in the
//! run's own cgroup so none outlives it (`cgroup`), and stopped, continued or killed with the
//! kernel's word that it happened (`freezer`); the harness's own programs and all they start in
//! the run's PID namespace, which none can leave (`pid_namespace`); what a runtime hands back for
//! each one it starts (`node_process`).

pub mod cgroup;
pub mod children;
pub mod freezer;
pub mod node_process;
pub mod pid_namespace;
