//! What the harness asks a Sentinel-watched Redis: whether a server replicates yet, what a
//! Sentinel knows of the primary, and which primary the Sentinels name (the service's leader).

use anyhow::{bail, Result};
use lockpick_workloads::redis_sentinel_lock::{ask_sentinel, MASTER_NAME, SENTINEL_PORT};

use super::redis_sentinel::QUERY_TIMEOUT;
use crate::runtime::{Node, Runtime};

/// What one Sentinel knows: the primary (`ip:port`) and how many other Sentinels and replicas
/// it has found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentinelView {
    pub primary: String,
    pub sentinels: usize,
    pub replicas: usize,
}

fn connect(address: &str) -> Result<redis::Connection> {
    let client = redis::Client::open(format!("redis://{address}/"))?;
    let connection = client.get_connection_with_timeout(QUERY_TIMEOUT)?;
    connection.set_read_timeout(Some(QUERY_TIMEOUT))?;
    connection.set_write_timeout(Some(QUERY_TIMEOUT))?;
    Ok(connection)
}

/// Ready as a primary (`role:master`), or as a replica whose link to its primary is up.
pub fn replication_ready(address: &str, replica: bool) -> Result<()> {
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut connect(address)?)?;
    let ready = if replica {
        info.lines().any(|l| l.trim() == "master_link_status:up")
    } else {
        info.lines().any(|l| l.trim() == "role:master")
    };
    if !ready {
        bail!("{address} does not replicate yet");
    }
    Ok(())
}

/// `SENTINEL MASTER <name>`: its fields, by name.
fn master_fields(sentinel: &str) -> Result<Vec<(String, String)>> {
    let flat: Vec<String> = redis::cmd("SENTINEL")
        .arg("master")
        .arg(MASTER_NAME)
        .query(&mut connect(sentinel)?)?;
    Ok(flat
        .chunks(2)
        .filter_map(|pair| Some((pair.first()?.clone(), pair.get(1)?.clone())))
        .collect())
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Result<&'a str> {
    match fields.iter().find(|(k, _)| k == name) {
        Some((_, v)) => Ok(v),
        None => bail!("SENTINEL MASTER has no {name}"),
    }
}

/// What the Sentinel at `sentinel` knows of the primary.
pub fn view(sentinel: &str) -> Result<SentinelView> {
    let fields = master_fields(sentinel)?;
    Ok(SentinelView {
        primary: format!("{}:{}", field(&fields, "ip")?, field(&fields, "port")?),
        sentinels: field(&fields, "num-other-sentinels")?.parse()?,
        replicas: field(&fields, "num-slaves")?.parse()?,
    })
}

/// The primary the Sentinel at `sentinel` names (`get-master-addr-by-name`) and its config
/// epoch (`SENTINEL MASTER`'s `config-epoch`).
fn named_primary(sentinel: &str) -> Result<(String, u64)> {
    let primary = ask_sentinel(sentinel, MASTER_NAME, QUERY_TIMEOUT).map_err(anyhow::Error::msg)?;
    let epoch = field(&master_fields(sentinel)?, "config-epoch")?.parse()?;
    Ok((primary, epoch))
}

/// `named_primary` of the Sentinel on `node`, asked inside the node's network.
pub fn ask_in(runtime: &dyn Runtime, node: &Node) -> Option<(String, u64)> {
    let sentinel = format!("{}:{SENTINEL_PORT}", node.ip);
    let (sender, answer) = std::sync::mpsc::channel();
    runtime
        .probe(
            node,
            Box::new(move || {
                let _ = sender.send(named_primary(&sentinel)?);
                Ok(())
            }),
        )
        .ok()?;
    answer.try_recv().ok()
}

/// The primary named by more than half of the answers, with the highest epoch any of those
/// gave; `None` when no primary has such a majority.
pub fn majority(answers: &[(String, u64)]) -> Option<(String, u64)> {
    answers.iter().find_map(|(primary, _)| {
        let agreeing: Vec<u64> = (answers.iter())
            .filter(|(p, _)| p == primary)
            .map(|(_, epoch)| *epoch)
            .collect();
        (agreeing.len() * 2 > answers.len())
            .then(|| (primary.clone(), agreeing.into_iter().max().unwrap_or(0)))
    })
}

#[cfg(test)]
mod tests {
    use super::majority;

    #[test]
    fn the_leader_is_the_primary_most_sentinels_name() {
        let a = |epoch| ("10.0.0.2:6379".to_string(), epoch);
        let b = |epoch| ("10.0.0.3:6379".to_string(), epoch);
        assert_eq!(majority(&[a(0), b(1), b(2)]), Some(b(2)));
        assert_eq!(majority(&[a(0)]), Some(a(0)));
        // Two that disagree name no one.
        assert_eq!(majority(&[a(0), b(1)]), None);
        assert_eq!(majority(&[]), None);
    }
}
