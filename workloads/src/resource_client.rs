//! The protected resource's wire protocol (one JSON object per line each way) and the client
//! side of it that workers use inside their critical sections.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use lockpick_checkers::model::AccessKind;
use serde::{Deserialize, Serialize};

use crate::lock_client::Outcome;

/// One access, as a client sends it: who, under which acquisition and token, doing what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessRequest {
    pub process: u64,
    pub acquisition: String,
    pub token: Option<u64>,
    pub op: AccessKind,
    /// The value to write (ignored for reads).
    #[serde(default)]
    pub value: i64,
}

/// The resource's answer: the value after the access, or why it was refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessReply {
    pub accepted: bool,
    #[serde(default)]
    pub value: i64,
    #[serde(default)]
    pub reason: Option<String>,
}

/// The first line on every connection of lockpick's own (its workers and its final read): the
/// run's secret, which the resource was given on its standard input and each worker on its own.
/// Client programs are never given it, so an access from one, straight to the resource, is
/// told apart from a worker's and refused, instead of being recorded under a client's name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerHello {
    pub worker: String,
}

impl WorkerHello {
    /// The hello as a line, newline included.
    pub fn line(secret: &str) -> String {
        let hello = WorkerHello {
            worker: secret.to_string(),
        };
        serde_json::to_string(&hello).expect("a hello serializes") + "\n"
    }
}

/// Reads the run's secret, the first line of standard input (the controller writes it there
/// and closes it), bounded in length.
pub fn read_secret(input: impl std::io::Read) -> std::io::Result<String> {
    let mut line = String::new();
    BufReader::new(std::io::Read::take(input, 256)).read_line(&mut line)?;
    Ok(line.trim().to_string())
}

/// The harness's last look at the resource, after the clients have stopped. Not an access:
/// the resource does not record it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FinalRead {
    pub final_read: bool,
}

/// What the final read sees: the resource's value and how many accesses it applied in all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FinalState {
    pub value: i64,
    pub applied: u64,
}

pub struct ResourceClient {
    address: SocketAddr,
    timeout: Duration,
    connection: Option<BufReader<TcpStream>>,
    secret: String,
    /// The hello goes first on each connection, with its first request.
    connection_is_new: bool,
}

impl ResourceClient {
    pub fn new(address: SocketAddr, timeout: Duration, secret: String) -> ResourceClient {
        ResourceClient {
            address,
            timeout,
            connection: None,
            secret,
            connection_is_new: false,
        }
    }

    /// Sends one access. `Fail` when the resource refused it (or it was never sent); `Info` when
    /// the reply did not come back in time, since the resource may have applied it.
    pub fn access(&mut self, request: &AccessRequest) -> Outcome<i64> {
        if self.connection.is_none() {
            match TcpStream::connect_timeout(&self.address, self.timeout) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    if let Err(e) = stream
                        .set_read_timeout(Some(self.timeout))
                        .and(stream.set_write_timeout(Some(self.timeout)))
                    {
                        return Outcome::Fail(format!("cannot reach the resource: {e}"));
                    }
                    self.connection = Some(BufReader::new(stream));
                    self.connection_is_new = true;
                }
                Err(e) => return Outcome::Fail(format!("cannot reach the resource: {e}")),
            }
        }
        let connection = self.connection.as_mut().expect("just set");
        let mut line = serde_json::to_string(request).expect("requests serialize");
        line.push('\n');
        if self.connection_is_new {
            line.insert_str(0, &WorkerHello::line(&self.secret));
            self.connection_is_new = false;
        }
        let mut reply = String::new();
        let exchanged = connection
            .get_mut()
            .write_all(line.as_bytes())
            .and_then(|_| connection.read_line(&mut reply));
        match exchanged {
            Ok(n) if n > 0 => match serde_json::from_str::<AccessReply>(&reply) {
                Ok(r) if r.accepted => Outcome::Ok(r.value),
                Ok(r) => Outcome::Fail(r.reason.unwrap_or_else(|| "rejected".to_string())),
                Err(e) => {
                    self.connection = None;
                    Outcome::Info(format!("unreadable reply from the resource: {e}"))
                }
            },
            Ok(_) => {
                self.connection = None;
                Outcome::Info("the resource closed the connection".to_string())
            }
            Err(e) => {
                self.connection = None;
                Outcome::Info(format!("no reply from the resource: {e}"))
            }
        }
    }
}
