//! The drawings of small hand-made histories, read back as XML.

use lockpick_checkers::{model, Op, OpType, Process, F};
use quick_xml::events::Event;
use serde_json::{json, Value};

use super::*;
use crate::report::timeline::timeline;
use crate::report::violations;

const MS: u64 = 1_000_000;

/// A history builder: one line per call, numbered as the controller numbers them.
#[derive(Default)]
struct History(Vec<Op>);

impl History {
    fn push(&mut self, ms: u64, process: Process, kind: OpType, f: F, value: Value) {
        let mut op = Op::new(ms * MS, process, kind, f, value);
        op.index = self.0.len() as u64;
        self.0.push(op);
    }

    fn hold(&mut self, p: u64, acquisition: &str, from_ms: u64, to_ms: u64) {
        let a = json!({"acquisition": acquisition});
        let granted = json!({"acquisition": acquisition, "token": null});
        self.push(
            from_ms,
            Process::Client(p),
            OpType::Invoke,
            F::Acquire,
            a.clone(),
        );
        self.push(from_ms, Process::Client(p), OpType::Ok, F::Acquire, granted);
        self.push(
            to_ms,
            Process::Client(p),
            OpType::Invoke,
            F::Release,
            a.clone(),
        );
        self.push(to_ms, Process::Client(p), OpType::Ok, F::Release, a);
    }

    fn fault(&mut self, id: u64, fault: &str, target: &str, from_ms: u64, to_ms: u64) {
        let v = json!({"id": id, "fault": fault, "targets": [target]});
        let nemesis = || Process::named(Process::NEMESIS);
        self.push(from_ms, nemesis(), OpType::Info, F::Start, v.clone());
        self.push(to_ms, nemesis(), OpType::Info, F::Stop, v);
    }
}

/// Four clients; client 0 holds twice back to back, client 1 once, clients 2 and 3 never.
fn four_clients() -> Vec<Op> {
    let mut h = History::default();
    let setup =
        json!({"lock": "redis", "token": "none", "ttl_ms": 1000, "fencing": "off", "clients": 4});
    h.push(
        0,
        Process::named(Process::HARNESS),
        OpType::Info,
        F::Setup,
        setup,
    );
    h.fault(1, "pause", "n1", 500, 1500);
    h.hold(0, "0.1", 100, 1000);
    h.hold(0, "0.2", 1000, 2000);
    h.hold(1, "1.1", 2500, 3000);
    h.0
}

/// Each element of `svg` as (the lane it is in, its name, its class, its text).
fn elements(svg: &str) -> Vec<(Option<String>, String, String, String)> {
    let mut reader = quick_xml::Reader::from_str(svg);
    let mut lane: Option<String> = None;
    let mut out: Vec<(Option<String>, String, String, String)> = Vec::new();
    loop {
        match reader.read_event().expect("the drawing is well-formed XML") {
            Event::Start(e) | Event::Empty(e) => {
                let attr = |name: &[u8]| {
                    e.try_get_attribute(name)
                        .unwrap()
                        .map(|a| {
                            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                .unwrap()
                                .to_string()
                        })
                        .unwrap_or_default()
                };
                let class = attr(b"class");
                if class == "lane" {
                    lane = Some(attr(b"data-client"));
                }
                let name = String::from_utf8_lossy(e.name().as_ref()).to_string();
                out.push((lane.clone(), name, class, String::new()));
            }
            Event::Text(t) => {
                if let Some(last) = out.last_mut() {
                    last.3.push_str(&t.decode().unwrap());
                }
            }
            Event::End(e) if e.name().as_ref() == b"g" => lane = None,
            Event::Eof => return out,
            _ => {}
        }
    }
}

fn timeline_of(ops: &[Op]) -> String {
    let model = model::build(ops).unwrap();
    let results = lockpick_checkers::check(ops);
    timeline(&model, &violations::collect(&model, &results), Some(4)).into_string()
}

#[test]
fn every_client_has_a_lane_holder_or_not() {
    let svg = timeline_of(&four_clients());
    let lanes: Vec<String> = elements(&svg)
        .into_iter()
        .filter(|e| e.2 == "lane")
        .filter_map(|e| e.0)
        .collect();
    assert_eq!(lanes, ["0", "1", "2", "3"]);
}

