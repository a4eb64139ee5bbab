//! The headline under the verdict: one sentence per finding a reader must not miss, so that a
//! red "invalid" never hides what matters (for a fenced lock: that the fence held) and an
//! "unknown" always says why the run is not proven.

use lockpick_checkers::model::{AccessKind, Model};
use lockpick_checkers::overlap_cause::{self, OverlapCause};
use lockpick_checkers::overlapping_holders::OverlappingHolders;
use lockpick_checkers::{Results, Validity};
use maud::{html, Markup};

/// One sentence, with the kind of finding it tells (`overlap`, `fence`, `tokens`, `jam`,
/// `unavailable`, `contradicted`, `stale-reads`, `unproven`, `valid`).
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub kind: &'static str,
    pub text: String,
}

pub fn render(model: &Model, results: &Results) -> Markup {
    html! {
        div id="headline" {
            @for finding in findings(model, results) {
                p class="finding" data-finding=(finding.kind) { (finding.text) "." }
            }
        }
    }
}

/// The headline's sentences, most important first.
pub fn findings(model: &Model, results: &Results) -> Vec<Finding> {
    let mut out = Vec::new();
    let fence = fence(model, results);
    let overlaps = results.overlapping_holders.as_ref();
    if let Some(o) = overlaps.filter(|o| !o.overlaps.is_empty()) {
        out.push(finding("overlap", overlap_sentence(model, o)));
        if o.granted_under_live_lease > 0 && o.granted_under_live_lease < o.overlaps.len() {
            out.push(finding(
                "overlap",
                format!(
                    "{}: {} broke mutual exclusion",
                    count(
                        o.granted_under_live_lease,
                        "grant while the earlier lease was still live",
                        "grants while the earlier lease was still live"
                    ),
                    model.mutual_exclusion_breaker()
                ),
            ));
        }
    }
    if let Some(fence) = fence.filter(|_| results.valid != Validity::Valid) {
        out.push(finding("fence", capitalised(&fence)));
    }
    if let Some(t) = results
        .token_violations
        .as_ref()
        .filter(|t| !t.violations.is_empty())
    {
        let lock = model.setup.as_ref().map_or("the lock", |s| s.label());
        out.push(finding(
            "tokens",
            format!(
                "{} reused and {} gone backwards: {lock} broke its fencing-token promise",
                count(t.reused, "token", "tokens"),
                t.went_backwards
            ),
        ));
    }
    if let Some(l) = results.liveness.as_ref().filter(|l| !l.jams.is_empty()) {
        let longest = l.jams.iter().map(|j| j.length()).max().unwrap_or(0);
        out.push(finding(
            "jam",
            format!(
                "The lock jammed: {} nobody held it and every earlier lease had certainly ended, \
                 yet every acquire was refused (the longest for {})",
                if l.jams.len() == 1 {
                    "once".to_string()
                } else {
                    format!("{} times", l.jams.len())
                },
                lockpick_checkers::story::seconds(longest)
            ),
        ));
    }
    if let Some(l) = results.liveness.as_ref().filter(|l| l.excused_wait > 0) {
        out.push(finding(
            "unavailable",
            format!(
                "The lock was refused to everyone for up to {} while free, during server faults \
                 or their recovery: expected unavailability, not a jam",
                lockpick_checkers::story::seconds(l.excused_wait)
            ),
        ));
    }
    // Told, not a verdict: no verdict rests on the reported bounds (see `lease_claims`).
    if let Some(note) = results.lease_claims.as_ref().and_then(|c| c.note()) {
        out.push(finding("contradicted", capitalised(&note)));
    }
    if results.stale_reads_accepted > 0 && !fenced_with_tokens(model) {
        out.push(finding(
            "stale-reads",
            format!(
                "{} accepted (reported, but not a violation on {}: a read changes nothing)",
                count(results.stale_reads_accepted, "stale read", "stale reads"),
                if results.stale_reads_accepted == 1 {
                    "its own"
                } else {
                    "their own"
                }
            ),
        ));
    }
    let prefix = match results.valid {
        Validity::Unknown => "not proven: ",
        _ => "note: ",
    };
    for reason in &results.unknown_reasons {
        out.push(finding("unproven", format!("{prefix}{reason}")));
    }
    if results.valid == Validity::Valid {
        let holds = overlaps.map_or(0, |o| o.holds);
        let mut text = format!(
            "No violation: {} never overlapped, and the resource accepted no stale write",
            count(holds, "hold", "holds")
        );
        if let Some(fence) = fence_rejections(model, results) {
            text = format!("{text}; {fence}");
        }
        out.insert(0, finding("valid", text));
    }
    out
}

fn finding(kind: &'static str, text: String) -> Finding {
    Finding { kind, text }
}

/// `1 hold`, `2 holds`.
fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}

