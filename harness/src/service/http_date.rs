//! A server's clock read from the `Date` header of its own HTTP endpoint: etcd's (Go's
//! net/http stamps it with time.Now()) and ZooKeeper's AdminServer (Jetty, with
//! System.currentTimeMillis()). The header has whole seconds, so one reading is good to half a
//! second: it is taken as the middle of the second it names. The same plain `GET` reads a
//! monitoring endpoint's body (NATS's `/jsz`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::runtime::{Node, Runtime};

/// How far one reading may be from the server's clock (ms): half of the header's second.
pub const RESOLUTION_MS: i64 = 1000;

/// How far the clock of the server answering HTTP at `address` (inside `node`) is from ours
/// (ms), from the `Date` header of its answer to `GET path`; `None` if it does not answer.
pub fn clock_offset_ms(
    runtime: &dyn Runtime,
    node: &Node,
    address: SocketAddr,
    path: &'static str,
) -> Option<i64> {
    let (sender, answer) = std::sync::mpsc::channel();
    runtime
        .probe(
            node,
            Box::new(move || {
                let _ = sender.send(offset_at(address, path)?);
                Ok(())
            }),
        )
        .ok()?;
    answer.try_recv().ok()
}

/// How far the clock of the server answering HTTP at `address` (reachable from here) is from
/// ours (ms), from the `Date` header of its answer to `GET path`.
pub fn offset_at(address: SocketAddr, path: &str) -> anyhow::Result<i64> {
    let reply = get(address, path)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?;
    let stamped = date_of(&reply)
        .ok_or_else(|| anyhow::anyhow!("{address}{path} answered with no Date header"))?;
    Ok(stamped * 1000 + RESOLUTION_MS / 2 - now.as_millis() as i64)
}

/// Ready: `GET path` is answered with a `Date` header.
pub fn dated(address: SocketAddr, path: &str) -> anyhow::Result<()> {
    match date_of(&get(address, path)?) {
        Some(_) => Ok(()),
        None => anyhow::bail!("{address}{path} answered with no Date header"),
    }
}

fn get(address: SocketAddr, path: &str) -> anyhow::Result<String> {
    // The headers are all we need; the body may be cut short.
    request(address, path, 16 * 1024)
}

/// The body of a `200` answer to `GET path` from the server at `address` (a monitoring
/// endpoint's JSON, say), read up to 256 KiB.
pub fn body(address: SocketAddr, path: &str) -> anyhow::Result<String> {
    let reply = request(address, path, 256 * 1024)?;
    match reply.split_once("\r\n\r\n") {
        Some((head, body))
            if head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200") =>
        {
            Ok(body.to_string())
        }
        _ => anyhow::bail!("{address}{path} did not answer 200"),
    }
}

/// An HTTP/1.0 `GET path`, its answer read up to `limit` bytes (or until the server's half
/// second is up).
fn request(address: SocketAddr, path: &str, limit: u64) -> anyhow::Result<String> {
    let timeout = Duration::from_millis(500);
    let mut stream = TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes())?;
    let mut reply = Vec::new();
    let _ = stream.take(limit).read_to_end(&mut reply);
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

/// The `Date` header of an HTTP answer, in seconds since the epoch.
fn date_of(reply: &str) -> Option<i64> {
    let headers = reply.split("\r\n\r\n").next()?;
    let date = headers.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim().eq_ignore_ascii_case("date").then_some(value)
    })?;
    Some(
        chrono::DateTime::parse_from_rfc2822(date.trim())
            .ok()?
            .timestamp(),
    )
}

#[cfg(test)]
mod tests {
    use super::date_of;

    #[test]
    fn the_date_header_is_read_in_seconds() {
        let reply = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ndate: Wed, 02 Dec 2026 \
                     13:49:59 GMT\r\n\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT";
        assert_eq!(date_of(reply), Some(1_796_219_399));
        assert_eq!(date_of("HTTP/1.1 200 OK\r\n\r\n"), None);
        assert_eq!(date_of("HTTP/1.1 200 OK\r\nDate: soon\r\n\r\n"), None);
    }
}
