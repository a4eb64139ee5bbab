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
}

impl ResourceClient {
    pub fn new(address: SocketAddr, timeout: Duration) -> ResourceClient {
        ResourceClient {
            address,
            timeout,
            connection: None,
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
                }
                Err(e) => return Outcome::Fail(format!("cannot reach the resource: {e}")),
            }
        }
        let connection = self.connection.as_mut().expect("just set");
        let mut line = serde_json::to_string(request).expect("requests serialize");
        line.push('\n');
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