/// The overlaps and their causes: "27 overlapping holders, all because a frozen holder outlived
/// its lease".
fn overlap_sentence(model: &Model, o: &OverlappingHolders) -> String {
    let n = o.overlaps.len();
    let pairs = count(n, "pair of overlapping holders", "overlapping holders");
    let all = |what: &str| {
        if n == 1 {
            format!("{pairs}, {what}")
        } else {
            format!("{pairs}, all {what}")
        }
    };
    let frozen = o
        .overlaps
        .iter()
        .filter(|v| v.cause == OverlapCause::OutlivedLease)
        .all(|v| {
            model
                .faults
                .iter()
                .any(|w| w.freezes(v.first.process) && w.active_during(v.first.start, v.to))
        });
    let holder = if frozen {
        "a frozen holder"
    } else {
        "a holder"
    };
    if o.outlived_lease == n {
        all(&format!("because {holder} outlived its lease"))
    } else if o.granted_under_live_lease == n {
        all(&format!(
            "granted while the earlier lease was still live: {} broke mutual exclusion",
            model.mutual_exclusion_breaker()
        ))
    } else if o.undecidable == n {
        all(&undecidable_words(model, o))
    } else {
        let mut parts = Vec::new();
        if o.outlived_lease > 0 {
            parts.push(format!(
                "{} because {holder} outlived its lease",
                o.outlived_lease
            ));
        }
        if o.granted_under_live_lease > 0 {
            parts.push(format!(
                "{} granted while the earlier lease was still live",
                o.granted_under_live_lease
            ));
        }
        if o.undecidable > 0 {
            parts.push(format!("{} of undecidable cause", o.undecidable));
        }
        format!("{pairs}: {}", parts.join(", "))
    }
}

/// Why no overlap's cause could be decided, as far as the history shows. Most often nothing
/// bounds when the earlier holder's lease ended (a client program whose library renews in the
/// background and reports none of its renewals): then no freeze, however long, proves that the
/// lease had ended, and the sentence says what is missing rather than "cannot tell".
fn undecidable_words(model: &Model, o: &OverlappingHolders) -> String {
    let unbounded = o
        .overlaps
        .iter()
        .all(|v| overlap_cause::lease_ended_by(model, &v.first, v.second.granted_after).is_none());
    if !unbounded {
        return format!(
            "of undecidable cause: the recorded lease bounds leave open whether a holder outlived \
             its lease or {} broke mutual exclusion",
            model.mutual_exclusion_breaker()
        );
    }
    let exec = model
        .setup
        .as_ref()
        .is_some_and(|s| s.lock.starts_with("exec:"));
    if exec {
        "of undecidable cause: the client program reported no end of the earlier holder's lease, \
         so the history cannot show that it had ended, however long that holder was frozen (a \
         program whose library renews in the background can say when: it reports each renewal, \
         `renewed` in workloads/PROTOCOL.md)"
            .to_string()
    } else {
        "of undecidable cause: no record bounds when the earlier holder's lease ended, so the \
         history cannot show it had ended"
            .to_string()
    }
}

fn fenced_with_tokens(model: &Model) -> bool {
    model
        .setup
        .as_ref()
        .is_some_and(|s| s.fencing == "on" && s.gives_tokens())
}

/// What the resource did with stale accesses, when it matters: always with fencing on, and
/// with fencing off when stale writes got through.
fn fence(model: &Model, results: &Results) -> Option<String> {
    let setup = model.setup.as_ref()?;
    let stale = results.stale_accesses.as_ref()?;
    let writes = count(stale.stale_writes, "stale write", "stale writes");
    // A client program's token is a promise: it counts only if a grant carried one.
    let reported = results
        .token_violations
        .as_ref()
        .is_none_or(|t| t.holds_with_token > 0);
    match (setup.fencing == "on", setup.gives_tokens() && reported) {
        (true, true) if stale.stale_writes == 0 && results.stale_reads_accepted == 0 => {
            fence_rejections(model, results).or_else(|| {
                Some("the fence was never tested: no stale access reached the resource".into())
            })
        }
        (true, true) => Some(format!(
            "the fence failed: it accepted {writes} and {} (and rejected {})",
            count(results.stale_reads_accepted, "stale read", "stale reads"),
            stale.rejected
        )),
        (true, false) if stale.stale_writes > 0 => Some(format!(
            "fencing was on, but {} gives no token to check: the resource accepted {writes}",
            setup.label()
        )),
        (true, false) => Some(format!(
            "fencing was on, but {} gives no token to check; no stale write reached the resource",
            setup.label()
        )),
        (false, _) if stale.stale_writes > 0 => Some(format!(
            "the resource accepted {writes} from {} already overtaken (fencing was off)",
            if stale.stale_writes == 1 {
                "a holder"
            } else {
                "holders"
            }
        )),
        (false, _) => None,
    }
}

/// "the fence held: it rejected 3 stale accesses (3 writes) and accepted none", when the fence
/// rejected any and let none through.
fn fence_rejections(model: &Model, results: &Results) -> Option<String> {
    let stale = results.stale_accesses.as_ref()?;
    if stale.rejected == 0 || stale.stale_writes > 0 || results.stale_reads_accepted > 0 {
        return None;
    }
    let rejected = |kind| {
        model
            .accesses
            .iter()
            .filter(|a| !a.accepted && a.kind == kind)
            .count()
    };
    let (writes, reads) = (rejected(AccessKind::Write), rejected(AccessKind::Read));
    let mut kinds = Vec::new();
    if writes > 0 {
        kinds.push(count(writes, "write", "writes"));
    }
    if reads > 0 {
        kinds.push(count(reads, "read", "reads"));
    }
    Some(format!(
        "the fence held: it rejected {} ({}) and accepted none",
        count(stale.rejected, "stale access", "stale accesses"),
        kinds.join(", ")
    ))
}

#[cfg(test)]
#[path = "headline_tests.rs"]
mod tests;
