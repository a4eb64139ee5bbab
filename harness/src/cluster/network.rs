//! The cluster's network verbs: partition/repair (nft sets, counted per blocked address so
//! overlapping partitions compose), lose/stop_loss, and delay/undelay through the proxies on a
//! client's links.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, TcpStream};
use std::time::Duration;

use anyhow::Result;

use super::Cluster;
use crate::cluster::delay_proxy::DelayLink;
use crate::runtime::firewall::Direction;

/// One address in one of a node's firewall sets.
type Blocked = (String, Direction, Ipv4Addr);

/// How many active partitions need each blocked address, per node and direction.
#[derive(Default)]
pub struct NetworkState {
    blocked: BTreeMap<Blocked, usize>,
}

/// Which of a client's links a delay holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Its link to the resource.
    Resource,
    /// Its links to the resource and to every server.
    All,
}

impl Cluster {
    /// Puts delay proxies on the client nodes' links: to the resource, and to every server
    /// when `servers`. Clients started afterwards connect through them.
    pub fn install_delay_links(&mut self, clients: &[String], servers: bool) -> Result<()> {
        for slot in clients {
            let node = self.node(slot)?.clone();
            let link = DelayLink::start(
                self.runtime.network_namespace(&node)?,
                self.client_command.resource,
            )?;
            self.resource_links.insert(slot.clone(), link);
            if servers {
                let mut links = BTreeMap::new();
                for (server, endpoint) in &self.endpoints {
                    let namespace = self.runtime.network_namespace(&node)?;
                    links.insert(server.clone(), DelayLink::start(namespace, *endpoint)?);
                }
                self.server_links.insert(slot.clone(), links);
            }
        }
        Ok(())
    }

    /// The server a client reached at `address` (`ip:port`), as a grant's `nodes` name it:
    /// a server's own address, or a delay proxy in front of it.
    pub fn server_at(&self, address: &str) -> Option<String> {
        let direct = self
            .endpoints
            .iter()
            .find(|(_, a)| a.to_string() == address);
        let proxied = self
            .server_links
            .values()
            .flat_map(|links| links.iter())
            .find(|(_, link)| link.listen.to_string() == address);
        direct
            .map(|(name, _)| name.clone())
            .or_else(|| proxied.map(|(name, _)| name.clone()))
    }

    /// Stops `to` hearing from `from` (and, unless `one_way`, every other way between the two)
    /// for each pair. Partitions may overlap: each blocked address is counted, and only the
    /// last fault that needs it lifts it.
    pub fn partition(&mut self, cuts: &[(String, String)], one_way: bool) -> Result<()> {
        let mut added: BTreeMap<String, Vec<(Direction, Ipv4Addr)>> = BTreeMap::new();
        for entry in self.entries(cuts, one_way)? {
            let count = self.network.blocked.entry(entry.clone()).or_insert(0);
            *count += 1;
            if *count == 1 {
                added.entry(entry.0).or_default().push((entry.1, entry.2));
            }
        }
        for (name, entries) in added {
            self.runtime.block(self.node(&name)?, &entries)?;
        }
        Ok(())
    }

    /// Undoes one `partition` with the same arguments.
    pub fn repair(&mut self, cuts: &[(String, String)], one_way: bool) -> Result<()> {
        let mut deleted: BTreeMap<String, Vec<(Direction, Ipv4Addr)>> = BTreeMap::new();
        for entry in self.entries(cuts, one_way)? {
            if let Some(count) = self.network.blocked.get_mut(&entry) {
                *count -= 1;
                if *count == 0 {
                    self.network.blocked.remove(&entry);
                    deleted.entry(entry.0).or_default().push((entry.1, entry.2));
                }
            }
        }
        for (name, entries) in deleted {
            self.runtime.unblock(self.node(&name)?, &entries)?;
        }
        Ok(())
    }

    fn entries(&self, cuts: &[(String, String)], one_way: bool) -> Result<Vec<Blocked>> {
        let mut entries = Vec::new();
        for (from, to) in cuts {
            let (from_ip, to_ip) = (self.node(from)?.ip, self.node(to)?.ip);
            entries.push((to.clone(), Direction::In, from_ip));
            if !one_way {
                entries.push((to.clone(), Direction::Out, from_ip));
                entries.push((from.clone(), Direction::In, to_ip));
                entries.push((from.clone(), Direction::Out, to_ip));
            }
        }
        Ok(entries)
    }

    /// Drops `percent` of a node's packets, both ways.
    pub fn lose(&mut self, name: &str, percent: u8) -> Result<()> {
        self.runtime.lose(self.node(name)?, percent)
    }

    pub fn stop_loss(&mut self, name: &str) -> Result<()> {
        self.runtime.stop_loss(self.node(name)?)
    }

    /// Packets the firewall of these nodes has dropped so far.
    pub fn dropped_packets(&self, names: &[String]) -> u64 {
        names
            .iter()
            .filter_map(|name| self.nodes.get(name))
            .map(|node| self.runtime.dropped_packets(node).unwrap_or(0))
            .sum()
    }

    /// Whether `from` really cannot reach the server `to` now (a connection attempt fails). Only
    /// a server listens, so the probe goes towards whichever side is one.
    pub fn cannot_reach(&self, from: &str, to: &str) -> Option<bool> {
        let (source, server) = if self.endpoints.contains_key(to) {
            (from, to)
        } else if self.endpoints.contains_key(from) {
            (to, from)
        } else {
            return None;
        };
        let address = self.endpoints[server];
        let node = self.nodes.get(source)?;
        let reached = self.runtime.probe(
            node,
            Box::new(move || {
                TcpStream::connect_timeout(&address, Duration::from_millis(300))?;
                Ok(())
            }),
        );
        Some(reached.is_err())
    }

    fn links(&self, slot: &str, links: Links) -> Vec<&DelayLink> {
        let servers = match links {
            Links::All => self.server_links.get(slot),
            Links::Resource => None,
        };
        servers
            .into_iter()
            .flat_map(|l| l.values())
            .chain(self.resource_links.get(slot))
            .collect()
    }

    /// Holds what client node `slot` sends on `links` for `delay`. Returns how many links.
    pub fn delay(&mut self, slot: &str, links: Links, delay: Duration) -> usize {
        let links = self.links(slot, links);
        for link in &links {
            link.set_delay(delay);
        }
        links.len()
    }

    pub fn undelay(&mut self, slot: &str, links: Links) {
        self.delay(slot, links, Duration::ZERO);
    }

    /// How many chunks the proxies on `links` of `slot` have held so far.
    pub fn delayed_chunks(&self, slot: &str, links: Links) -> u64 {
        self.links(slot, links)
            .iter()
            .map(|l| l.delayed_chunks())
            .sum()
    }
}
