//! The drawings of a report, as plain SVG: the holder timeline and the latency and throughput
//! charts. All three share one time axis (the same range, width and fault shading), so a reader
//! can look straight down from a fault to what it did to latency.
//!
//! Elements carry stable class names that the stylesheet colours and tests look for: `lane`
//! (one per client, holder or not, `data-client` its number), `hold` (one per hold, never
//! merged), `overlap`, `lease-end`, `access` with `accepted` / `rejected` / `stale` (each its
//! own shape, so they differ in print too), `fault` and `fault-label`. Long runs stay usable:
//! the drawing is at most a few thousand pixels wide and every element is small.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use lockpick_checkers::model::{Access, AccessKind, Hold, Model};
use lockpick_checkers::story::seconds;
use lockpick_checkers::{Op, Results};
use maud::{html, Markup};

use super::metrics::human_duration;
use super::metrics::{acquire_latencies, acquire_latency_percentile, acquisitions_per_second};

/// Room for the lane labels and the charts' y labels.
const LEFT: f64 = 90.0;
const LANE: f64 = 18.0;
/// Fault labels stack in this many rows above the lanes, so neighbours do not collide.
const LABEL_ROWS: usize = 3;
const SECOND: u64 = 1_000_000_000;
/// A chart's plot area, top to bottom.
const CHART_TOP: f64 = 15.0;
const CHART_BOTTOM: f64 = 165.0;

/// Maps run time to x. Every drawing of a report uses the same one.
pub struct Scale {
    end: u64,
    width: f64,
}

impl Scale {
    /// About 100 px a second, within what a browser draws quickly.
    pub fn of(model: &Model) -> Scale {
        Scale {
            end: model.end.max(1),
            width: (model.end as f64 / 1e7).clamp(800.0, 6000.0),
        }
    }

    fn x(&self, t: u64) -> f64 {
        let x = LEFT + t.min(self.end) as f64 / self.end as f64 * self.width;
        (x * 10.0).round() / 10.0
    }

    fn svg_width(&self) -> f64 {
        LEFT + self.width + 20.0
    }

    /// Second marks, labelled above `top`, with lines down to `bottom`.
    fn axis(&self, top: f64, bottom: f64) -> Markup {
        let total = self.end as f64 / 1e9;
        let step = [1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0]
            .into_iter()
            .find(|s| total / s <= 30.0)
            .unwrap_or(600.0);
        let marks = (0..).map(|i| i as f64 * step).take_while(|s| *s <= total);
        html! {
            g class="axis" {
                @for s in marks {
                    @let x = self.x((s * 1e9) as u64);
                    line class="tick" x1=(x) y1=(top) x2=(x) y2=(bottom) {}
                    text x=(x) y=(top - 3.0) { (human_duration((s * 1e9) as u64)) }
                }
            }
        }
    }

    /// The fault windows shaded from `top` to `bottom`; with `labels`, each says what it was
    /// and to whom, in rows from `top` down.
    fn faults(&self, model: &Model, top: f64, bottom: f64, labels: bool) -> Markup {
        html! {
            @for (i, w) in model.faults.iter().enumerate() {
                @let stop = w.stop.unwrap_or(model.end);
                @let x1 = self.x(w.start);
                @let width = (self.x(stop) - x1).max(1.0);
                rect class="fault" x=(x1) y=(top) width=(width) height=(bottom - top) {
                    title { (w.describe()) " from " (seconds(w.start)) " to " (seconds(stop)) }
                }
                @if labels {
                    @let label = w.describe();
                    @let y = top + 9.0 + 10.0 * (i % LABEL_ROWS) as f64;
                    // About 6 px a character: a label that would run off the right edge ends there.
                    @if x1 + 2.0 + 6.0 * label.chars().count() as f64 > self.svg_width() {
                        text class="fault-label" x=(self.svg_width() - 2.0) y=(y) text-anchor="end" { (label) }
                    } @else {
                        text class="fault-label" x=(x1 + 2.0) y=(y) { (label) }
                    }
                }
            }
        }
    }
}

