//! The holder timeline: one lane per client (every client the run had, holder or not), each
//! hold its own bar with visible ends, accesses as marks whose shapes differ (so they read in
//! grey print too), every fault window shaded and labelled with its targets, and every listed
//! violation marked and linked to its row in "More violations".
//!
//! Elements carry stable class names that the stylesheet colours and tests look for: `lane`
//! (`data-client` its number), `hold` (one per hold), `hold overlap`, `overlap-span` (one per
//! overlap, `id="mark-<n>"`), `lease-end`, `access` with `accepted` / `rejected` / `stale`,
//! `fault-window` / `fault` / `fault-label`, `leader-change` (`data-from` / `data-to` the old
//! and new leader's nodes) with its `leader-mark` and `leader-label`, and for long runs
//! `hold-run` and `access-run`.
//!
//! A long run stays small: the lanes are cut into columns (a pixel when there are few lanes,
//! wider with many, so lanes × columns stays under [`CELLS`]), and holds or accesses too
//! narrow to draw apart that fall in touching columns of one lane are drawn as one run, which
//! says how many it holds. Violations, their holds and their accesses are always drawn one by
//! one.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use lockpick_checkers::model::{Access, AccessKind, Hold, Model};
use lockpick_checkers::story::seconds;
use maud::{html, Markup};

use super::svg::{Scale, LABEL_ROWS};
use super::violations::Violation;

const LANE: f64 = 18.0;
/// At most this many columns over all lanes: what bounds a long run's drawing.
const CELLS: f64 = 8000.0;
/// A hold spanning fewer columns than this is merged with its neighbours, if it has any.
const NARROW: f64 = 3.0;

pub fn timeline(model: &Model, violations: &[Violation], clients: Option<u64>) -> Markup {
    let scale = Scale::of(model);
    let mut holds: BTreeMap<u64, Vec<&Hold>> = BTreeMap::new();
    for hold in &model.holds {
        holds.entry(hold.process).or_default().push(hold);
    }
    let mut accesses: BTreeMap<u64, Vec<&Access>> = BTreeMap::new();
    for access in &model.accesses {
        accesses.entry(access.process).or_default().push(access);
    }
    // A lane for every client the setup line names, even one that never held the lock; but
    // no more than a run can have: the page follows what the history holds, not what it claims.
    let claimed = clients
        .unwrap_or(0)
        .min(u64::from(crate::config::MAX_CLIENTS));
    let lanes: BTreeSet<u64> = (0..claimed)
        .chain(holds.keys().copied())
        .chain(accesses.keys().copied())
        .collect();
    let lane_count = lanes.len().max(1);
    let marks = Marks {
        scale: &scale,
        holds: &model.holds,
        cell: (lane_count as f64 * scale.width / CELLS).max(1.0),
        violating: violations
            .iter()
            .flat_map(|v| [v.older.acquisition.as_str(), v.newer.acquisition.as_str()])
            .collect(),
        overlapping: violations
            .iter()
            .filter(|v| v.kind == "overlap")
            .flat_map(|v| [v.older.acquisition.as_str(), v.newer.acquisition.as_str()])
            .collect(),
        stale: violations
            .iter()
            .filter_map(|v| Some((v.access?.index, v.number)))
            .collect(),
        ttl: model.setup.as_ref().map_or(0, |s| s.ttl_ms * 1_000_000),
    };
    let top = 14.0;
    let label_rows = model.faults.len().min(LABEL_ROWS) as f64;
    // Leader changes get a row of their own under the fault labels, when there are any.
    let leader_row = top + 10.0 * label_rows + 9.0;
    let leaders_moved = model
        .faults
        .iter()
        .any(|w| w.leadership_moved == Some(true));
    let lanes_top = leader_row + if leaders_moved { 5.0 } else { -5.0 };
    let bottom = lanes_top + LANE * lane_count as f64 + 4.0;
    let lane_y: HashMap<u64, f64> = lanes
        .iter()
        .enumerate()
        .map(|(i, p)| (*p, lanes_top + LANE * i as f64))
        .collect();
    let (start, end, x0, x1) = scale.range();
    html! {
        div class="scroll" {
            svg id="timeline" xmlns="http://www.w3.org/2000/svg" width=(scale.svg_width()) height=(bottom + 2.0)
                data-start=(start) data-end=(end) data-x0=(x0) data-x1=(x1) data-lanes=(lanes.len()) {
                (scale.faults(model, top, bottom))
                (scale.leader_changes(model, leader_row, top, bottom))
                (scale.axis(top, bottom))
                @for p in &lanes {
                    @let y = lane_y[p];
                    g class="lane" data-client=(p) {
                        rect class="lane-bg" x="0" y=(y) width=(scale.svg_width()) height=(LANE) {}
                        text class="lane-label" x="4" y=(y + 12.0) { "client " (p) }
                        @if !holds.contains_key(p) {
                            text class="lane-note" x=(x0 + 4.0) y=(y + 12.0) { "never held the lock" }
                        }
                        (marks.holds(holds.get(p).map_or(&[][..], Vec::as_slice), y))
                        (marks.accesses(accesses.get(p).map_or(&[][..], Vec::as_slice), y))
                    }
                }
                @for v in violations.iter().filter(|v| v.kind == "overlap") {
                    (overlap_span(&scale, v, lane_y[&v.older.process], lane_y[&v.newer.process]))
                }
            }
        }
    }
}

