//! Partitions and packet loss with nftables, always inside the run's own namespaces: one
//! `inet lockpick` table per node, with a set of addresses the node no longer hears from and a
//! set it no longer sends to. A partition adds addresses; healing flushes the sets. The host's
//! own tables are never touched. These are how the runtimes' firewall verbs (`Runtime::block`
//! and the rest) act by default, through the node's own `nft`.

use std::io::Write;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// A node's nft, as its runtime runs it: the command, and the node's name for errors.
pub struct NodeNft<'a> {
    pub name: &'a str,
    /// `nft` with its network inside the node.
    pub nft: &'a dyn Fn() -> Result<Command>,
}

/// What a partition does to the packets it stops.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionMode {
    /// Drop the packets: the other side sees timeouts.
    Drop,
    /// Reject them (TCP reset): the other side fails at once.
    Reject,
}

/// Creates the node's table (sets empty: nothing blocked yet).
pub fn install(node: &NodeNft, mode: PartitionMode) -> Result<()> {
    let verdict = |set: &str, field: &str| match mode {
        PartitionMode::Drop => format!("ip {field} @{set} counter drop"),
        PartitionMode::Reject => format!(
            "meta l4proto tcp ip {field} @{set} counter reject with tcp reset\n    \
             ip {field} @{set} counter drop"
        ),
    };
    nft(
        node,
        &format!(
            "table inet lockpick {{\n  set blocked_in {{ type ipv4_addr; }}\n  \
             set blocked_out {{ type ipv4_addr; }}\n  chain loss {{\n  }}\n  \
             chain input {{\n    type filter hook input priority 0; policy accept;\n    {}\n    \
             jump loss\n  }}\n  chain output {{\n    type filter hook output priority 0; policy accept;\n    {}\n    \
             jump loss\n  }}\n}}\n",
            verdict("blocked_in", "saddr"),
            verdict("blocked_out", "daddr")
        ),
    )
}

/// Which of a node's two sets an address goes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    /// The node no longer hears from it.
    In,
    /// The node no longer sends to it.
    Out,
}

impl Direction {
    fn set(self) -> &'static str {
        match self {
            Direction::In => "blocked_in",
            Direction::Out => "blocked_out",
        }
    }
}

/// Adds (`add`) or deletes (`delete`) addresses in the node's sets.
pub fn change(node: &NodeNft, verb: &str, entries: &[(Direction, Ipv4Addr)]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let script: String = entries
        .iter()
        .map(|(direction, address)| {
            format!(
                "{verb} element inet lockpick {} {{ {address} }}\n",
                direction.set()
            )
        })
        .collect();
    nft(node, &script)
}

/// Ends the node's packet loss.
pub fn stop_loss(node: &NodeNft) -> Result<()> {
    nft(node, "flush chain inet lockpick loss\n")
}

/// Drops `percent` of the node's packets, both ways.
pub fn lose(node: &NodeNft, percent: u8) -> Result<()> {
    nft(
        node,
        &format!("add rule inet lockpick loss numgen random mod 100 < {percent} counter drop\n"),
    )
}

/// Packets the node's rules have dropped or rejected since the table was made.
pub fn dropped(node: &NodeNft) -> Result<u64> {
    let output = (node.nft)()?
        .args(["list", "table", "inet", "lockpick"])
        .stdin(Stdio::null())
        .output()
        .context("cannot run nft")?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut words = text.split_whitespace();
    let mut packets = 0;
    while let Some(word) = words.next() {
        if word == "packets" {
            packets += words
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Ok(packets)
}

/// Runs an nft script inside the node (nft 1.0.6 wants multi-line scripts on standard input).
fn nft(node: &NodeNft, script: &str) -> Result<()> {
    let mut child = (node.nft)()?
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run nft (Debian package nftables)")?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(script.as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "nft in {} failed: {}\nscript:\n{script}",
            node.name,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}
