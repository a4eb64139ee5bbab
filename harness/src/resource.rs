//! The protected resource: a tiny server holding one value, which applies accesses in one serial
//! order and records each (who, which acquisition, which token, read or write, accepted or
//! rejected) as a history operation on its standard output, before answering.
//!
//! A final read (`{"final_read": true}`), which the harness makes once the clients have
//! stopped, answers the value and the number of accesses applied, unrecorded: the checkers
//! compare it with the history, so a lost record cannot go unnoticed.
//!
//! Only lockpick's own connections are served: each opens with the run's secret (see
//! `WorkerHello`), which client programs are never given. A request on any other connection (a
//! client program writing straight to the resource) is refused unapplied and recorded as
//! foreign, with where it came from, so it is never taken for an access of a client's.
//!
//! With fencing on it rejects any access whose token is lower than the highest it has seen,
//! reads included; an access without a token cannot be fenced and is accepted.
//!
//! It runs on one thread (a current-thread tokio runtime), one task per connection. An access is
//! applied and recorded under the state's lock, without awaiting anything: the record is written
//! and flushed before the task sends the answer, and no other access comes between.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use lockpick_checkers::model::AccessKind;
use lockpick_checkers::{Op, OpType, Process, F};
use lockpick_workloads::resource_client::{
    read_secret, AccessReply, AccessRequest, FinalRead, FinalState, WorkerHello,
};
use lockpick_workloads::RunClock;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::cli::{Fencing, ResourceArgs};

/// The resource's state; one lock around it makes the apply order total.
struct Resource {
    fencing: Fencing,
    clock: RunClock,
    value: i64,
    highest_token: Option<u64>,
    seq: u64,
    /// Where each applied access is recorded, one history line each (standard output).
    records: Box<dyn Write + Send>,
    /// The run's secret: a connection that does not open with it is not lockpick's.
    secret: String,
    /// Requests refused because they came from elsewhere, recorded up to [`MAX_FOREIGN`].
    foreign: u64,
}

/// At most this many foreign requests are recorded: a flood cannot fill the history.
const MAX_FOREIGN: u64 = 1000;

/// What the resource shows of a foreign request in its record.
const FOREIGN_SHOWN_BYTES: usize = 200;

impl Resource {
    fn new(
        fencing: Fencing,
        clock: RunClock,
        records: Box<dyn Write + Send>,
        secret: String,
    ) -> Resource {
        Resource {
            fencing,
            clock,
            value: 0,
            highest_token: None,
            seq: 0,
            records,
            secret,
            foreign: 0,
        }
    }

    fn apply(&mut self, request: &AccessRequest) -> io::Result<AccessReply> {
        let stale = match (self.fencing, request.token, self.highest_token) {
            (Fencing::On, Some(token), Some(highest)) if token < highest => Some(highest),
            _ => None,
        };
        if let Some(token) = request.token {
            self.highest_token = self.highest_token.max(Some(token));
        }
        let reply = match stale {
            Some(highest) => AccessReply {
                accepted: false,
                value: self.value,
                reason: Some(format!(
                    "fenced: token {} is lower than {highest}, already seen",
                    request.token.unwrap_or_default()
                )),
            },
            None => {
                if request.op == AccessKind::Write {
                    self.value = request.value;
                }
                AccessReply {
                    accepted: true,
                    value: self.value,
                    reason: None,
                }
            }
        };
        self.seq += 1;
        let mut value = json!({
            "seq": self.seq,
            "process": request.process,
            "acquisition": request.acquisition,
            "token": request.token,
            "op": request.op,
            "value": reply.value,
        });
        if let Some(reason) = &reply.reason {
            value["reason"] = json!(reason);
        }
        let kind = if reply.accepted {
            OpType::Ok
        } else {
            OpType::Fail
        };
        let op = Op::new(
            self.clock.now(),
            Process::named(Process::RESOURCE),
            kind,
            F::Access,
            value,
        );
        writeln!(self.records, "{}", op.to_json_line())?;
        self.records.flush()?;
        Ok(reply)
    }

