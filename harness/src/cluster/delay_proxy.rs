//! A userspace TCP proxy for delays (this kernel has no netem). It listens on loopback inside a
//! client's own namespace and connects onwards from there, so the client's traffic keeps its
//! address and still obeys that node's partitions. Bytes from the client are held for the link's
//! current delay before they are sent on; replies pass straight through.
//!
//! Each link is one OS thread that enters the namespace and runs a current-thread tokio runtime:
//! a socket belongs to the namespace of the thread that created it, and every socket of the link
//! is created on that thread. A connection is one task; nothing polls.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use anyhow::{Context, Result};
use nix::sched::{setns, CloneFlags};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc as channel, oneshot};
use tokio::time::Instant;

/// How long a connection to the upstream may take before the client's connection is dropped.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The most bytes read from the client at once: one chunk, held and counted as a unit.
const CHUNK: usize = 16 * 1024;

/// One proxied link from a client to an upstream server. Dropping it stops the link: it stops
/// listening and closes every connection, discarding bytes still held (by then the harness has
/// stopped the processes on both ends).
pub struct DelayLink {
    /// Where the client connects (loopback in its namespace).
    pub listen: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// What the controller and the link's connections share.
#[derive(Default)]
struct Shared {
    /// The delay, in milliseconds, given to each chunk the client sends from now on.
    delay_ms: AtomicU64,
    /// Chunks held back so far: evidence that a delay took effect.
    delayed_chunks: AtomicU64,
}

impl DelayLink {
    /// Starts the proxy inside the namespace opened as `namespace`.
    pub fn start(namespace: std::fs::File, upstream: SocketAddr) -> Result<DelayLink> {
        let shared = Arc::new(Shared::default());
        let (stop, stopped) = oneshot::channel();
        let (bound, listening) = mpsc::channel();
        let link = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name("delay-proxy".to_string())
            .spawn(move || {
                let listener = setns(&namespace, CloneFlags::CLONE_NEWNET)
                    .map_err(std::io::Error::from)
                    .and_then(|_| {
                        tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                    })
                    .and_then(|runtime| {
                        let listener = runtime.block_on(TcpListener::bind(("127.0.0.1", 0)))?;
                        Ok((runtime, listener))
                    });
                match listener.and_then(|(r, l)| Ok((r, l.local_addr()?, l))) {
                    Ok((runtime, address, listener)) => {
                        let _ = bound.send(Ok(address));
                        runtime.block_on(serve(listener, upstream, link, stopped));
                    }
                    Err(e) => {
                        let _ = bound.send(Err(e.to_string()));
                    }
                }
            })
            .context("cannot start the delay proxy's thread")?;
        let listen = listening
            .recv_timeout(Duration::from_secs(5))
            .context("the delay proxy did not start")?
            .map_err(anyhow::Error::msg)
            .context("the delay proxy could not listen")?;
        Ok(DelayLink {
            listen,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Sets the delay for bytes the client sends from now on; bytes already held keep theirs.
    pub fn set_delay(&self, delay: Duration) {
        self.shared
            .delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// How many chunks from the client arrived while a delay was set, since the link started.
    pub fn delayed_chunks(&self) -> u64 {
        self.shared.delayed_chunks.load(Ordering::SeqCst)
    }
}

impl Drop for DelayLink {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Dropping the runtime at the end of the thread closes every socket of the link.
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections until told to stop; each is relayed by its own task.
async fn serve(
    listener: TcpListener,
    upstream: SocketAddr,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((client, _)) => {
                    tokio::spawn(relay(client, upstream, Arc::clone(&shared)));
                }
                // Out of descriptors, most likely: wait for some to close rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
}

/// Copies one connection both ways, holding client bytes for the delay in force when they
/// arrived. Each direction ends on its own, passing the end of stream on.
async fn relay(client: TcpStream, upstream: SocketAddr, shared: Arc<Shared>) {
    let server = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(upstream)).await {
        Ok(Ok(server)) => server,
        _ => return,
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, to_server) = server.into_split();
    // Held chunks in arrival order, each with its due time. Unbounded: the client's writes never
    // wait for the delay, only its bytes do.
    let (hold, held) = channel::unbounded_channel();
    let replies = async {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
        let _ = to_client.shutdown().await;
    };
    tokio::join!(
        replies,
        take_from_client(&mut from_client, hold, &shared),
        send_when_due(held, to_server),
    );
}

/// Reads the client's bytes chunk by chunk, stamping each with the delay in force now.
async fn take_from_client(
    from_client: &mut OwnedReadHalf,
    hold: channel::UnboundedSender<(Instant, Vec<u8>)>,
    shared: &Shared,
) {
    let mut buffer = vec![0u8; CHUNK];
    loop {
        let n = match from_client.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let delay = shared.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            shared.delayed_chunks.fetch_add(1, Ordering::SeqCst);
        }
        let due = Instant::now() + Duration::from_millis(delay);
        if hold.send((due, buffer[..n].to_vec())).is_err() {
            return; // the upstream stopped taking bytes
        }
    }
}

/// Sends held chunks upstream in arrival order, none before its due time (a chunk may wait
/// longer, behind an earlier one held for longer).
async fn send_when_due(
    mut held: channel::UnboundedReceiver<(Instant, Vec<u8>)>,
    mut to_server: OwnedWriteHalf,
) {
    while let Some((due, bytes)) = held.recv().await {
        tokio::time::sleep_until(due).await;
        if to_server.write_all(&bytes).await.is_err() {
            return;
        }
    }
    let _ = to_server.shutdown().await;
}

#[cfg(test)]
mod tests;
