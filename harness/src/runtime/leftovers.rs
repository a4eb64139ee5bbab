//! What a runtime's runs leave on the machine when their controller dies before tearing down,
//! as `lockpick clean` asks each runtime of the catalogue for it. The runtime alone knows what
//! it makes (namespaces, containers, a remote cluster's objects) and how to remove it; `clean`
//! decides which run a leftover belongs to and whether that run is over.

use nix::unistd::Pid;

/// One thing a run made and left behind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    /// The prefix of the run it carries.
    pub prefix: String,
    /// The line its run wrote in its record of what it made (`namespace lkp1a2b3c-n1`) before
    /// making it: only what the record holds is the run's own, and the report names it so.
    pub record: String,
    /// The name the runtime removes it by.
    pub name: String,
    /// Processes of this machine still running in it: a child of a live controller among them
    /// means the run goes on, and removing it kills them.
    pub pids: Vec<Pid>,
}

/// What removing one run's leftovers did (or, on a dry run, would do), for the report.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Removal {
    /// Lines for standard output, in order, without the run's prefix.
    pub said: Vec<String>,
    /// What could not be removed, for standard error, without the run's prefix.
    pub failed: Vec<String>,
    /// Namespaces removed, which the report's closing line counts.
    pub namespaces: usize,
}
