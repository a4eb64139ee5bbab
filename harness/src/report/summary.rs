//! The short human summary of a checked history, printed at the end of `run` and by `check`.

use std::fmt::Write;

use lockpick_checkers::{Results, Validity};

pub fn render(results: &Results) -> String {
    let mut out = String::new();
    let verdict = match results.valid {
        Validity::Valid => "VALID",
        Validity::Invalid => "INVALID",
        Validity::Unknown => "UNKNOWN",
    };
    if let Some(m) = &results.malformed {
        let _ = writeln!(out, "verdict: {verdict}: the history is malformed at {m}");
        return out;
    }
    let _ = writeln!(out, "verdict: {verdict}");
    for reason in &results.unknown_reasons {
        let _ = writeln!(out, "  not proven: {reason}");
    }
    let _ = writeln!(
        out,
        "  operations: {}; outcome unknown: {} (answered info: {}; incomplete, client died or \
         run ended: {})",
        results.operations,
        results.answered_unknown + results.incomplete.len(),
        results.answered_unknown,
        results.incomplete.len()
    );
    if let Some(failed) = results.release_failures.told() {
        let _ = writeln!(out, "  releases failed: {failed}");
    }
    for checker in results.checkers() {
        for line in checker.summary_lines(results.setup.as_ref()) {
            let _ = writeln!(out, "{line}");
        }
    }
    if let Some(note) = results.lease_claims.as_ref().and_then(|c| c.note()) {
        let _ = writeln!(out, "  told: {note}");
    }
    if let Some(f) = results
        .final_read
        .as_ref()
        .filter(|f| f.valid != Validity::Valid)
    {
        let _ = writeln!(
            out,
            "  the history is incomplete: the resource applied {} accesses (final value {}), \
             the history records {} (last value {:?})",
            f.applied, f.value, f.recorded, f.last_value
        );
    }
    if let Some(note) = fencing_note(results) {
        let _ = writeln!(out, "  {note}");
    }
    if let Some(story) = results.stories.first() {
        let _ = writeln!(out, "  the story of the first violation ({}):", story.title);
        for step in &story.steps {
            let mark = if step.violation { "!!" } else { "->" };
            let _ = writeln!(out, "    {mark} {}", step.text);
        }
    }
    out
}

/// Why fencing did or could not help, when the run says enough to tell.
fn fencing_note(results: &Results) -> Option<String> {
    let setup = results.setup.as_ref()?;
    let stale = results.stale_accesses.as_ref()?;
    // A client program's token is a promise: it counts only if a grant carried one.
    let reported_none = results
        .token_violations
        .as_ref()
        .is_some_and(|t| t.holds_with_token == 0);
    let no_token = setup.token == "none" || reported_none;
    match (setup.fencing.as_str(), no_token) {
        ("on", true) => Some(format!(
            "fencing is on, but {} hands out no fencing token: no access carried one, so the \
             resource had nothing to compare and could reject nothing. Fencing cannot help with \
             this lock.",
            setup.label()
        )),
        ("on", false) if stale.rejected > 0 => Some(format!(
            "fencing is on and {} gives a token ({}): the resource rejected {} stale accesses.",
            setup.label(),
            setup.token,
            stale.rejected
        )),
        ("off", false) if stale.stale_writes > 0 => Some(format!(
            "fencing is off: {} gives a token ({}) that the resource could have checked \
             (try --fencing on).",
            setup.label(),
            setup.token
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockpick_checkers::{check, Op, OpType, Process, F};
    use serde_json::{json, Value};

    /// A stale write accepted with fencing off, from a lock whose clients reported `token`.
    fn stale_write(lock: &str, promised: &str, token: Option<u64>) -> Results {
        let mut ops = Vec::new();
        let mut push = |time: u64, process: Process, kind: OpType, f: F, value: Value| {
            let mut op = Op::new(time, process, kind, f, value);
            op.index = ops.len() as u64;
            ops.push(op);
        };
        let setup = json!({"lock": lock, "token": promised, "ttl_ms": 1000, "fencing": "off"});
        push(0, Process::named("harness"), OpType::Info, F::Setup, setup);
        let client = |p: u64, acq: &str, t: Option<u64>| {
            (Process::Client(p), json!({"acquisition": acq, "token": t}))
        };
        for (p, acq, invoked, ok) in [(0, "0.1", 1, 2), (1, "1.1", 5, 6)] {
            let (who, v) = client(p, acq, token.map(|t| t + p));
            push(invoked, who.clone(), OpType::Invoke, F::Acquire, v.clone());
            push(ok, who, OpType::Ok, F::Acquire, v);
        }
        for (seq, (time, p, acq)) in [(7, 1, "1.1"), (8, 0, "0.1")].into_iter().enumerate() {
            let value = json!({"seq": seq + 1, "process": p, "acquisition": acq,
                "token": token.map(|t| t + p), "op": "write", "value": seq + 1});
            push(
                time,
                Process::named("resource"),
                OpType::Ok,
                F::Access,
                value,
            );
        }
        check(&ops)
    }

    #[test]
    fn a_program_that_promised_tokens_and_reported_none_is_not_told_to_fence() {
        let promised = "the token the client program reports";
        let r = stale_write("exec:redis:./client.py", promised, None);
        assert_eq!(r.stale_accesses.as_ref().unwrap().stale_writes, 1);
        assert_eq!(fencing_note(&r), None, "{}", render(&r));
        // The same program reporting tokens is told that the resource could have checked them.
        let r = stale_write("exec:zookeeper:./client.py", promised, Some(4));
        let note = fencing_note(&r).unwrap_or_default();
        assert!(note.contains("could have checked"), "{note}");
    }
}