    /// The answer to one request line (without its newline) on a connection `trusted` so far or
    /// not: the run's hello makes it trusted and is not answered; on a trusted connection an
    /// access is applied and recorded first, a final read answered unrecorded, anything else
    /// refused unapplied; on any other connection, everything is refused unapplied and
    /// recorded as foreign, named by where it came `from`, never as a client's access.
    fn answer(&mut self, line: &str, trusted: &mut bool, from: &str) -> io::Result<Option<String>> {
        if !*trusted {
            let hello = serde_json::from_str::<WorkerHello>(line);
            if hello.is_ok_and(|h| !self.secret.is_empty() && h.worker == self.secret) {
                *trusted = true;
                return Ok(None);
            }
            return self.refuse_foreign(line, from).map(Some);
        }
        let reply = match serde_json::from_str::<AccessRequest>(line) {
            Ok(request) => serde_json::to_value(self.apply(&request)?),
            Err(e) => match serde_json::from_str::<FinalRead>(line) {
                Ok(_) => serde_json::to_value(FinalState {
                    value: self.value,
                    applied: self.seq,
                }),
                Err(_) => serde_json::to_value(AccessReply {
                    accepted: false,
                    value: 0,
                    reason: Some(format!("bad request: {e}")),
                }),
            },
        };
        Ok(Some(
            serde_json::to_string(&reply.expect("replies serialize")).expect("json"),
        ))
    }

    fn refuse_foreign(&mut self, line: &str, from: &str) -> io::Result<String> {
        self.foreign += 1;
        if self.foreign <= MAX_FOREIGN {
            let mut shown = line.to_string();
            if shown.len() > FOREIGN_SHOWN_BYTES {
                let mut cut = FOREIGN_SHOWN_BYTES;
                while !shown.is_char_boundary(cut) {
                    cut -= 1;
                }
                shown.truncate(cut);
            }
            let op = Op::new(
                self.clock.now(),
                Process::named(Process::RESOURCE),
                OpType::Info,
                F::Access,
                json!({"foreign": true, "from": from, "request": shown}),
            );
            writeln!(self.records, "{}", op.to_json_line())?;
            self.records.flush()?;
        }
        let reply = AccessReply {
            accepted: false,
            value: 0,
            reason: Some("refused: this connection is not one of lockpick's workers".into()),
        };
        Ok(serde_json::to_string(&reply).expect("json"))
    }
}

/// Serves until killed.
pub fn serve(args: &ResourceArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the resource's runtime")?;
    runtime.block_on(async {
        let listener = TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let clock = RunClock::from_origin(args.origin_ns);
        let secret = read_secret(io::stdin()).context("cannot read the run's secret")?;
        let resource = Resource::new(args.fencing, clock, Box::new(io::stdout()), secret);
        serve_on(listener, resource).await;
        Ok(())
    })
}

/// Accepts connections for ever, each served by its own task.
async fn serve_on(listener: TcpListener, resource: Resource) {
    let resource = Arc::new(Mutex::new(resource));
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let resource = Arc::clone(&resource);
                tokio::spawn(async move {
                    if let Err(e) = handle(stream, &resource).await {
                        crate::tell!("resource: connection ended: {e}");
                    }
                });
            }
            // Out of descriptors, most likely: wait for some to close rather than spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Answers one connection's requests, one line each, in order.
async fn handle(stream: TcpStream, resource: &Mutex<Resource>) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let from = stream
        .peer_addr()
        .map_or_else(|_| "unknown".to_string(), |a| a.to_string());
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    let mut trusted = false;
    let mut bytes = Vec::new();
    loop {
        // A line is bounded: whoever is at the other end, it cannot make the resource hold more.
        bytes.clear();
        let read = (&mut reader)
            .take(MAX_REQUEST_BYTES + 1)
            .read_until(b'\n', &mut bytes)
            .await?;
        if read == 0 {
            return Ok(());
        }
        if bytes.last() != Some(&b'\n') && read as u64 > MAX_REQUEST_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a request longer than {MAX_REQUEST_BYTES} bytes"),
            ));
        }
        let text = String::from_utf8_lossy(&bytes);
        let line = text.trim_end_matches(['\n', '\r']);
        let reply = resource
            .lock()
            .expect("no access panics")
            .answer(line, &mut trusted, &from)?;
        if let Some(mut reply) = reply {
            reply.push('\n');
            writer.write_all(reply.as_bytes()).await?;
        }
    }
}

/// The longest request line the resource reads; its own are about 150 bytes.
const MAX_REQUEST_BYTES: u64 = 64 << 10;

#[cfg(test)]
mod tests;
