//! Every violation of a run, numbered once for the whole page: the timeline marks each one and
//! links it to its row, and "More violations" lists them with their times, tokens and cause,
//! grouped by the fault windows that were active, so a pause that caused twelve overlaps reads
//! as one event with twelve rows rather than twelve identical lines.
//!
//! The order is the stories' order (stale writes, broken token promises, overlaps, stale reads),
//! so the i-th violation of a kind finds its story, when it has one, as the i-th story of that
//! kind. A run with more than [`LISTED`] violations lists and marks the first ones and says how
//! many more `results.json` holds: the page stays small however wrong the run went.

use std::collections::BTreeMap;

use lockpick_checkers::model::{AccessKind, AccessRecord, Hold, Model};
use lockpick_checkers::overlap_cause::OverlapCause;
use lockpick_checkers::story::{seconds, token, Story};
use lockpick_checkers::tokens::TokenBreach;
use lockpick_checkers::Results;
use maud::{html, Markup};

/// How many violations the page lists and marks one by one.
pub const LISTED: usize = 1500;

/// One violation, as the page shows it.
pub struct Violation<'a> {
    /// From 1, page-wide: the row is `violation-<number>`.
    pub number: usize,
    /// The story kind: `stale-write`, `token-reused`, `overlap`, ...
    pub kind: &'static str,
    pub from: u64,
    pub to: u64,
    /// The older holder and the newer one.
    pub older: &'a Hold,
    pub newer: &'a Hold,
    /// The stale access the resource accepted, for a stale access.
    pub access: Option<&'a AccessRecord>,
    /// For an overlap, its cause class.
    pub cause_class: Option<OverlapCause>,
    /// Why, in words.
    pub cause: String,
    /// The fault windows (by id) active from the older hold's start to the violation's end.
    pub faults: Vec<u64>,
    pub story: Option<&'a Story>,
}

impl Violation<'_> {
    /// The id of the element that marks it on the timeline.
    pub fn mark(&self) -> String {
        match (self.kind, self.access) {
            ("overlap", _) => format!("mark-{}", self.number),
            (_, Some(access)) => format!("op-{}", access.index),
            _ => format!("op-{}", self.newer.start_index),
        }
    }

    /// What happened, in a few words.
    pub fn what(&self) -> &'static str {
        match self.kind {
            "overlap" => "overlapping holders",
            "stale-write" => "stale write accepted",
            "stale-read" => "stale read accepted",
            "token-reused" => "token reused",
            "token-went-backwards" => "token went backwards",
            other => other,
        }
    }

    /// Who was involved, with their tokens.
    pub fn who(&self) -> String {
        let (a, b) = (self.older, self.newer);
        match self.access {
            Some(access) => format!(
                "client {} ({}) {} after client {} ({}) had accessed",
                a.process,
                token(a),
                match access.kind {
                    AccessKind::Write => "wrote",
                    AccessKind::Read => "read",
                },
                b.process,
                token(b)
            ),
            None => format!(
                "client {} ({}) and client {} ({})",
                a.process,
                token(a),
                b.process,
                token(b)
            ),
        }
    }
}

/// Every violation the checkers found, in the stories' order, at most [`LISTED`].
pub fn collect<'a>(model: &Model, results: &'a Results) -> Vec<Violation<'a>> {
    let mut found = Found {
        model,
        results,
        out: Vec::new(),
    };
    found.stale(AccessKind::Write);
    for (nth, v) in results
        .token_violations
        .iter()
        .flat_map(|t| &t.violations)
        .enumerate()
    {
        let kind = v.breach.name();
        let cause = match v.breach {
            TokenBreach::TokenReused => "the lock handed the same token to two holders",
            TokenBreach::TokenWentBackwards => "a later grant got a lower token",
        };
        found.push(Violation {
            kind,
            from: v.earlier.start,
            to: v.later.start,
            older: &v.earlier,
            newer: &v.later,
            access: None,
            cause_class: None,
            cause: cause.to_string(),
            faults: found.faults(v.earlier.start, v.later.start),
            story: found.story(kind, nth),
            number: 0,
        });
    }
    for (nth, o) in results
        .overlapping_holders
        .iter()
        .flat_map(|o| &o.overlaps)
        .enumerate()
    {
        found.push(Violation {
            kind: "overlap",
            from: o.from,
            to: o.to,
            older: &o.first,
            newer: &o.second,
            access: None,
            cause_class: Some(o.cause),
            cause: format!("{}: {}", o.cause.describe(), o.why),
            faults: found.faults(o.first.start, o.to),
            story: found.story("overlap", nth),
            number: 0,
        });
    }
    found.stale(AccessKind::Read);
    found.out
}

/// The violations found so far, and where to look the rest up.
struct Found<'m, 'a> {
    model: &'m Model,
    results: &'a Results,
    out: Vec<Violation<'a>>,
}

