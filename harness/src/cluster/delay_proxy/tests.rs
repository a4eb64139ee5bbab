//! The link on loopback: in the test's own namespace (entering it again is allowed to root), and
//! once inside a namespace made for the test alone, so nothing named is left behind.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use super::DelayLink;

/// Long enough for any read in these tests on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(10);
const GREETING: &[u8] = b"hi\n";

/// A server that greets each connection, then echoes; it reports every chunk it receives.
struct Upstream {
    address: SocketAddr,
    received: Receiver<(Instant, Vec<u8>)>,
}

impl Upstream {
    /// Listens in the calling thread's namespace.
    fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address");
        let (report, received) = mpsc::channel();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let report = report.clone();
                thread::spawn(move || {
                    stream.write_all(GREETING)?;
                    let mut buffer = [0u8; 1024];
                    loop {
                        let n = stream.read(&mut buffer)?;
                        if n == 0 {
                            return Ok::<_, std::io::Error>(());
                        }
                        let _ = report.send((Instant::now(), buffer[..n].to_vec()));
                        stream.write_all(&buffer[..n])?;
                    }
                });
            }
        });
        Upstream { address, received }
    }

    /// The next `len` bytes it received, and when the first of them arrived.
    fn receive(&self, len: usize) -> (Instant, Vec<u8>) {
        let (first, mut bytes) = self
            .received
            .recv_timeout(PATIENCE)
            .expect("upstream got bytes");
        while bytes.len() < len {
            let (_, more) = self.received.recv_timeout(PATIENCE).expect("the rest");
            bytes.extend(more);
        }
        (first, bytes)
    }
}

fn this_namespace() -> File {
    File::open("/proc/thread-self/ns/net").expect("the thread's namespace")
}

/// Connects through the link and reads the upstream's greeting.
fn connect(link: &DelayLink) -> TcpStream {
    let mut stream = TcpStream::connect(link.listen).expect("connect to the link");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    assert_eq!(read_exactly(&mut stream, GREETING.len()), GREETING);
    stream
}

fn read_exactly(stream: &mut TcpStream, len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    stream
        .read_exact(&mut bytes)
        .expect("read through the link");
    bytes
}

fn wait_for_delayed_chunks(link: &DelayLink, count: u64) {
    let deadline = Instant::now() + PATIENCE;
    while link.delayed_chunks() < count {
        assert!(Instant::now() < deadline, "no chunk was held");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn without_a_delay_bytes_pass_straight_through_and_none_are_counted() {
    let upstream = Upstream::start();
    let link = DelayLink::start(this_namespace(), upstream.address).expect("link");
    let mut client = connect(&link);
    client.write_all(b"ping").expect("write");
    assert_eq!(read_exactly(&mut client, 4), b"ping");
    assert_eq!(upstream.receive(4).1, b"ping");
    assert_eq!(link.delayed_chunks(), 0);
}

#[test]
fn a_delay_holds_client_bytes_for_the_delay_then_sends_them() {
    let delay = Duration::from_millis(300);
    let upstream = Upstream::start();
    let link = DelayLink::start(this_namespace(), upstream.address).expect("link");
    let mut client = connect(&link);
    link.set_delay(delay);
    let sent = Instant::now();
    client.write_all(b"ping").expect("write");
    let (arrived, bytes) = upstream.receive(4);
    assert_eq!(bytes, b"ping");
    let held = arrived - sent;
    assert!(held >= delay, "held only {held:?}");
    assert!(held < delay + PATIENCE, "held {held:?}");
    assert_eq!(read_exactly(&mut client, 4), b"ping");
    assert_eq!(link.delayed_chunks(), 1);
}

#[test]
fn lifting_the_delay_keeps_held_bytes_held_and_in_order() {
    let delay = Duration::from_millis(400);
    let upstream = Upstream::start();
    let link = DelayLink::start(this_namespace(), upstream.address).expect("link");
    let mut client = connect(&link);
    link.set_delay(delay);
    let sent = Instant::now();
    client.write_all(b"a").expect("write");
    wait_for_delayed_chunks(&link, 1);
    link.set_delay(Duration::ZERO);
    client.write_all(b"b").expect("write");
    let (arrived, bytes) = upstream.receive(2);
    assert_eq!(
        bytes, b"ab",
        "the undelayed byte waited behind the held one"
    );
    assert!(
        arrived - sent >= delay,
        "released after {:?}",
        arrived - sent
    );
    // Only the chunk that came in under the delay counts.
    assert_eq!(link.delayed_chunks(), 1);
}

#[test]
fn replies_pass_while_the_clients_bytes_are_held() {
    let upstream = Upstream::start();
    let link = DelayLink::start(this_namespace(), upstream.address).expect("link");
    link.set_delay(Duration::from_secs(3));
    let mut client = TcpStream::connect(link.listen).expect("connect");
    client.set_read_timeout(Some(PATIENCE)).expect("timeout");
    client.write_all(b"held").expect("write");
    wait_for_delayed_chunks(&link, 1);
    assert_eq!(read_exactly(&mut client, GREETING.len()), GREETING);
    assert!(
        upstream.received.try_recv().is_err(),
        "the held bytes went out before the reply came back"
    );
}

#[test]
fn dropping_the_link_closes_its_connections() {
    let upstream = Upstream::start();
    let link = DelayLink::start(this_namespace(), upstream.address).expect("link");
    let mut client = connect(&link);
    drop(link);
    let mut buffer = [0u8; 16];
    match client.read(&mut buffer) {
        Ok(0) => {}
        Err(e) if !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("the connection outlived the link: {other:?}"),
    }
}

#[test]
fn the_link_listens_and_connects_inside_the_namespace_it_is_given() {
    // A namespace of a thread's own: it has no name and goes away with its last user. The link
    // is started from this thread, outside it, so only entering the namespace puts it there.
    let (opened, namespace) = mpsc::channel();
    let (started, listen) = mpsc::channel::<SocketAddr>();
    let inside = thread::spawn(move || {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).expect("a new namespace");
        let up = std::process::Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .expect("run ip");
        assert!(up.success(), "ip link set lo up: {up}");
        // The upstream is reachable only from inside: the link must connect from there.
        let upstream = Upstream::start();
        opened
            .send((this_namespace(), upstream.address))
            .expect("send");
        let listen = listen.recv_timeout(PATIENCE).expect("the link started");
        let mut client = TcpStream::connect(listen).expect("connect from inside");
        client.set_read_timeout(Some(PATIENCE)).expect("timeout");
        assert_eq!(read_exactly(&mut client, GREETING.len()), GREETING);
        client.write_all(b"inside").expect("write");
        assert_eq!(read_exactly(&mut client, 6), b"inside");
    });
    let (file, upstream) = namespace.recv_timeout(PATIENCE).expect("the namespace");
    let link = DelayLink::start(file, upstream).expect("link");
    started.send(link.listen).expect("send");
    inside.join().expect("the test inside the namespace passed");
}
