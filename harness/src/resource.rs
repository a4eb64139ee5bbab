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

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

use anyhow::{Context, Result};
use lockpick_checkers::model::AccessKind;
use lockpick_checkers::{Op, OpType, Process, F};
use lockpick_workloads::resource_client::{AccessReply, AccessRequest, FinalRead, FinalState};
use lockpick_workloads::RunClock;
use serde_json::json;

use crate::cli::{Fencing, ResourceArgs};

/// The resource's state; one lock around it makes the apply order total.
struct Resource {
    fencing: Fencing,
    clock: RunClock,
    value: i64,
    highest_token: Option<u64>,
    seq: u64,
    out: io::Stdout,
}

impl Resource {
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
        let mut out = self.out.lock();
        writeln!(out, "{}", op.to_json_line())?;
        out.flush()?;
        Ok(reply)
    }
}

/// Serves until killed.
pub fn serve(args: &ResourceArgs) -> Result<()> {
    let listener = TcpListener::bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let resource = Arc::new(Mutex::new(Resource {
        fencing: args.fencing,
        clock: RunClock::from_origin(args.origin_ns),
        value: 0,
        highest_token: None,
        seq: 0,
        out: io::stdout(),
    }));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let resource = Arc::clone(&resource);
        thread::spawn(move || {
            if let Err(e) = handle(stream, &resource) {
                eprintln!("resource: connection ended: {e}");
            }
        });
    }
    Ok(())
}

fn handle(stream: TcpStream, resource: &Mutex<Resource>) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    for line in BufReader::new(stream).lines() {
        let line = line?;
        let reply = match serde_json::from_str::<AccessRequest>(&line) {
            Ok(request) => {
                let mut resource = resource.lock().expect("no access panics");
                serde_json::to_value(resource.apply(&request)?)
            }
            Err(e) => match serde_json::from_str::<FinalRead>(&line) {
                Ok(_) => {
                    let resource = resource.lock().expect("no access panics");
                    serde_json::to_value(FinalState {
                        value: resource.value,
                        applied: resource.seq,
                    })
                }
                Err(_) => serde_json::to_value(AccessReply {
                    accepted: false,
                    value: 0,
                    reason: Some(format!("bad request: {e}")),
                }),
            },
        };
        let mut text = serde_json::to_string(&reply.expect("replies serialize")).expect("json");
        text.push('\n');
        writer.write_all(text.as_bytes())?;
    }
    Ok(())
}
