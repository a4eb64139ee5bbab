//! The catalogue of lock services: one self-describing entry per service (the servers a lock
//! runs on), consulted by `--image`, `--server-bin`, the exec locks and the clock nemeses. A
//! lock names its service's entry; nothing else matches on a service's name.
//!
//! Adding a service: its file in `service/` with its [`ServiceEntry`] and its [`LockService`],
//! one line in [`SERVICES`], its packages in `.ci/install-packages`' gate list, and its image
//! folder in `docker/` (which `docker/build-images` builds by default); the tests below check
//! the last two against the catalogue.
//!
//! [`LockService`]: super::LockService

use super::entry::ServiceEntry;

/// Every service lockpick runs, in the order error messages list them.
pub static SERVICES: &[&ServiceEntry] = &[
    &super::redis::SERVICE,
    &super::redis_sentinel::SERVICE,
    &super::etcd::SERVICE,
    &super::zookeeper::SERVICE,
    &super::postgres::SERVICE,
    &super::mariadb::SERVICE,
    &super::nats::SERVICE,
];

pub fn find(name: &str) -> Option<&'static ServiceEntry> {
    SERVICES.iter().copied().find(|s| s.name == name)
}

pub fn names() -> Vec<&'static str> {
    SERVICES.iter().map(|s| s.name).collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn every_lock_runs_on_a_service_of_the_catalogue() {
        for lock in crate::locks::LOCKS {
            let service = lock.service();
            let entry = find(service.name()).unwrap_or_else(|| panic!("{}", lock.name()));
            assert!(std::ptr::eq(entry, lock.service_entry()), "{}", lock.name());
            assert_eq!(
                lock.capabilities().server_clock,
                entry.server_clock,
                "{}",
                lock.name()
            );
        }
    }

    /// `.ci/install-packages gate` (what CI, the lockpick image and a team's CI job install)
    /// installs every package a service requires: a service added without its packages there
    /// would pass here and fail on a fresh machine.
    #[test]
    fn the_gates_packages_hold_every_package_a_service_requires() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/install-packages");
        let script = std::fs::read_to_string(script).unwrap();
        let gate: Vec<&str> = script
            .split_once("\ngate=(\n")
            .and_then(|(_, rest)| rest.split_once("\n)"))
            .expect("the script lists the gate's packages as gate=( ... )")
            .0
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .collect();
        for lock in crate::locks::LOCKS {
            for required in lock.service().requirements() {
                assert!(
                    gate.contains(&required.package),
                    "{} needs {} ({}), which .ci/install-packages gate does not install: {gate:?}",
                    lock.name(),
                    required.package,
                    required.program
                );
            }
        }
    }

    #[test]
    fn every_service_has_an_image_folder_that_build_images_builds() {
        let docker = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docker");
        for service in SERVICES {
            let dockerfile = docker.join(service.name).join("Dockerfile");
            assert!(dockerfile.is_file(), "{}", dockerfile.display());
        }
    }
}
