//! A userspace TCP proxy for delays (this kernel has no netem). It listens on loopback inside a
//! client's own namespace and connects onwards from there, so the client's traffic keeps its
//! address and still obeys that node's partitions. Bytes from the client are held for the link's
//! current delay before they are sent on; replies pass straight through.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sched::{setns, CloneFlags};

/// One proxied link from a client to an upstream server.
pub struct DelayLink {
    /// Where the client connects (loopback in its namespace).
    pub listen: SocketAddr,
    delay_ms: Arc<AtomicU64>,
    /// Chunks held back so far: evidence that a delay took effect.
    delayed_chunks: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl DelayLink {
    /// Starts the proxy inside the namespace opened as `namespace`.
    pub fn start(namespace: std::fs::File, upstream: SocketAddr) -> Result<DelayLink> {
        let delay_ms = Arc::new(AtomicU64::new(0));
        let delayed_chunks = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (bound, listening) = mpsc::channel();
        let (d, c, s) = (
            Arc::clone(&delay_ms),
            Arc::clone(&delayed_chunks),
            Arc::clone(&stop),
        );
        thread::spawn(move || {
            // Threads this one starts inherit its namespace.
            let listener = setns(&namespace, CloneFlags::CLONE_NEWNET)
                .map_err(anyhow::Error::from)
                .and_then(|_| Ok(TcpListener::bind("127.0.0.1:0")?))
                .and_then(|l| {
                    l.set_nonblocking(true)?;
                    Ok(l)
                });
            let listener = match listener {
                Ok(l) => {
                    let _ = bound.send(l.local_addr().map_err(|e| e.to_string()));
                    l
                }
                Err(e) => {
                    let _ = bound.send(Err(e.to_string()));
                    return;
                }
            };
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let (d, c, s) = (Arc::clone(&d), Arc::clone(&c), Arc::clone(&s));
                        thread::spawn(move || {
                            let _ = relay(client, upstream, d, c, s);
                        });
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(10))
                    }
                    Err(_) => thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        let listen = listening
            .recv_timeout(Duration::from_secs(5))
            .context("the delay proxy did not start")?
            .map_err(anyhow::Error::msg)
            .context("the delay proxy could not listen")?;
        Ok(DelayLink {
            listen,
            delay_ms,
            delayed_chunks,
            stop,
        })
    }

    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    pub fn delayed_chunks(&self) -> u64 {
        self.delayed_chunks.load(Ordering::SeqCst)
    }
}

impl Drop for DelayLink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Copies one connection both ways, holding client bytes for the current delay.
fn relay(
    client: TcpStream,
    upstream: SocketAddr,
    delay_ms: Arc<AtomicU64>,
    delayed_chunks: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<()> {
    client.set_nonblocking(false)?;
    let server = TcpStream::connect_timeout(&upstream, Duration::from_secs(2))?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let poll = Some(Duration::from_millis(100));
    client.set_read_timeout(poll)?;
    server.set_read_timeout(poll)?;

    // Server to client: straight through.
    let (mut from_server, mut to_client) = (server.try_clone()?, client.try_clone()?);
    let stop_back = Arc::clone(&stop);
    thread::spawn(move || {
        let _ = pump(&mut from_server, &stop_back, |bytes| {
            to_client.write_all(bytes)
        });
        let _ = to_client.shutdown(Shutdown::Write);
    });

    // Client to server: each chunk waits for the delay in force when it arrived, in order.
    let (held, release) = mpsc::channel::<(Instant, Vec<u8>)>();
    let mut to_server = server.try_clone()?;
    let sender = thread::spawn(move || {
        for (due, bytes) in release {
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            if to_server.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = to_server.shutdown(Shutdown::Write);
    });
    let mut from_client = client;
    let result = pump(&mut from_client, &stop, |bytes| {
        let delay = delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            delayed_chunks.fetch_add(1, Ordering::SeqCst);
        }
        let due = Instant::now() + Duration::from_millis(delay);
        held.send((due, bytes.to_vec()))
            .map_err(|_| std::io::Error::from(ErrorKind::BrokenPipe))
    });
    drop(held);
    let _ = sender.join();
    result
}

/// Reads until end of stream or `stop`, handing each chunk to `forward`.
fn pump(
    from: &mut TcpStream,
    stop: &AtomicBool,
    mut forward: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut buffer = [0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match from.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => forward(&buffer[..n])?,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