/// The holder timeline: one lane per client (every client the setup line counts, and any
/// other the history shows), each hold its own bar, accesses as marks, faults shaded and named.
pub fn timeline(model: &Model, results: &Results, clients: Option<u64>) -> Markup {
    let scale = Scale::of(model);
    let mut holds: BTreeMap<u64, Vec<&Hold>> = BTreeMap::new();
    for hold in &model.holds {
        holds.entry(hold.process).or_default().push(hold);
    }
    let mut accesses: BTreeMap<u64, Vec<&Access>> = BTreeMap::new();
    for access in &model.accesses {
        accesses.entry(access.process).or_default().push(access);
    }
    let lanes: BTreeSet<u64> = (0..clients.unwrap_or(0))
        .chain(holds.keys().copied())
        .chain(accesses.keys().copied())
        .collect();
    let marks = Marks {
        overlapping: results
            .overlapping_holders
            .iter()
            .flat_map(|o| o.overlaps.iter())
            .flat_map(|o| [o.first.acquisition.as_str(), o.second.acquisition.as_str()])
            .collect(),
        stale: results
            .stale_accesses
            .iter()
            .flat_map(|s| s.violations.iter().map(|v| v.access.index))
            .collect(),
        ttl: model.setup.as_ref().map_or(0, |s| s.ttl_ms * 1_000_000),
    };
    let top = 14.0;
    let label_rows = model.faults.len().min(LABEL_ROWS) as f64;
    let lanes_top = top + 10.0 * label_rows + 4.0;
    let bottom = lanes_top + LANE * lanes.len().max(1) as f64 + 4.0;
    html! {
        div class="scroll" {
            svg id="timeline" xmlns="http://www.w3.org/2000/svg" width=(scale.svg_width()) height=(bottom + 2.0) {
                (scale.faults(model, top, bottom, true))
                (scale.axis(top, bottom))
                @for (i, p) in lanes.iter().enumerate() {
                    @let y = lanes_top + LANE * i as f64;
                    g class="lane" data-client=(p) {
                        rect class="lane-bg" x="0" y=(y) width=(scale.svg_width()) height=(LANE) {}
                        text class="lane-label" x="4" y=(y + 12.0) { "client " (p) }
                        @for hold in holds.get(p).into_iter().flatten() {
                            (marks.hold(&scale, hold, y))
                        }
                        @for access in accesses.get(p).into_iter().flatten() {
                            (marks.access(&scale, access, y))
                        }
                    }
                }
            }
        }
    }
}

/// What the checkers found, to mark on the timeline.
struct Marks<'a> {
    overlapping: HashSet<&'a str>,
    stale: HashSet<u64>,
    ttl: u64,
}

impl Marks<'_> {
    /// A hold's bar: outlined, rounded, and two pixels short of its end, so back-to-back holds
    /// of one client stay two bars.
    fn hold(&self, scale: &Scale, hold: &Hold, lane_y: f64) -> Markup {
        let x1 = scale.x(hold.start);
        let width = (scale.x(hold.end) - x1 - 2.0).max(1.0);
        let class = if self.overlapping.contains(hold.acquisition.as_str()) {
            "hold overlap"
        } else {
            "hold"
        };
        let token = lockpick_checkers::story::token(hold);
        let lease_end = hold.start + self.ttl;
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
            @if self.ttl > 0 && hold.end > lease_end {
                @let x = scale.x(lease_end);
                line class="lease-end" x1=(x) y1=(lane_y + 1.0) x2=(x) y2=(lane_y + 17.0) {
                    title { "lease ran out" }
                }
            }
        }
    }

    /// An access: a thin tick if accepted, a cross if fencing rejected it, a pin if it was
    /// stale and accepted anyway.
    fn access(&self, scale: &Scale, access: &Access, lane_y: f64) -> Markup {
        let x = scale.x(access.time);
        let kind = match access.kind {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
        };
        let (class, outcome, shape) = if self.stale.contains(&access.index) {
            let pin = format!("M{},{lane_y}h8l-3,5v11h-2v-11z", x - 4.0);
            ("access stale", "stale, accepted", pin)
        } else if !access.accepted {
            let cross = format!("M{},{}l6,8m0,-8l-6,8", x - 3.0, lane_y + 5.0);
            ("access rejected", "rejected by fencing", cross)
        } else {
            let tick = format!("M{},{}h1.5v16h-1.5z", x - 0.75, lane_y + 1.0);
            ("access accepted", "accepted", tick)
        };
        html! {
            path id={"op-" (access.index)} class=(class) d=(shape) {
                title { (kind) " by client " (access.process) " at " (seconds(access.time)) ": " (outcome) }
            }
        }
    }
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
            (swatch("lease-end", "M7,1v16", "lease runs out"))
            (swatch("access accepted", "M6.25,1h1.5v16h-1.5z", "access accepted"))
            (swatch("access rejected", "M4,5l6,8m0,-8l-6,8", "rejected by fencing"))
            (swatch("access stale", "M3,0h8l-3,5v11h-2v-11z", "stale, accepted"))
            (swatch("fault", "M0,0h14v18h-14z", "fault window"))
        }
    }
}