/// An overlap as a dark strip under both holders' bars, from its start to its end, linked to
/// its row.
fn overlap_span(scale: &Scale, v: &Violation, y_older: f64, y_newer: f64) -> Markup {
    let x = scale.x(v.from);
    let width = (scale.x(v.to) - x).max(2.0);
    let strip = |y: f64| format!("M{x},{}h{width}v3h-{width}z", y + 15.0);
    html! {
        a href={"#violation-" (v.number)} {
            path id=(v.mark()) class="overlap-span" d={(strip(y_older)) (strip(y_newer))} {
                title { "violation " (v.number) ": " (v.who()) " both held the lock from " (seconds(v.from)) " to " (seconds(v.to)) }
            }
        }
    }
}

/// What the checkers found, to mark on the timeline, and the columns things merge in.
struct Marks<'a> {
    scale: &'a Scale,
    /// The model's holds: an access names its acquisition by its hold's position.
    holds: &'a [Hold],
    /// A column's width, in px.
    cell: f64,
    /// Acquisitions in a listed violation: drawn one by one, whatever their size.
    violating: HashSet<&'a str>,
    overlapping: HashSet<&'a str>,
    /// Stale accesses by index, with their violation's number.
    stale: HashMap<u64, usize>,
    ttl: u64,
}

impl Marks<'_> {
    fn column(&self, t: u64) -> i64 {
        ((self.scale.x(t) - self.scale.range().2) / self.cell).floor() as i64
    }

    /// A lane's holds: each on its own if it is wide enough to see or in a violation; the
    /// narrow ones in touching columns as runs.
    fn holds(&self, holds: &[&Hold], lane_y: f64) -> Markup {
        let mut alone: Vec<&Hold> = Vec::new();
        let mut narrow: Vec<&Hold> = Vec::new();
        for hold in holds {
            let span = (self.scale.x(hold.end) - self.scale.x(hold.start)) / self.cell;
            if span >= NARROW || self.violating.contains(hold.acquisition.as_str()) {
                alone.push(hold);
            } else {
                narrow.push(hold);
            }
        }
        let runs = runs(&narrow, |h| (self.column(h.start), self.column(h.end)));
        html! {
            @for hold in alone { (self.hold(hold, lane_y)) }
            @for run in runs {
                @if run.len() == 1 {
                    (self.hold(run[0], lane_y))
                } @else {
                    @let (from, to) = (run[0].start, run.iter().map(|h| h.end).max().unwrap_or(0));
                    @let x = self.scale.x(from);
                    rect class="hold-run" x=(x) y=(lane_y + 3.0) width=((self.scale.x(to) - x).max(1.0)) height="12" data-holds=(run.len()) {
                        title { (run.len()) " holds from " (seconds(from)) " to " (seconds(to)) ", too short to draw apart" }
                    }
                }
            }
        }
    }

    /// A hold's bar: outlined, rounded, and two pixels short of its end, so back-to-back holds
    /// of one client stay two bars.
    fn hold(&self, hold: &Hold, lane_y: f64) -> Markup {
        let x1 = self.scale.x(hold.start);
        let width = (self.scale.x(hold.end) - x1 - 2.0).max(1.0);
        let class = if self.overlapping.contains(hold.acquisition.as_str()) {
            "hold overlap"
        } else {
            "hold"
        };
        let token = lockpick_checkers::story::token(hold);
        let lease_end = hold
            .lease
            .and_then(|l| l.expires_by)
            .unwrap_or(hold.start + self.ttl);
        html! {
            rect id={"op-" (hold.start_index)} class=(class) x=(x1) y=(lane_y + 3.0) width=(width) height="12" rx="2" {
                title {
                    "client " (hold.process) " acquisition " (hold.acquisition) " (" (token) ") held from "
                    (seconds(hold.start)) " to " (seconds(hold.end))
                }
            }
            @if let (true, Some(t)) = (width > 45.0, hold.token) {
                text class="token" x=(x1 + 2.0) y=(lane_y + 13.0) { (t) }
            }
            @if lease_end > hold.start && hold.end > lease_end {
                @let x = self.scale.x(lease_end);
                line class="lease-end" x1=(x) y1=(lane_y + 1.0) x2=(x) y2=(lane_y + 17.0) {
                    title { "lease ran out" }
                }
            }
        }
    }

    /// A lane's accesses: stale ones and those of violating holds one by one; the others, by
    /// outcome, one by one when alone in their columns and as runs when not.
    fn accesses(&self, accesses: &[&Access], lane_y: f64) -> Markup {
        let mut alone: Vec<&Access> = Vec::new();
        let mut by_outcome: [Vec<&Access>; 2] = [Vec::new(), Vec::new()];
        for access in accesses {
            if self.stale.contains_key(&access.index)
                || self
                    .violating
                    .contains(self.holds[access.hold as usize].acquisition.as_str())
            {
                alone.push(access);
            } else {
                by_outcome[usize::from(access.accepted)].push(access);
            }
        }
        let mut runs_of: Vec<Vec<&Access>> = Vec::new();
        for outcome in &by_outcome {
            runs_of.extend(runs(outcome, |a| {
                (self.column(a.time), self.column(a.time))
            }));
        }
        html! {
            @for access in alone { (self.access(access, lane_y)) }
            @for run in runs_of {
                @if run.len() == 1 {
                    (self.access(run[0], lane_y))
                } @else {
                    @let (from, to) = (run[0].time, run[run.len() - 1].time);
                    @let outcome = if run[0].accepted { "accepted" } else { "rejected by fencing" };
                    @let x = self.scale.x(from);
                    rect class={"access-run " (if run[0].accepted { "accepted" } else { "rejected" })}
                        x=(x - 0.75) y=(lane_y + 1.0) width=((self.scale.x(to) - x).max(0.0) + 1.5) height="16" data-accesses=(run.len()) {
                        title { (run.len()) " accesses " (outcome) " from " (seconds(from)) " to " (seconds(to)) }
                    }
                }
            }
        }
    }

    /// An access: a thin tick if accepted, a cross if fencing rejected it, a pin if it was
    /// stale and accepted anyway (linked to its violation's row).
    fn access(&self, access: &Access, lane_y: f64) -> Markup {
        let x = self.scale.x(access.time);
        let kind = match access.kind {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
        };
        let stale = self.stale.get(&access.index);
        let (class, outcome, shape) = if stale.is_some() {
            let pin = format!("M{},{lane_y}h8l-3,5v11h-2v-11z", x - 4.0);
            ("access stale", "stale, accepted", pin)
        } else if !access.accepted {
            let cross = format!("M{},{}l7,9m0,-9l-7,9", x - 3.5, lane_y + 4.5);
            ("access rejected", "rejected by fencing", cross)
        } else {
            let tick = format!("M{},{}h1.5v16h-1.5z", x - 0.75, lane_y + 1.0);
            ("access accepted", "accepted", tick)
        };
        let mark = html! {
            path id={"op-" (access.index)} class=(class) d=(shape) {
                title { (kind) " by client " (access.process) " at " (seconds(access.time)) ": " (outcome) }
            }
        };
        html! {
            @match stale {
                Some(n) => { a href={"#violation-" (n)} { (mark) } }
                None => { (mark) }
            }
        }
    }
}

