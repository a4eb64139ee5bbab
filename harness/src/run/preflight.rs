//! The first phase: check what a run needs from the machine before anything is created, and
//! name the missing program with the package that provides it.

use anyhow::Result;

use crate::config::{bad, RunConfig};
use crate::runtime::faketime;
use crate::service::entry::ClockMover;
use crate::service::Requirement;

pub fn preflight(config: &RunConfig) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        return Err(bad(
            "lockpick run needs root: it creates network namespaces and signals the processes \
             it starts (run it with sudo)",
        ));
    }
    let needs = config.needs();
    // Servers from an image need nothing installed on the host.
    let service = config.lock.service();
    let mut requirements = match config.runtime.servers_from_host() {
        true => service.requirements(),
        false => Vec::new(),
    };
    // --server-bin's server was checked with the flag.
    if config.server_bins.contains_key(service.name()) {
        requirements.retain(|r| r.program != service.server_requirement());
    }
    if needs.firewall {
        requirements.push(Requirement {
            program: "nft",
            package: "nftables",
        });
    }
    let patched = config.lock.service_entry().clock_mover == ClockMover::Vdso;
    if needs.server_clock && patched {
        if let Some(why) = vdso_patch_refused() {
            return Err(bad(format!(
                "--nemesis: {}'s servers' clocks cannot be moved here: {why}",
                service.name()
            )));
        }
    }
    if needs.server_clock && !patched {
        requirements.push(Requirement {
            program: faketime::LIBFAKETIME,
            package: "faketime",
        });
    }
    require_programs(requirements)
}

/// Fails with the first of `ip` and `requirements` that is missing, naming its package.
pub fn require_programs(requirements: Vec<Requirement>) -> Result<()> {
    let ip = Requirement {
        program: "ip",
        package: "iproute2",
    };
    match std::iter::once(ip)
        .chain(requirements)
        .find(|r| !r.is_met())
    {
        Some(r) => Err(bad(format!(
            "{} is not installed (not found on PATH): install it with `apt-get install {}`",
            r.program, r.package
        ))),
        None => Ok(()),
    }
}

/// Why a server's vDSO cannot be patched on this machine, if it cannot.
fn vdso_patch_refused() -> Option<String> {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return Some("patching a vDSO works on x86_64 Linux only".into());
    }
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").unwrap_or_default();
    (scope.trim() == "3")
        .then(|| "kernel.yama.ptrace_scope is 3: ptrace is off until reboot".into())
}
