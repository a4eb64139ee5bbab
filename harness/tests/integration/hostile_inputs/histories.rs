//! Crafted histories and inflated claims: malformed, never a verdict; a report bounded by what
//! the history holds.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::within;
use crate::common::lockpick;

/// A short valid history: two serial holders, each write recorded, the final read agreeing.
fn valid_history() -> Vec<String> {
    let mut lines = vec![
        r#"{"index":0,"time":0,"process":"harness","type":"info","f":"setup","value":{"lock":"redis","token":"none","ttl_ms":1000,"fencing":"off","nemesis":"none","clients":2,"seed":1}}"#.to_string(),
    ];
    for (p, t) in [(0u64, 10u64), (1, 20)] {
        let acq = format!("{p}.1");
        let seq = p + 1;
        lines.extend([
            format!(r#"{{"time":{},"process":{p},"type":"invoke","f":"acquire","value":{{"acquisition":"{acq}"}}}}"#, t),
            format!(r#"{{"time":{},"process":{p},"type":"ok","f":"acquire","value":{{"acquisition":"{acq}","token":null}}}}"#, t + 1),
            format!(r#"{{"time":{},"process":"resource","type":"ok","f":"access","value":{{"seq":{seq},"process":{p},"acquisition":"{acq}","token":null,"op":"write","value":0}}}}"#, t + 2),
            format!(r#"{{"time":{},"process":{p},"type":"invoke","f":"release","value":{{"acquisition":"{acq}"}}}}"#, t + 3),
            format!(r#"{{"time":{},"process":{p},"type":"ok","f":"release","value":{{"acquisition":"{acq}"}}}}"#, t + 4),
        ]);
    }
    lines.push(
        r#"{"time":40,"process":"harness","type":"ok","f":"final-read","value":{"value":0,"applied":2}}"#
            .to_string(),
    );
    numbered(lines)
}

/// Gives each line its index, in order (lines that are not JSON objects are left as they are).
fn numbered(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| match serde_json::from_str::<Value>(&line) {
            Ok(Value::Object(mut op)) => {
                op.insert("index".into(), i.into());
                Value::Object(op).to_string()
            }
            _ => line,
        })
        .collect()
}

/// Line `i` (from 0) of the valid history with `field` set to the JSON `value` (a path of
/// keys separated by `/`).
fn with(i: usize, field: &str, value: &str) -> Vec<u8> {
    let mut lines = valid_history();
    let mut op: Value = serde_json::from_str(&lines[i]).unwrap();
    let mut at = &mut op;
    let keys: Vec<&str> = field.split('/').collect();
    for key in &keys[..keys.len() - 1] {
        at = &mut at[*key];
    }
    // Set as text: serde_json would turn u64::MAX + 1 into a float.
    at[keys[keys.len() - 1]] = Value::String("@@".into());
    lines[i] = op.to_string().replace("\"@@\"", value);
    (lines.join("\n") + "\n").into_bytes()
}

fn replaced(i: usize, line: &[u8]) -> Vec<u8> {
    let lines = valid_history();
    let mut out = Vec::new();
    for (n, l) in lines.iter().enumerate() {
        if n == i {
            out.extend_from_slice(line);
        } else {
            out.extend_from_slice(l.as_bytes());
        }
        out.push(b'\n');
    }
    out
}

#[test]
fn hostile_histories_are_malformed_never_a_verdict() {
    let u64_max = u64::MAX.to_string();
    let long = format!(
        r#"{{"time":1,"process":0,"type":"invoke","f":"acquire","value":{{"acquisition":"{}"}}}}"#,
        "x".repeat(2 << 20)
    );
    let deep = format!(
        r#"{{"time":11,"process":0,"type":"ok","f":"acquire","value":{}}}"#,
        "[".repeat(10_000) + &"]".repeat(10_000)
    );
    let escape = "\\u001b]0;owned\\u0007\\u001b[2J\\n::error::injected";
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("applied u64::MAX", with(11, "value/applied", &u64_max)),
        ("applied 2^63", with(11, "value/applied", "9223372036854775808")),
        ("applied 2^53+1", with(11, "value/applied", "9007199254740993")),
        ("applied -1", with(11, "value/applied", "-1")),
        ("applied 1e30", with(11, "value/applied", "1e30")),
        ("applied u64::MAX+1", with(11, "value/applied", "18446744073709551616")),
        ("acquire time u64::MAX", with(7, "time", &u64_max)),
        ("acquire time 2^63", with(7, "time", "9223372036854775808")),
        ("acquire time 2^53+1", with(7, "time", "9007199254740993")),
        ("time -1", with(7, "time", "-1")),
        ("time a string", with(7, "time", "\"soon\"")),
        ("time 1.5", with(7, "time", "1.5")),
        ("a client's time goes back", with(7, "time", "1099511627776")),
        ("a completion before its invoke", with(7, "time", "1")),
        ("access seq u64::MAX", with(3, "value/seq", &u64_max)),
        ("access seq repeated", with(8, "value/seq", "1")),
        ("lease live_until u64::MAX", with(2, "value/lease", &format!("{{\"live_until\":{u64_max}}}"))),
        ("lease expires_by 2^63", with(2, "value/lease", "{\"live_until\":5,\"expires_by\":9223372036854775808}")),
        ("granted_after 2^60", with(2, "value/granted_after", "1152921504606846976")),
        ("final read time u64::MAX", with(11, "time", &u64_max)),
        ("index u64::MAX", with(5, "index", &u64_max)),
        ("index skips", with(5, "index", "7")),
        ("process -1", with(1, "process", "-1")),
        ("unknown f", with(1, "f", "\"fly\"")),
        ("unknown type", with(1, "type", "\"maybe\"")),
        ("not JSON", replaced(4, b"{ this is not json")),
        ("not UTF-8", replaced(4, b"{\"time\":1,\xff\xfe}")),
        ("a NUL byte", replaced(4, b"{\"time\":1,\0}")),
        ("a line over 1 MiB", replaced(1, long.as_bytes())),
        ("nesting 10000 deep", replaced(2, deep.as_bytes())),
        ("a completion never invoked", replaced(1, br#"{"index":1,"time":10,"process":0,"type":"ok","f":"release","value":{"acquisition":"0.1"}}"#)),
        ("an access of no acquisition", with(3, "value/acquisition", "\"9.9\"")),
        ("a release never granted", with(4, "value/acquisition", "\"7.7\"")),
        ("escapes and a workflow command", with(3, "value/acquisition", &format!("\"{escape}\""))),
    ];
    assert!(cases.len() >= 30);
    let dir = tempfile::tempdir().unwrap();
    // The unchanged history is valid: each case breaks it by its one change.
    let base = dir.path().join("valid.jsonl");
    std::fs::write(&base, valid_history().join("\n") + "\n").unwrap();
    let valid = lockpick().arg("check").arg(&base).output().unwrap();
    assert_eq!(
        valid.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&valid.stdout)
    );
    for (i, (name, text)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("case-{i}.jsonl"));
        std::fs::write(&path, text).unwrap();
        let mut command = lockpick();
        command.arg("check").arg(&path);
        let out = within(command, Duration::from_secs(60));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{name}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("malformed at line"), "{name}: {stdout}");
        assert!(
            !stdout.chars().any(|c| c.is_control() && c != '\n'),
            "{name}: a control character reached the terminal: {stdout:?}"
        );
        assert!(
            !stdout.lines().any(|l| l.trim_start().starts_with("::")),
            "{name}: a workflow command reached the log: {stdout}"
        );
    }
}

#[test]
fn a_report_is_sized_by_what_the_history_holds_not_by_what_it_claims() {
    let claims = [
        ("clients 10^6", with(0, "value/clients", "1000000")),
        ("clients 10^8", with(0, "value/clients", "100000000")),
        (
            "clients 2^63",
            with(0, "value/clients", "9223372036854775808"),
        ),
        (
            "clients u64::MAX",
            with(0, "value/clients", &u64::MAX.to_string()),
        ),
        (
            "a time at u64::MAX",
            with(11, "time", &u64::MAX.to_string()),
        ),
        ("a time at 2^53", with(11, "time", "9007199254740992")),
        // Characters XML forbids, as a server version (a --server-bin build may report one).
        (
            "U+FFFE and U+FFFF in a version",
            with(
                0,
                "value/server_versions",
                r#"{"redis":"7.0\ufffe\uffff\u0001"}"#,
            ),
        ),
    ];
    for (name, text) in claims {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("history.jsonl"), text).unwrap();
        let mut command = lockpick();
        command.arg("report").arg(dir.path());
        let out = within(command, Duration::from_secs(120));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let page = std::fs::metadata(dir.path().join("report.html"))
            .unwrap()
            .len();
        assert!(page < 1 << 20, "{name}: a page of {page} bytes");
        let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
        quick_xml_reads(&junit);
        let xmllint = Command::new("xmllint")
            .arg("--noout")
            .arg(dir.path().join("junit.xml"))
            .output()
            .expect("xmllint runs (Debian package libxml2-utils)");
        assert!(
            xmllint.status.success(),
            "{name}: junit.xml is not XML: {}",
            String::from_utf8_lossy(&xmllint.stderr)
        );
    }
}

/// The whole document parses as XML.
fn quick_xml_reads(xml: &str) {
    let mut reader = quick_xml::Reader::from_str(xml);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not XML: {e}\n{xml}"),
        }
    }
}