/// `items` (in order of their first column) gathered into runs whose columns touch.
fn runs<'a, T>(items: &[&'a T], columns: impl Fn(&T) -> (i64, i64)) -> Vec<Vec<&'a T>> {
    let mut out: Vec<Vec<&'a T>> = Vec::new();
    let mut last = i64::MIN;
    for item in items {
        let (first, end) = columns(item);
        match out.last_mut() {
            Some(run) if first <= last.saturating_add(1) => {
                run.push(item);
                last = last.max(end);
            }
            _ => {
                out.push(vec![item]);
                last = end;
            }
        }
    }
    out
}

/// The timeline's key, drawn with the timeline's own shapes.
pub fn legend() -> Markup {
    let swatch = |class: &str, shape: &str, words: &str| {
        html! {
            span {
                svg class="swatch" width="14" height="18" viewBox="0 0 14 18" {
                    path class=(class) d=(shape) {}
                }
                " " (words)
            }
        }
    };
    html! {
        p class="legend" {
            (swatch("hold", "M1,3h12v12h-12z", "hold (token)"))
            (swatch("hold overlap", "M1,3h12v12h-12z", "hold in an overlap"))
            (swatch("overlap-span", "M0,14h14v3h-14z", "both held it"))
            (swatch("lease-end", "M7,1v16", "lease runs out"))
            (swatch("access accepted", "M6.25,1h1.5v16h-1.5z", "access accepted"))
            (swatch("access rejected", "M3.5,4.5l7,9m0,-9l-7,9", "rejected by fencing"))
            (swatch("access stale", "M3,0h8l-3,5v11h-2v-11z", "stale, accepted"))
            (swatch("fault", "M0,0h14v18h-14z", "fault window"))
            (swatch("leader-mark", "M7,0v18", "leader changed (old → new)"))
            (swatch("hold-run", "M1,3h12v12h-12z", "holds too short to draw apart"))
        }
    }
}
