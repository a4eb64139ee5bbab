//! The protected resource: a tiny server holding one value, which applies accesses in one serial
//! order and records each (who, which acquisition, which token, read or write, accepted or
//! rejected) as a history operation on its standard output, before answering.
//!
//! A final read (`{"final_read": true}`), which the harness makes once the clients have
//! stopped, answers the value and the number of accesses applied, unrecorded: the checkers
//! compare it with the history, so a lost record cannot go unnoticed.
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
use lockpick_workloads::resource_client::{AccessReply, AccessRequest, FinalRead, FinalState};
use lockpick_workloads::RunClock;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
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
}

impl Resource {
    fn new(fencing: Fencing, clock: RunClock, records: Box<dyn Write + Send>) -> Resource {
        Resource {
            fencing,
            clock,
            value: 0,
            highest_token: None,
            seq: 0,
            records,
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

    /// The answer to one request line (without its newline): an access is applied and recorded
    /// first; a final read is answered unrecorded; anything else is refused unapplied.
    fn answer(&mut self, line: &str) -> io::Result<String> {
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
        Ok(serde_json::to_string(&reply.expect("replies serialize")).expect("json"))
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
        let resource = Resource::new(args.fencing, clock, Box::new(io::stdout()));
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
    let (reader, mut writer) = stream.into_split();
    let mut lines = BufReader::new(reader).lines();
    while let Some(line) = lines.next_line().await? {
        let mut reply = resource.lock().expect("no access panics").answer(&line)?;
        reply.push('\n');
        writer.write_all(reply.as_bytes()).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
