//! The resource's state on its own (the fence), and served on loopback to real clients (the
//! records: one per access, in apply order, each written before its answer).

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use lockpick_checkers::model::AccessKind;
use lockpick_workloads::lock_client::Outcome;
use lockpick_workloads::resource_client::{AccessRequest, FinalState, ResourceClient, WorkerHello};
use lockpick_workloads::RunClock;
use serde_json::Value;

use super::{serve_on, Resource};
use crate::cli::Fencing;

const PATIENCE: Duration = Duration::from_secs(10);
const SECRET: &str = "0123456789abcdef";

/// The resource's standard output, kept in memory.
#[derive(Clone, Default)]
struct Records(Arc<Mutex<Vec<u8>>>);

impl Write for Records {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("records").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Records {
    /// Every record so far, parsed.
    fn ops(&self) -> Vec<Value> {
        let bytes = self.0.lock().expect("records").clone();
        String::from_utf8(bytes)
            .expect("utf-8")
            .lines()
            .map(|line| serde_json::from_str(line).expect("a record is JSON"))
            .collect()
    }
}

fn resource(fencing: Fencing) -> (Resource, Records) {
    let records = Records::default();
    let resource = Resource::new(
        fencing,
        RunClock::start(),
        Box::new(records.clone()),
        SECRET.to_string(),
    );
    (resource, records)
}

fn access(process: u64, token: Option<u64>, op: AccessKind, value: i64) -> AccessRequest {
    AccessRequest {
        process,
        acquisition: format!("{process}.1"),
        token,
        op,
        value,
    }
}

#[test]
fn the_fence_rejects_a_token_lower_than_the_highest_seen_and_records_it() {
    let (mut resource, records) = resource(Fencing::On);
    let newer = resource.apply(&access(1, Some(5), AccessKind::Write, 50));
    assert!(newer.expect("applied").accepted);
    let stale_write = resource
        .apply(&access(2, Some(3), AccessKind::Write, 30))
        .expect("applied");
    assert!(!stale_write.accepted);
    assert_eq!(stale_write.value, 50, "a rejected write changes nothing");
    let stale_read = resource.apply(&access(2, Some(3), AccessKind::Read, 0));
    assert!(
        !stale_read.expect("applied").accepted,
        "reads are fenced too"
    );
    let same = resource.apply(&access(1, Some(5), AccessKind::Write, 51));
    assert!(
        same.expect("applied").accepted,
        "an equal token is not stale"
    );
    let untokened = resource.apply(&access(3, None, AccessKind::Write, 70));
    assert!(untokened.expect("applied").accepted, "no token, no fence");
    let kinds: Vec<_> = records.ops().iter().map(|op| op["type"].clone()).collect();
    assert_eq!(kinds, ["ok", "fail", "fail", "ok", "ok"]);
    let stale = &records.ops()[1]["value"];
    assert_eq!(
        stale["reason"],
        "fenced: token 3 is lower than 5, already seen"
    );
}

#[test]
fn without_fencing_a_lower_token_is_accepted() {
    let (mut resource, records) = resource(Fencing::Off);
    resource
        .apply(&access(1, Some(5), AccessKind::Write, 50))
        .expect("applied");
    let stale = resource
        .apply(&access(2, Some(3), AccessKind::Write, 30))
        .expect("applied");
    assert!(stale.accepted);
    assert_eq!(stale.value, 30);
    assert_eq!(records.ops()[1]["type"], "ok");
}

/// Serves `resource` on loopback from a thread of its own, for the rest of the test binary.
fn serve_in_background(resource: Resource) -> SocketAddr {
    let (bound, address) = mpsc::channel();
    thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            bound
                .send(listener.local_addr().expect("address"))
                .expect("send");
            serve_on(listener, resource).await;
        });
    });
    address
        .recv_timeout(PATIENCE)
        .expect("the resource listens")
}

