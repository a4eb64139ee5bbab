//! The headline under the verdict: one sentence per finding a reader must not miss, so that a
//! red "invalid" never hides what matters (for a fenced lock: that the fence held) and an
//! "unknown" always says why the run is not proven.

use lockpick_checkers::checks::Sentence;
use lockpick_checkers::model::Model;
use lockpick_checkers::words::{capitalised, count};
use lockpick_checkers::{Results, Validity};
use maud::{html, Markup};

pub fn render(model: &Model, results: &Results) -> Markup {
    html! {
        div id="headline" {
            @for finding in findings(model, results) {
                p class="finding" data-finding=(finding.kind) { (finding.text) "." }
            }
        }
    }
}

/// The headline's sentences, most important first, each with the kind of finding it tells:
/// each checker's (`overlap`, `fence`, `tokens`, `jam`, `unavailable`, `stale-reads`, ...) and
/// the headline's own (`contradicted`, `unproven`, `valid`).
pub fn findings(model: &Model, results: &Results) -> Vec<Sentence> {
    let checkers = results.checkers();
    let valid = results.valid == Validity::Valid;
    // A valid run's fence is told in the valid sentence below, and only when it held.
    let mut out: Vec<Sentence> = checkers
        .iter()
        .flat_map(|c| c.headline(model))
        .filter(|s| !(valid && s.kind == "fence"))
        .collect();
    // Told, not a verdict: no verdict rests on the reported bounds (see `lease_claims`).
    if let Some(note) = results.lease_claims.as_ref().and_then(|c| c.note()) {
        out.push(Sentence::new("contradicted", capitalised(&note)));
    }
    out.extend(checkers.iter().flat_map(|c| c.footnotes(model)));
    let prefix = match results.valid {
        Validity::Unknown => "not proven: ",
        _ => "note: ",
    };
    for reason in &results.unknown_reasons {
        out.push(Sentence::new("unproven", format!("{prefix}{reason}")));
    }
    if results.valid == Validity::Valid {
        let holds = results.overlapping_holders.as_ref().map_or(0, |o| o.holds);
        let mut text = format!(
            "No violation: {} never overlapped, and the resource accepted no stale write",
            count(holds, "hold", "holds")
        );
        let stale = results.stale_accesses.as_ref();
        if let Some(fence) = stale.and_then(|s| s.fence_held(model)) {
            text = format!("{text}; {fence}");
        }
        out.insert(0, Sentence::new("valid", text));
    }
    out
}

#[cfg(test)]
#[path = "headline_tests.rs"]
mod tests;
