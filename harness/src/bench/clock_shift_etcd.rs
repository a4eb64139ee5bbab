//! What a patched vDSO costs etcd: one member (Debian's etcd-server, data in memory as a run's
//! members have it, on loopback ports of its own) taking puts through its gRPC gateway
//! (`POST /v3/kv/put`, HTTP/1.1 keep-alive, 16 connections at once), without and with its wall
//! clock shifted +30 s; the shift's evidence is the member's own `Date` header. etcd reads the
//! clock on every request (Go's time.Now, straight from the vDSO) for its request timing,
//! raft ticks and HTTP headers, so its rate shows what the replacements cost a Go server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::clock_shift_row::{evident, row, shifted, ClockShiftRow, Reaped};
use crate::scratch::SCRATCH_ROOT;
use crate::service::http_date;

/// Connections putting at once.
const CONNECTIONS: u32 = 16;

/// A free loopback port (bound and let go: nothing else here takes ports meanwhile).
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The put rate of one etcd member over `rounds` alternating rounds of `requests` puts.
pub fn measure(rounds: u32, requests: u32) -> Result<ClockShiftRow> {
    let data = tempfile::Builder::new()
        .prefix("lockpick-bench-etcd-")
        .tempdir_in(SCRATCH_ROOT)
        .with_context(|| format!("cannot create a folder in {SCRATCH_ROOT}"))?;
    let (client, peer) = (free_port()?, free_port()?);
    let client_url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let server = Reaped(
        Command::new("etcd")
            .args(["--name", "bench", "--data-dir"])
            .arg(data.path().join("member"))
            .args(["--listen-client-urls", &client_url])
            .args(["--advertise-client-urls", &client_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("bench={peer_url}")])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start etcd (Debian's etcd-server)")?,
    );
    let address: SocketAddr = ([127, 0, 0, 1], client).into();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Connection::open(address)
        .and_then(|mut c| put(&mut c, 0))
        .is_err()
    {
        if Instant::now() > deadline {
            bail!("etcd took no put at {address} within 20 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // A first round unmeasured: a member's first puts grow its log and its Go heap, which
    // would fall on the plain side alone.
    rate(address, requests)?;
    let (mut plain, mut moved, mut fast) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        plain.push(rate(address, requests)?);
        let mut process = shifted(server.0.id())?;
        fast = process.fast_paths().to_vec();
        let ahead_ms = http_date::offset_at(address, "/version")?;
        evident(ahead_ms as f64 / 1000.0, "etcd's Date header")?;
        moved.push(rate(address, requests)?);
        process.restore()?;
    }
    Ok(row(
        &format!("etcd put (gateway), {CONNECTIONS} clients"),
        "requests/s",
        plain,
        moved,
        &fast,
    ))
}

/// Puts per second: `requests` puts spread over the connections, all at once.
fn rate(address: SocketAddr, requests: u32) -> Result<f64> {
    let each = requests.div_ceil(CONNECTIONS);
    let started = Instant::now();
    let workers: Vec<_> = (0..CONNECTIONS)
        .map(|worker| {
            std::thread::spawn(move || -> Result<()> {
                let mut connection = Connection::open(address)?;
                for n in 0..each {
                    put(&mut connection, worker * each + n)?;
                }
                Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker
            .join()
            .map_err(|_| anyhow::anyhow!("a put worker panicked"))??;
    }
    Ok(f64::from(each * CONNECTIONS) / started.elapsed().as_secs_f64())
}

struct Connection {
    address: SocketAddr,
    reader: BufReader<TcpStream>,
}

impl Connection {
    fn open(address: SocketAddr) -> Result<Connection> {
        let stream = TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_nodelay(true)?;
        Ok(Connection {
            address,
            reader: BufReader::new(stream),
        })
    }
}

/// One put of key `bench/<n>` (base64 in the gateway's JSON), its answer read whole.
fn put(connection: &mut Connection, n: u32) -> Result<()> {
    use lockpick_workloads::etcd_gateway::encode;
    let body = format!(
        r#"{{"key":"{}","value":"{}"}}"#,
        encode(&format!("bench/{n}")),
        encode("a value of some thirty-two bytes")
    );
    let request = format!(
        "POST /v3/kv/put HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        connection.address,
        body.len()
    );
    connection.reader.get_mut().write_all(request.as_bytes())?;
    let mut status = String::new();
    connection.reader.read_line(&mut status)?;
    if !status.starts_with("HTTP/1.1 200") {
        bail!("etcd answered a put with {status:?}");
    }
    let mut length = None;
    loop {
        let mut line = String::new();
        if connection.reader.read_line(&mut line)? == 0 {
            bail!("etcd closed the connection mid-answer");
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let length = length.context("etcd answered a put with no Content-Length")?;
    let mut answer = vec![0; length];
    connection.reader.read_exact(&mut answer)?;
    Ok(())
}
