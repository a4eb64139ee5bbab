//! ZooKeeper's ephemeral-sequential lock recipe: create `lock-` under the lock's directory as an
//! ephemeral sequential node; the lowest sequence number holds the lock; every other waiter
//! watches the node just ahead of its own, so a release wakes exactly one waiter. The session
//! timeout is the lease: a frozen holder's session expires, its node vanishes, and the next
//! waiter holds the lock. The fencing token is the node's sequence number.

use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::time::timeout;
use zookeeper_client as zk;

use crate::lock_client::{Grant, LockClient, Outcome};

pub struct ZookeeperLock {
    runtime: Runtime,
    cluster: String,
    dir: String,
    session_timeout: Duration,
    timeout: Duration,
    /// The session; dropped after any error, so the next attempt starts a fresh one (whose
    /// ephemeral nodes cannot be confused with the old session's).
    client: Option<zk::Client>,
}

/// How an attempt went wrong: whether our node may still exist.
enum Failure {
    Certain(String),
    Unknown(String),
}

impl ZookeeperLock {
    /// A client of the lock `key` on the ensemble at `addresses`, with `ttl` as its session
    /// timeout and `timeout` bounding every request.
    pub fn new(
        addresses: &[String],
        key: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<ZookeeperLock, String> {
        // The session (its pings) runs on the runtime's own worker thread, so it stays alive while
        // the worker sleeps in its critical section, as a real client's session does. A
        // current-thread runtime would only run it inside `block_on`.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(ZookeeperLock {
            runtime,
            cluster: addresses.join(","),
            dir: format!("/{key}"),
            session_timeout: ttl,
            timeout,
            client: None,
        })
    }
}

fn sequence_of(name: &str) -> Option<i64> {
    name.strip_prefix("lock-")?.parse().ok()
}

async fn connect(
    cluster: &str,
    session_timeout: Duration,
    connect_timeout: Duration,
) -> Result<zk::Client, String> {
    let client = zk::Client::connector()
        .with_session_timeout(session_timeout)
        .with_connection_timeout(connect_timeout)
        .connect(cluster);
    match timeout(connect_timeout * 2, client).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(format!("cannot connect: {e}")),
        Err(_) => Err("cannot connect: timed out".to_string()),
    }
}

/// Creates our node and waits until it is the lowest. Returns the node's path and sequence.
async fn acquire(
    client: &zk::Client,
    dir: &str,
    created: &mut Option<String>,
) -> Result<(String, i64), String> {
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    match client.create(dir, &[], &persistent).await {
        Ok(_) | Err(zk::Error::NodeExists) => {}
        Err(e) => return Err(format!("create {dir}: {e}")),
    }
    let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let prefix = format!("{dir}/lock-");
    let (_, sequence) = client
        .create(&prefix, &[], &ephemeral)
        .await
        .map_err(|e| format!("create {prefix}: {e}"))?;
    let ours = sequence.into_i64();
    let path = format!("{prefix}{sequence}");
    *created = Some(path.clone());
    loop {
        let children = client
            .list_children(dir)
            .await
            .map_err(|e| format!("list {dir}: {e}"))?;
        let ahead = children
            .iter()
            .filter_map(|c| sequence_of(c).map(|s| (s, c)))
            .filter(|(s, _)| *s < ours)
            .max_by_key(|(s, _)| *s);
        let Some((_, predecessor)) = ahead else {
            return Ok((path, ours));
        };
        let watched = format!("{dir}/{predecessor}");
        let (stat, watcher) = client
            .check_and_watch_stat(&watched)
            .await
            .map_err(|e| format!("watch {watched}: {e}"))?;
        if stat.is_some() {
            watcher.changed().await;
        }
    }
}

impl LockClient for ZookeeperLock {
    fn try_acquire(&mut self, wait: Duration) -> Outcome<Grant> {
        let (cluster, dir) = (self.cluster.clone(), self.dir.clone());
        let (session_timeout, request_timeout) = (self.session_timeout, self.timeout);
        let existing = self.client.take();
        let result: Result<(zk::Client, String, i64), (Option<zk::Client>, Failure)> =
            self.runtime.block_on(async move {
                let client = match existing {
                    Some(c) => c,
                    None => connect(&cluster, session_timeout, request_timeout)
                        .await
                        .map_err(|e| (None, Failure::Certain(e)))?,
                };
                let mut created = None;
                let why = match timeout(wait, acquire(&client, &dir, &mut created)).await {
                    Ok(Ok((path, sequence))) => return Ok((client, path, sequence)),
                    Ok(Err(e)) => e,
                    Err(_) => format!("not the lowest within {wait:?}"),
                };
                let Some(path) = created else {
                    // Our create may have been cut off in flight: drop the session, which takes
                    // any node it made with it.
                    return Err((None, Failure::Unknown(why)));
                };
                // Withdraw from the queue; only a confirmed delete makes this certain.
                match timeout(request_timeout, client.delete(&path, None)).await {
                    Ok(Ok(())) => Err((Some(client), Failure::Certain(why))),
                    _ => Err((None, Failure::Unknown(why))),
                }
            });
        match result {
            Ok((client, path, sequence)) => {
                self.client = Some(client);
                Outcome::Ok(Grant {
                    token: Some(sequence as u64),
                    handle: path,
                    granted_by: Vec::new(),
                })
            }
            Err((client, Failure::Certain(e))) => {
                self.client = client;
                Outcome::Fail(e)
            }
            Err((_, Failure::Unknown(e))) => Outcome::Info(e),
        }
    }

    fn release(&mut self, grant: &Grant) -> Outcome<()> {
        let Some(client) = self.client.take() else {
            return Outcome::Fail("the session that held the lock is gone".to_string());
        };
        let request_timeout = self.timeout;
        let delete = async { timeout(request_timeout, client.delete(&grant.handle, None)).await };
        let deleted = self.runtime.block_on(delete);
        match deleted {
            Ok(Ok(())) => {
                self.client = Some(client);
                Outcome::Ok(())
            }
            Ok(Err(zk::Error::NoNode)) => {
                Outcome::Fail("our node was gone: the session had expired".to_string())
            }
            Ok(Err(zk::Error::SessionExpired)) => {
                Outcome::Fail("the session had expired, and our node with it".to_string())
            }
            Ok(Err(e)) => Outcome::Info(e.to_string()),
            Err(_) => Outcome::Info(format!("no answer within {:?}", self.timeout)),
        }
    }
}
