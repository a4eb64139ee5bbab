//! ZooKeeper's ephemeral-sequential lock recipe: create `lock-` under the lock's directory as an
//! ephemeral sequential node; the lowest sequence number holds the lock; every other waiter
//! watches the node just ahead of its own, so a release wakes exactly one waiter. The session
//! timeout is the lease: a frozen holder's session expires, its node vanishes, and the next
//! waiter holds the lock. The fencing token is the node's sequence number.

use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::time::timeout;
use zookeeper_client as zk;

use crate::clock::RunClock;
use crate::error::WorkloadError;
use crate::lease::{Lease, OnRenewal, Renewed, Watchdog};
use crate::lock_client::{Grant, LockClient, Outcome, ReleaseFail, ReleaseFailKind, Released};

/// ZooKeeper's tick here (the harness's `tickTime`): the server expires sessions in tick-sized
/// buckets, so a session may outlive its timeout by up to one tick.
pub const TICK: Duration = Duration::from_millis(500);

pub struct ZookeeperLock {
    // Field order is drop order: the watchdog blocks on the runtime, so it goes first.
    /// While held, it checks our node every third of the session timeout: each answer shows the
    /// session (the lease) alive when it was asked.
    watchdog: Option<Watchdog>,
    runtime: Runtime,
    clock: RunClock,
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
        clock: RunClock,
    ) -> Result<ZookeeperLock, WorkloadError> {
        // The session (its pings) runs on the runtime's own worker thread, so it stays alive while
        // the worker sleeps in its critical section, as a real client's session does. A
        // current-thread runtime would only run it inside `block_on`.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(WorkloadError::Runtime)?;
        Ok(ZookeeperLock {
            watchdog: None,
            runtime,
            clock,
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

/// Our node, once it is the lowest.
struct Held {
    path: String,
    sequence: i64,
    /// When the last request that the session answered was sent (run clock).
    answered_since: u64,
    /// When the last check that still saw a predecessor ahead was sent, if any did.
    granted_after: Option<u64>,
}

/// Creates our node and waits until it is the lowest.
async fn acquire(
    client: &zk::Client,
    dir: &str,
    created: &mut Option<String>,
    clock: RunClock,
) -> Result<Held, String> {
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
    let mut granted_after = None;
    loop {
        let listing = clock.now();
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
            return Ok(Held {
                path,
                sequence: ours,
                answered_since: listing,
                granted_after,
            });
        };
        granted_after = Some(listing);
        let watched = format!("{dir}/{predecessor}");
        let checking = clock.now();
        let (stat, watcher) = client
            .check_and_watch_stat(&watched)
            .await
            .map_err(|e| format!("watch {watched}: {e}"))?;
        if stat.is_some() {
            granted_after = Some(checking);
            watcher.changed().await;
        }
    }
}

impl LockClient for ZookeeperLock {
    fn try_acquire(&mut self, wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        let (cluster, dir, clock) = (self.cluster.clone(), self.dir.clone(), self.clock);
        let (session_timeout, request_timeout) = (self.session_timeout, self.timeout);
        let existing = self.client.take();
        let result: Result<(zk::Client, Held), (Option<zk::Client>, Failure)> =
            self.runtime.block_on(async move {
                let client = match existing {
                    Some(c) => c,
                    None => connect(&cluster, session_timeout, request_timeout)
                        .await
                        .map_err(|e| (None, Failure::Certain(e)))?,
                };
                let mut created = None;
                let attempt = acquire(&client, &dir, &mut created, clock);
                let why = match timeout(wait, attempt).await {
                    Ok(Ok(held)) => return Ok((client, held)),
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
            Ok((client, held)) => {
                // The session timeout the ensemble agreed to, which may differ from ours.
                let session_timeout = client.session_timeout();
                let lease = Lease {
                    live_until: held.answered_since + session_timeout.as_nanos() as u64,
                    // The library pings on its own, unseen: nobody can say when it ends.
                    expires_by: None,
                };
                let (watcher, path) = (client.clone(), held.path.clone());
                let (runtime, request_timeout) = (self.runtime.handle().clone(), self.timeout);
                self.watchdog = Some(Watchdog::start(
                    self.clock,
                    lease,
                    session_timeout / 3,
                    session_timeout / 3,
                    on_renewal,
                    move || {
                        let asked = clock.now();
                        // The timer must be made inside the runtime.
                        let check =
                            async { timeout(request_timeout, watcher.check_stat(&path)).await };
                        match runtime.block_on(check) {
                            Ok(Ok(Some(_))) => Renewed::Extended(Lease {
                                live_until: asked + session_timeout.as_nanos() as u64,
                                expires_by: None,
                            }),
                            Ok(Ok(None)) | Ok(Err(zk::Error::SessionExpired)) => Renewed::Lost,
                            // A read that failed extends nothing we could count on.
                            _ => Renewed::Unchanged,
                        }
                    },
                ));
                self.client = Some(client);
                Outcome::Ok(Grant {
                    token: Some(held.sequence as u64),
                    handle: held.path,
                    granted_by: Vec::new(),
                    lease,
                    granted_after: held.granted_after,
                    // Granted on a listing with no node of a lower sequence number left.
                    lower_tokens_gone: true,
                    server_lease: None,
                })
            }
            Err((client, Failure::Certain(e))) => {
                self.client = client;
                Outcome::Fail(e)
            }
            Err((_, Failure::Unknown(e))) => Outcome::Info(e),
        }
    }

    fn release(&mut self, grant: &Grant) -> Released {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop();
        }
        let Some(client) = self.client.take() else {
            return Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotHeld,
                "the session that held the lock is gone",
            ));
        };
        let request_timeout = self.timeout;
        let delete = async { timeout(request_timeout, client.delete(&grant.handle, None)).await };
        let deleted = self.runtime.block_on(delete);
        match deleted {
            Ok(Ok(())) => {
                self.client = Some(client);
                Outcome::Ok(())
            }
            Ok(Err(zk::Error::NoNode)) => Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotOurs,
                "our node was gone: the session had expired",
            )),
            Ok(Err(zk::Error::SessionExpired)) => Outcome::Fail(ReleaseFail::new(
                ReleaseFailKind::NotOurs,
                "the session had expired, and our node with it",
            )),
            Ok(Err(e)) => Outcome::Info(e.to_string()),
            Err(_) => Outcome::Info(format!("no answer within {:?}", self.timeout)),
        }
    }
}