impl<'a> Found<'_, 'a> {
    fn push(&mut self, mut v: Violation<'a>) {
        if self.out.len() < LISTED {
            v.number = self.out.len() + 1;
            self.out.push(v);
        }
    }

    fn story(&self, kind: &str, nth: usize) -> Option<&'a Story> {
        let results: &'a Results = self.results;
        results.stories.iter().filter(|s| s.kind == kind).nth(nth)
    }

    fn faults(&self, from: u64, to: u64) -> Vec<u64> {
        let ids = self.model.faults_during(from, to).into_iter().map(|w| w.id);
        ids.collect()
    }

    fn stale(&mut self, kind: AccessKind) {
        let name = match kind {
            AccessKind::Write => "stale-write",
            AccessKind::Read => "stale-read",
        };
        let results: &'a Results = self.results;
        let stale = results.stale_accesses.iter().flat_map(|s| &s.violations);
        for (nth, v) in stale.filter(|v| v.access.kind == kind).enumerate() {
            if self.out.len() >= LISTED {
                return;
            }
            let cause = match (v.holder.token, self.fencing()) {
                (None, "on") => "fencing was on, but the lock gives no token to check",
                (Some(_), "off") => "the token would have stopped it: fencing was off",
                (None, _) => "the lock gives no token, and nothing else stopped it",
                _ => "the resource accepted an overtaken holder's access",
            };
            self.push(Violation {
                kind: name,
                from: v.overtaken_by.time,
                to: v.access.time,
                older: &v.holder,
                newer: &v.newer_holder,
                access: Some(&v.access),
                cause_class: None,
                cause: cause.to_string(),
                faults: self.faults(v.holder.start, v.access.time),
                story: self.story(name, nth),
                number: 0,
            });
        }
    }

    fn fencing(&self) -> &str {
        self.model.setup.as_ref().map_or("", |s| s.fencing.as_str())
    }
}

/// How many violations there are in all, listed or not.
pub fn total(results: &Results) -> usize {
    let stale = results
        .stale_accesses
        .as_ref()
        .map_or(0, |s| s.violations.len());
    let tokens = results
        .token_violations
        .as_ref()
        .map_or(0, |t| t.violations.len());
    let overlaps = results
        .overlapping_holders
        .as_ref()
        .map_or(0, |o| o.overlaps.len());
    stale + tokens + overlaps
}

/// "More violations": every listed violation, grouped by the fault windows active around it,
/// each row with its times, who with which token, and the cause; the first ones of each kind
/// fold out their story.
pub fn section(model: &Model, results: &Results, violations: &[Violation]) -> Markup {
    let mut groups: BTreeMap<&[u64], Vec<&Violation>> = BTreeMap::new();
    for v in violations {
        groups.entry(v.faults.as_slice()).or_default().push(v);
    }
    let mut groups: Vec<(&[u64], Vec<&Violation>)> = groups.into_iter().collect();
    groups.sort_by_key(|(_, vs)| vs.iter().map(|v| v.from).min());
    let unlisted = total(results).saturating_sub(violations.len());
    html! {
        div id="violations" {
            p {
                (violations.len()) " violation" @if violations.len() != 1 { "s" }
                ", grouped by the fault windows active from the older hold's start to the violation's end. "
                "Each number links to its mark on the timeline."
            }
            @for (faults, members) in &groups {
                @let first = members.first().map_or(0, |v| v.number);
                section class="violation-group" id={"group-" (first)} {
                    @let shared = shared_causes(members);
                    h3 { (group_title(model, faults)) ": " (counts(members)) }
                    @for (cause, n) in &shared {
                        p class="cause" { (n) " of them: " (cause) }
                    }
                    table class="violations" {
                        tr { th { "#" } th { "what" } th { "when" } th { "who" } th { "cause" } }
                        @for v in members {
                            tr id={"violation-" (v.number)} class=(v.kind) {
                                td { a href={"#" (v.mark())} { (v.number) } }
                                td { (v.what()) }
                                td { (when(v)) }
                                td { (v.who()) }
                                td {
                                    @if shared.iter().any(|(c, _)| *c == v.cause) { "as above" } @else { (v.cause) }
                                    @if let Some(story) = v.story {
                                        details {
                                            summary { "the story" }
                                            ol class="story" {
                                                @for step in &story.steps {
                                                    li class=[step.violation.then_some("violation")] { (step.text) }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if unlisted > 0 {
                p class="unlisted" {
                    "And " (unlisted) " more, not listed here to keep the page small: "
                    code { "results.json" } " holds every one."
                }
            }
        }
    }
}

/// The causes that more than one member of a group share, with how many share each: told
/// once above the rows rather than on every row.
fn shared_causes<'v>(members: &[&'v Violation]) -> Vec<(&'v str, usize)> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for v in members {
        *counts.entry(v.cause.as_str()).or_default() += 1;
    }
    counts.into_iter().filter(|(_, n)| *n > 1).collect()
}

fn when(v: &Violation) -> String {
    if v.from == v.to {
        return format!("at {}", seconds(v.to));
    }
    format!("{} to {}", seconds(v.from), seconds(v.to))
}

/// The fault windows of a group, in words: "during pause of client 2 (0.579 s to 2.685 s)".
fn group_title(model: &Model, faults: &[u64]) -> String {
    if faults.is_empty() {
        return "Outside any fault window".to_string();
    }
    let words: Vec<String> = faults
        .iter()
        .filter_map(|id| model.faults.iter().find(|w| w.id == *id))
        .map(|w| {
            let stop = w.stop.map_or("the end".to_string(), seconds);
            format!("{} ({} to {stop})", w.describe(), seconds(w.start))
        })
        .collect();
    format!("During {}", words.join(" and "))
}

/// A group's members counted by what they were and, for overlaps, by cause.
fn counts(members: &[&Violation]) -> String {
    let mut by_what: BTreeMap<String, usize> = BTreeMap::new();
    for v in members {
        let what = match v.cause_class {
            Some(cause) => format!("overlapping holders ({})", cause.describe()),
            None => v.what().to_string(),
        };
        *by_what.entry(what).or_default() += 1;
    }
    let parts: Vec<String> = by_what.iter().map(|(w, n)| format!("{n} × {w}")).collect();
    parts.join(", ")
}