#[test]
fn concurrent_accesses_are_recorded_in_apply_order_before_each_answer() {
    let (resource, records) = resource(Fencing::Off);
    let address = serve_in_background(resource);
    let clients: Vec<_> = (0..4u64)
        .map(|process| {
            let records = records.clone();
            thread::spawn(move || {
                let mut client = ResourceClient::new(address, PATIENCE, SECRET.to_string());
                for attempt in 0..25i64 {
                    let (op, value) = match attempt % 2 {
                        0 => (AccessKind::Write, process as i64 * 1000 + attempt),
                        _ => (AccessKind::Read, 0),
                    };
                    let acquisition = format!("{process}.{attempt}");
                    let request = AccessRequest {
                        acquisition: acquisition.clone(),
                        ..access(process, None, op, value)
                    };
                    let answered = match client.access(&request) {
                        Outcome::Ok(value) => value,
                        other => panic!("access {process}/{attempt}: {other:?}"),
                    };
                    // The answer is out, so its record must be too.
                    let recorded = records.ops().into_iter().any(|r| {
                        r["value"]["acquisition"] == acquisition.as_str()
                            && r["value"]["value"] == answered
                    });
                    assert!(recorded, "answered {acquisition} before recording it");
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("client");
    }
    let ops = records.ops();
    assert_eq!(ops.len(), 100);
    // In the records' order, every read sees the write recorded last before it.
    let mut value = 0;
    for (n, op) in ops.iter().enumerate() {
        assert_eq!(op["process"], "resource");
        let access = &op["value"];
        assert_eq!(access["seq"], n as u64 + 1);
        if access["op"] == "write" {
            value = access["value"].as_i64().expect("a value");
        }
        assert_eq!(access["value"], value, "record {n} is out of apply order");
    }
    // The final read agrees with the records and adds none.
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let ask = WorkerHello::line(SECRET) + "{\"final_read\":true}\n";
    stream.write_all(ask.as_bytes()).expect("ask");
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).expect("answer");
    let state: FinalState = serde_json::from_str(&line).expect("a final state");
    assert_eq!(
        state,
        FinalState {
            value,
            applied: 100
        }
    );
    assert_eq!(records.ops().len(), 100);
}

/// One request line on a fresh connection (after `first`, if given); the answer, if any came.
fn exchange(address: SocketAddr, first: Option<&str>, request: &str) -> String {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut text = first.map_or(String::new(), |f| format!("{f}\n"));
    text.push_str(request);
    text.push('\n');
    stream.write_all(text.as_bytes()).expect("send");
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).expect("answer");
    line
}

#[test]
fn only_a_connection_that_opens_with_the_runs_secret_is_served() {
    let (resource, records) = resource(Fencing::Off);
    let address = serve_in_background(resource);
    let write = serde_json::to_string(&access(1, None, AccessKind::Write, 4242)).unwrap();
    // A client program writing straight to the resource, under client 1's acquisition: with
    // no hello, with a guessed one, with an empty one.
    for first in [
        None,
        Some("{\"worker\":\"guess\"}"),
        Some("{\"worker\":\"\"}"),
    ] {
        let reply = exchange(address, first, &write);
        assert!(reply.contains("not one of lockpick's workers"), "{reply}");
    }
    let final_read = exchange(address, None, "{\"final_read\":true}");
    assert!(final_read.contains("refused"), "{final_read}");
    // Each refused request is recorded as foreign (a wrong hello too), none as an access.
    let ops = records.ops();
    assert!(ops.len() >= 4, "{ops:?}");
    for op in &ops {
        assert_eq!(op["type"], "info");
        assert_eq!(op["value"]["foreign"], true);
        assert!(op["value"]["from"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1:"));
        assert!(op["value"].get("seq").is_none());
    }
    // lockpick's own worker is served, and nothing of the foreign writes was applied.
    let mut worker = ResourceClient::new(address, PATIENCE, SECRET.to_string());
    let read = worker.access(&access(2, None, AccessKind::Read, 0));
    assert_eq!(read, Outcome::Ok(0));
    let ops = records.ops();
    assert_eq!(ops.last().unwrap()["value"]["seq"], 1);
    assert_eq!(ops.iter().filter(|op| op["type"] != "info").count(), 1);
}

#[test]
fn a_request_line_without_end_ends_its_connection_not_the_resource() {
    let (resource, records) = resource(Fencing::Off);
    let address = serve_in_background(resource);
    let mut endless = TcpStream::connect(address).expect("connect");
    endless.set_write_timeout(Some(PATIENCE)).expect("timeout");
    endless.set_read_timeout(Some(PATIENCE)).expect("timeout");
    // A line of 1 MiB: the resource drops the connection after its bound, unanswered (the
    // kernel's buffers may take some of it after that, or refuse it).
    let chunk = vec![b'x'; 64 << 10];
    for _ in 0..16 {
        if endless.write_all(&chunk).is_err() {
            break;
        }
    }
    let _ = endless.write_all(b"\n");
    let mut answer = String::new();
    let read = BufReader::new(endless).read_line(&mut answer);
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "a 1 MiB line was read and answered: {answer}"
    );
    let mut worker = ResourceClient::new(address, PATIENCE, SECRET.to_string());
    assert_eq!(
        worker.access(&access(2, None, AccessKind::Read, 0)),
        Outcome::Ok(0)
    );
    assert_eq!(records.ops().len(), 1);
}