#[test]
fn back_to_back_holds_of_one_client_are_two_bars_with_a_gap() {
    let svg = timeline_of(&four_clients());
    let all = elements(&svg);
    let holds: Vec<_> = all.iter().filter(|e| e.2 == "hold").collect();
    let lane_of = |e: &&(Option<String>, String, String, String)| e.0.clone().unwrap();
    assert_eq!(
        holds.iter().map(lane_of).collect::<Vec<_>>(),
        ["0", "0", "1"]
    );
    // The first bar ends before the second begins.
    let mut reader = quick_xml::Reader::from_str(&svg);
    let mut bars = Vec::new();
    loop {
        match reader.read_event().unwrap() {
            Event::Start(e)
                if e.try_get_attribute("class")
                    .unwrap()
                    .is_some_and(|a| a.value.as_ref() == b"hold") =>
            {
                let number = |n: &str| -> f64 {
                    let a = e.try_get_attribute(n).unwrap().unwrap();
                    String::from_utf8_lossy(&a.value).parse().unwrap()
                };
                bars.push((number("x"), number("width")));
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(bars[0].0 + bars[0].1 < bars[1].0, "{bars:?}");
}

#[test]
fn fault_windows_name_their_targets_in_the_drawing() {
    let svg = timeline_of(&four_clients());
    let all = elements(&svg);
    assert_eq!(all.iter().filter(|e| e.2 == "fault").count(), 1);
    let labels: Vec<&str> = all
        .iter()
        .filter(|e| e.2 == "fault-label")
        .map(|e| e.3.as_str())
        .collect();
    assert_eq!(labels, ["pause of n1"]);
}

#[test]
fn the_charts_share_the_timelines_axis_and_faults() {
    let ops = four_clients();
    let model = model::build(&ops).unwrap();
    let results = lockpick_checkers::check(&ops);
    let drawings = [
        timeline(&model, &violations::collect(&model, &results), Some(4)).into_string(),
        latency(&model).into_string(),
        throughput(&model).into_string(),
    ];
    let fault_x = |svg: &str| {
        let at = svg.find("class=\"fault\"").expect("a fault window");
        svg[at..].split('"').nth(3).unwrap().to_string()
    };
    let width = |svg: &str| {
        svg.split("width=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string()
    };
    for svg in &drawings[1..] {
        assert_eq!(fault_x(svg), fault_x(&drawings[0]));
        assert_eq!(width(svg), width(&drawings[0]));
    }
}

#[test]
fn the_latency_axis_is_labelled_from_zero_up() {
    let mut h = History::default();
    // Acquires that take 2 ms: the axis runs in round steps from 0 at the bottom to above the
    // slowest at the top (which once read "0 ms").
    for (i, at) in [0u64, 10, 20].into_iter().enumerate() {
        let a = json!({"acquisition": format!("0.{i}")});
        h.push(
            at,
            Process::Client(0),
            OpType::Invoke,
            F::Acquire,
            a.clone(),
        );
        h.push(
            at + 2,
            Process::Client(0),
            OpType::Ok,
            F::Acquire,
            a.clone(),
        );
        h.push(
            at + 5,
            Process::Client(0),
            OpType::Invoke,
            F::Release,
            a.clone(),
        );
        h.push(at + 5, Process::Client(0), OpType::Ok, F::Release, a);
    }
    let model = model::build(&h.0).unwrap();
    let labels: Vec<String> = elements(&latency(&model).into_string())
        .into_iter()
        .filter(|e| e.2 == "y-label")
        .map(|e| e.3)
        .collect();
    assert_eq!(labels.first().map(String::as_str), Some("0 s"));
    assert_eq!(
        labels.last().map(String::as_str),
        Some("3 ms"),
        "{labels:?}"
    );
}

#[test]
fn accesses_differ_in_shape_not_only_colour() {
    let mut h = History(four_clients());
    for (seq, (accepted, kind)) in [(true, "write"), (false, "write")].into_iter().enumerate() {
        let v = json!({"seq": seq, "process": 0, "acquisition": "0.1", "token": null, "op": kind, "value": 0});
        let outcome = if accepted { OpType::Ok } else { OpType::Fail };
        h.push(
            200 + seq as u64,
            Process::named(Process::RESOURCE),
            outcome,
            F::Access,
            v,
        );
    }
    let svg = timeline_of(&h.0);
    let shape = |class: &str| {
        let at = svg.find(&format!("class=\"{class}\"")).expect(class);
        svg[at..]
            .split("d=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string()
    };
    let (tick, cross) = (shape("access accepted"), shape("access rejected"));
    assert!(
        tick.ends_with('z') && !cross.contains('z'),
        "{tick} / {cross}"
    );
}

#[test]
fn a_leader_change_is_marked_at_its_faults_stop_with_the_old_and_new_leader() {
    let mut h = History(four_clients());
    let leader = |node: &str, address: &str| json!({"node": node, "address": address, "term": 3});
    let start = json!({"id": 2, "fault": "kill", "targets": ["n1"], "nemesis": "kill-leader",
        "leader": leader("n1", "10.0.0.1:6379")});
    let stop = json!({"id": 2, "fault": "kill", "targets": ["n1"],
        "leader_after": leader("n2", "10.0.0.2:6379"), "leadership_moved": true});
    let nemesis = || Process::named(Process::NEMESIS);
    h.push(1600, nemesis(), OpType::Info, F::Start, start);
    h.push(2200, nemesis(), OpType::Info, F::Stop, stop);
    // A fault whose leadership did not move, and one that names its leaders badly: no mark.
    h.fault(3, "kill", "n2", 2300, 2400);
    let odd = json!({"id": 4, "fault": "kill", "targets": ["n3"], "leader": "n3"});
    h.push(2500, nemesis(), OpType::Info, F::Start, odd.clone());
    let mut odd_stop = odd;
    odd_stop["leadership_moved"] = json!("yes");
    h.push(2600, nemesis(), OpType::Info, F::Stop, odd_stop);
    let svg = timeline_of(&h.0);
    let all = elements(&svg);
    let labels: Vec<&str> = all
        .iter()
        .filter(|e| e.2 == "leader-label")
        .map(|e| e.3.as_str())
        .collect();
    assert_eq!(labels, ["n1 → n2"]);
    assert_eq!(all.iter().filter(|e| e.2 == "leader-mark").count(), 1);
    // At the fault's stop, where the new leader was named.
    let model = model::build(&h.0).unwrap();
    let x = Scale::of(&model).x(2200 * MS);
    assert!(
        svg.contains(&format!("class=\"leader-mark\" x1=\"{x}\"")),
        "{svg}"
    );
    assert!(svg.contains("data-from=\"n1\" data-to=\"n2\""), "{svg}");
    assert!(
        svg.contains(
            "leadership moved from n1 (10.0.0.1:6379, term 3) to n2 (10.0.0.2:6379, term 3)"
        ),
        "{svg}"
    );
}