/// Round steps for a y axis from 0 to at least `max`: (step, top).
fn y_steps(max: f64, whole: bool) -> (f64, f64) {
    let max = if max > 0.0 { max } else { 1.0 };
    let rough = max / 4.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let mut step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * magnitude);
    if whole {
        step = step.ceil().max(1.0);
    }
    (step, (max / step).ceil() * step)
}

/// Where `value` sits on a chart whose y axis runs from 0 to `top_value`; higher values stay
/// at the top.
fn chart_y(value: f64, top_value: f64) -> f64 {
    CHART_BOTTOM - (value / top_value).min(1.0) * (CHART_BOTTOM - CHART_TOP)
}

/// A chart's frame on the shared time axis, with y marks labelled by `label`.
fn chart(
    id: &str,
    scale: &Scale,
    model: &Model,
    step: f64,
    top_value: f64,
    label: impl Fn(f64) -> String,
    body: Markup,
) -> Markup {
    let (top, bottom) = (CHART_TOP, CHART_BOTTOM);
    let marks = (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= top_value * 1.0001);
    html! {
        div class="scroll" {
            svg id=(id) xmlns="http://www.w3.org/2000/svg" width=(scale.svg_width()) height=(bottom + 10.0) {
                (scale.faults(model, top, bottom, false))
                (scale.axis(top, bottom))
                g class="y-axis" {
                    @for v in marks {
                        @let y = chart_y(v, top_value);
                        line class="grid" x1=(LEFT) y1=(y) x2=(LEFT + scale.width) y2=(y) {}
                        text class="y-label" x=(LEFT - 4.0) y=(y + 3.0) { (label(v)) }
                    }
                }
                (body)
            }
        }
    }
}

/// Each successful acquire's latency at the time it completed.
pub fn latency(ops: &[Op], model: &Model) -> Markup {
    let scale = Scale::of(model);
    let p99 = acquire_latency_percentile(ops, 0.99).unwrap_or(0) as f64;
    let (step, top_value) = y_steps(p99 * 1.2, false);
    let points = acquire_latencies(ops);
    let body = html! {
        @for (t, l) in points {
            rect class="point" x=(scale.x(t)) y=(chart_y(l as f64, top_value).round()) width="2" height="2" {}
        }
    };
    chart(
        "latency",
        &scale,
        model,
        step,
        top_value,
        |v| human_duration(v as u64),
        body,
    )
}

/// Successful acquisitions in each second.
pub fn throughput(ops: &[Op], model: &Model) -> Markup {
    let scale = Scale::of(model);
    let bins = acquisitions_per_second(ops, model.end);
    let max = bins.iter().copied().max().unwrap_or(0) as f64;
    let (step, top_value) = y_steps(max, true);
    let body = html! {
        @for (i, count) in bins.iter().enumerate() {
            @let start = i as u64 * SECOND;
            @let x = scale.x(start);
            @let width = (scale.x(start + SECOND) - x - 1.0).max(1.0);
            @let y = chart_y(*count as f64, top_value);
            rect class="bar" x=(x) y=(y) height=(CHART_BOTTOM - y) width=(width) {
                title { (count) " acquisitions in second " (i) }
            }
        }
    };
    chart(
        "throughput",
        &scale,
        model,
        step,
        top_value,
        |v| format!("{v}/s"),
        body,
    )
}

#[cfg(test)]
#[path = "svg_tests.rs"]
mod tests;
