//! The short human summary of a checked history, printed at the end of `run` and by `check`.

use std::fmt::Write;

use lockpick_checkers::model::{AccessKind, Hold};
use lockpick_checkers::story::{seconds, token};
use lockpick_checkers::{Results, Validity};

fn hold(h: &Hold) -> String {
    format!(
        "client {} (acquisition {}, {}) held it from {} to {}{}",
        h.process,
        h.acquisition,
        token(h),
        seconds(h.start),
        seconds(h.end),
        if h.released { "" } else { " (never released)" }
    )
}

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
    if let Some(o) = &results.overlapping_holders {
        let _ = writeln!(
            out,
            "  overlapping holders: {} (among {} holds)",
            o.overlaps.len(),
            o.holds
        );
        if !o.overlaps.is_empty() {
            let _ = writeln!(
                out,
                "    by cause: {} holder(s) outlived their lease, {} granted under a live lease \
                 (the lock service broke mutual exclusion), {} not decidable",
                o.outlived_lease, o.granted_under_live_lease, o.undecidable
            );
        }
        if let Some(first) = o.overlaps.first() {
            let _ = writeln!(out, "    first: {}", hold(&first.first));
            let _ = writeln!(out, "       and {}", hold(&first.second));
            let _ = writeln!(
                out,
                "       both held the lock for {} from {}{}",
                seconds(first.length()),
                seconds(first.from),
                if first.faults.is_empty() {
                    String::new()
                } else {
                    format!(", during {}", first.faults.join(", "))
                }
            );
        }
    }
    if let Some(s) = &results.stale_accesses {
        let _ = writeln!(
            out,
            "  stale writes accepted: {}; stale reads accepted: {}; accesses rejected by fencing: {}",
            s.stale_writes, s.stale_reads, s.rejected
        );
        let first = s
            .violations
            .iter()
            .find(|v| v.access.kind == AccessKind::Write)
            .or(s.violations.first());
        if let Some(v) = first {
            let verb = match v.access.kind {
                AccessKind::Write => "wrote",
                AccessKind::Read => "read",
            };
            let _ = writeln!(
                out,
                "    first: client {} {verb} at {} under acquisition {} ({}) and the resource \
                 accepted it, although at {} it had accepted client {}'s access under the newer \
                 acquisition {} ({})",
                v.access.process,
                seconds(v.access.time),
                v.holder.acquisition,
                token(&v.holder),
                seconds(v.overtaken_by.time),
                v.overtaken_by.process,
                v.newer_holder.acquisition,
                token(&v.newer_holder),
            );
        }
    }
    if let Some(t) = results.token_violations.as_ref().filter(|t| t.checked) {
        if t.reused + t.went_backwards > 0 {
            let _ = writeln!(
                out,
                "  fencing tokens broke their promise: {} reused, {} went backwards",
                t.reused, t.went_backwards
            );
        }
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
    let no_token = setup.token == "none";
    match (setup.fencing.as_str(), no_token) {
        ("on", true) => Some(format!(
            "fencing is on, but {} hands out no fencing token: no access carried one, so the \
             resource had nothing to compare and could reject nothing. Fencing cannot help with \
             this lock.",
            setup.lock
        )),
        ("on", false) if stale.rejected > 0 => Some(format!(
            "fencing is on and {} gives a token ({}): the resource rejected {} stale accesses.",
            setup.lock, setup.token, stale.rejected
        )),
        ("off", false) if stale.stale_writes > 0 => Some(format!(
            "fencing is off: {} gives a token ({}) that the resource could have checked \
             (try --fencing on).",
            setup.lock, setup.token
        )),
        _ => None,
    }
}
