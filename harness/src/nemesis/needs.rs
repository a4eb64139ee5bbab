//! What a nemesis needs from a lock and from the run's setup. The configuration refuses a
//! nemesis whose needs the lock's capabilities do not meet, with the lock's own reason; the
//! setup installs what the needs ask for (firewall rules, libfaketime, delay proxies).

use crate::locks::{Capabilities, Support};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// The fewest servers the fault makes sense on, and why (`"a single server cannot be
    /// split"`).
    pub min_servers: Option<(usize, &'static str)>,
    /// It moves servers' clocks: under libfaketime, or by patching their vDSO, as the
    /// service's catalogue entry says.
    pub server_clock: bool,
    /// It aims at the servers that granted the holder's lock.
    pub granting_servers: bool,
    /// It skews a client's own clock.
    pub client_clock: bool,
    /// It cuts or drops packets: every node gets firewall rules.
    pub firewall: bool,
    /// It holds a client's traffic to the resource: a delay proxy on that link.
    pub resource_links: bool,
    /// It holds a client's traffic to the servers: a delay proxy on each of those links.
    pub server_links: bool,
    /// It aims at the server that leads the others, as the service names it when the fault
    /// opens.
    pub leader: bool,
}

impl Needs {
    /// Why a nemesis cannot do what it says to a lock with `lock`'s capabilities, or `None`.
    pub fn refusal(&self, lock: &Capabilities) -> Option<String> {
        if let Some((fewest, why)) = self.min_servers {
            if lock.servers < fewest {
                return Some(format!(
                    "it needs {fewest} servers or more ({why}), and this lock runs on {}",
                    lock.servers
                ));
            }
        }
        let unsupported = |needed: bool, support: Support| match (needed, support) {
            (true, Support::No(why)) => Some(why.to_string()),
            _ => None,
        };
        unsupported(self.server_clock, lock.server_clock)
            .or_else(|| unsupported(self.granting_servers, lock.names_granting_servers))
            .or_else(|| unsupported(self.client_clock, lock.client_clock))
            .or_else(|| unsupported(self.leader, lock.leader))
            .or_else(|| unsupported(self.server_links, lock.delayable_server_links))
    }

    /// The needs of several nemeses at once.
    pub fn union(self, other: Needs) -> Needs {
        Needs {
            min_servers: match (self.min_servers, other.min_servers) {
                (Some(a), Some(b)) => Some(if a.0 >= b.0 { a } else { b }),
                (a, b) => a.or(b),
            },
            server_clock: self.server_clock || other.server_clock,
            granting_servers: self.granting_servers || other.granting_servers,
            client_clock: self.client_clock || other.client_clock,
            firewall: self.firewall || other.firewall,
            resource_links: self.resource_links || other.resource_links,
            server_links: self.server_links || other.server_links,
            leader: self.leader || other.leader,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(servers: usize) -> Capabilities {
        Capabilities {
            servers,
            token: "none",
            server_clock: Support::No("no clock here"),
            names_granting_servers: Support::Yes,
            client_clock: Support::Yes,
            leader: Support::No("no server leads here"),
            delayable_server_links: Support::Yes,
        }
    }

    #[test]
    fn a_new_three_server_lock_is_refused_a_five_server_partition_by_its_count() {
        let ring = Needs {
            min_servers: Some((5, "each server must see a different majority")),
            firewall: true,
            ..Needs::default()
        };
        let why = ring.refusal(&lock(3)).expect("refused");
        assert!(why.contains("5 servers or more"), "{why}");
        assert!(ring.refusal(&lock(5)).is_none());
    }

    #[test]
    fn a_refusal_gives_the_lock_s_own_reason() {
        let clock = Needs {
            server_clock: true,
            ..Needs::default()
        };
        assert_eq!(clock.refusal(&lock(1)).as_deref(), Some("no clock here"));
        assert!(Needs::default().refusal(&lock(1)).is_none());
    }
}
