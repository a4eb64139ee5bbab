//! The drawings of a report, as plain SVG: the latency and throughput charts and what they share
//! with the holder timeline (`timeline.rs`). All three use one [`Scale`]: the same time range,
//! plot area and fault shading, which each `svg` states in `data-start` / `data-end` (ns of run
//! time) and `data-x0` / `data-x1` (the plot's left and right edges), so a reader can look
//! straight down from a fault to what it did to latency, and a test can check that they agree.
//!
//! Sizes stay bounded at any history length: the width is capped, and what falls in one column
//! is drawn once (latency as percentile bands, throughput in wider bins, fault shading merged
//! in the charts). The timeline alone draws every fault window on its own, with its label.

use lockpick_checkers::leadership::Leader;
use lockpick_checkers::model::Model;
use lockpick_checkers::story::seconds;
use maud::{html, Markup};

use super::human_units::human_duration;

/// Room for the lane labels and the charts' y labels.
pub const LEFT: f64 = 90.0;
/// Fault labels stack in this many rows above the lanes, so neighbours do not collide.
pub const LABEL_ROWS: usize = 3;
const SECOND: u64 = 1_000_000_000;
/// A chart's plot area, top to bottom.
const CHART_TOP: f64 = 15.0;
const CHART_BOTTOM: f64 = 165.0;
/// Below this many acquisitions, latency is drawn point by point.
pub const POINTS: usize = 2000;
/// The narrowest latency column and throughput bar, in px.
const LATENCY_COLUMN: f64 = 3.0;
const BAR: f64 = 3.0;

/// Maps run time to x. Every drawing of a report uses the same one.
pub struct Scale {
    pub end: u64,
    pub width: f64,
}

impl Scale {
    /// About 100 px a second, within what a browser draws quickly.
    pub fn of(model: &Model) -> Scale {
        Scale {
            end: model.end.max(1),
            width: (model.end as f64 / 1e7).clamp(1200.0, 4000.0),
        }
    }

    pub fn x(&self, t: u64) -> f64 {
        let x = LEFT + t.min(self.end) as f64 / self.end as f64 * self.width;
        (x * 10.0).round() / 10.0
    }

    /// Pixels per nanosecond.
    pub fn per_ns(&self) -> f64 {
        self.width / self.end as f64
    }

    pub fn svg_width(&self) -> f64 {
        LEFT + self.width + 20.0
    }

    /// The time range and the plot's edges, as the `svg` element's data attributes say them.
    pub fn range(&self) -> (u64, u64, f64, f64) {
        (0, self.end, LEFT, LEFT + self.width)
    }

    /// Second marks, labelled above `top`, with lines down to `bottom`.
    pub fn axis(&self, top: f64, bottom: f64) -> Markup {
        let total = self.end as f64 / 1e9;
        let step = [
            1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0,
        ]
        .into_iter()
        .find(|s| total / s <= 30.0)
        // Whole hours beyond: never more than 30 marks, however long the history says it ran.
        .unwrap_or_else(|| (total / 30.0 / 3600.0).ceil() * 3600.0);
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

    /// Every fault window on its own, shaded from `top` to `bottom` and labelled with what it
    /// was and to whom, in rows from `top` down: the label is printed, not only a tooltip.
    pub fn faults(&self, model: &Model, top: f64, bottom: f64) -> Markup {
        html! {
            @for (i, w) in model.faults.iter().enumerate() {
                @let stop = w.stop.unwrap_or(model.end);
                @let x1 = self.x(w.start);
                @let width = (self.x(stop) - x1).max(1.0);
                @let label = w.describe();
                g class="fault-window" id={"fault-" (w.id)} data-targets=(lockpick_checkers::fault::targets_text(&w.targets)) {
                    rect class="fault" x=(x1) y=(top) width=(width) height=(bottom - top) {
                        title { (label) " from " (seconds(w.start)) " to " (seconds(stop)) }
                    }
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

    /// Every fault whose stop says leadership moved (`leadership_moved: true`), marked at its
    /// stop from `top` to `bottom` and labelled, on the row at `label_y`, with the old and the
    /// new leader's nodes ("n1 → n2"; "?" for one not recorded).
    pub fn leader_changes(&self, model: &Model, label_y: f64, top: f64, bottom: f64) -> Markup {
        let moved = model
            .faults
            .iter()
            .filter(|w| w.leadership_moved == Some(true))
            .filter_map(|w| Some((w, w.stop?)));
        let node = |l: Option<&Leader>| l.map_or("?".to_string(), |l| l.node.clone());
        let whole =
            |l: Option<&Leader>| l.map_or("an unrecorded leader".to_string(), Leader::describe);
        html! {
            @for (w, stop) in moved {
                @let x = self.x(stop);
                @let (from, to) = (node(w.leader.as_ref()), node(w.leader_after.as_ref()));
                @let label = format!("{from} → {to}");
                g class="leader-change" data-fault=(w.id) data-from=(from) data-to=(to) {
                    line class="leader-mark" x1=(x) y1=(top) x2=(x) y2=(bottom) {
                        title {
                            "leadership moved from " (whole(w.leader.as_ref())) " to "
                            (whole(w.leader_after.as_ref())) " in the " (w.describe())
                            ", named at " (seconds(stop))
                        }
                    }
                    @if x + 2.0 + 6.0 * label.chars().count() as f64 > self.svg_width() {
                        text class="leader-label" x=(x - 2.0) y=(label_y) text-anchor="end" { (label) }
                    } @else {
                        text class="leader-label" x=(x + 2.0) y=(label_y) { (label) }
                    }
                }
            }
        }
    }

    /// The fault windows as the charts shade them: the same x ranges as the timeline's, merged
    /// where they touch, so many faults stay few shapes.
    fn fault_shading(&self, model: &Model, top: f64, bottom: f64) -> Markup {
        let mut spans: Vec<(f64, f64)> = model
            .faults
            .iter()
            .map(|w| {
                let x1 = self.x(w.start);
                (x1, (self.x(w.stop.unwrap_or(model.end)) - x1).max(1.0) + x1)
            })
            .collect();
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::new();
        for (x1, x2) in spans {
            match merged.last_mut() {
                Some(last) if x1 <= last.1 => last.1 = last.1.max(x2),
                _ => merged.push((x1, x2)),
            }
        }
        html! {
            @for (x1, x2) in merged {
                rect class="fault" x=(x1) y=(top) width=(((x2 - x1) * 10.0).round() / 10.0) height=(bottom - top) {}
            }
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
    (step, top_value): (f64, f64),
    label: impl Fn(f64) -> String,
    body: Markup,
) -> Markup {
    let (top, bottom) = (CHART_TOP, CHART_BOTTOM);
    let marks = (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= top_value * 1.0001);
    let (start, end, x0, x1) = scale.range();
    html! {
        div class="scroll" {
            svg id=(id) xmlns="http://www.w3.org/2000/svg" width=(scale.svg_width()) height=(bottom + 10.0)
                data-start=(start) data-end=(end) data-x0=(x0) data-x1=(x1) {
                (scale.fault_shading(model, top, bottom))
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

/// Each successful acquire's latency (from its invoke to its `ok`) at the time it completed:
/// point by point in a short run; in a long one, per column, a light band from the fastest to
/// the slowest and a dark band from the median to the 99th percentile.
pub fn latency(model: &Model) -> Markup {
    let scale = Scale::of(model);
    let mut points: Vec<(u64, u64)> = model
        .holds
        .iter()
        .map(|h| (h.start, h.start.saturating_sub(h.invoked)))
        .collect();
    points.sort_unstable();
    let mut latencies: Vec<u64> = points.iter().map(|p| p.1).collect();
    latencies.sort_unstable();
    let p99 = percentile(&latencies, 0.99) as f64;
    let axis = y_steps(p99 * 1.2, false);
    let y = |l: u64| chart_y(l as f64, axis.1).round();
    let body = if points.len() <= POINTS {
        html! {
            @for (t, l) in &points {
                rect class="point" x=(scale.x(*t)) y=(y(*l)) width="3" height="3" {}
            }
        }
    } else {
        let column_ns = (LATENCY_COLUMN / scale.per_ns()).ceil().max(1.0) as u64;
        let bands: Vec<(f64, Vec<u64>)> = points
            .chunk_by(|a, b| a.0 / column_ns == b.0 / column_ns)
            .map(|column| {
                let mut ls: Vec<u64> = column.iter().map(|p| p.1).collect();
                ls.sort_unstable();
                (scale.x(column[0].0 / column_ns * column_ns), ls)
            })
            .collect();
        html! {
            @for (x, ls) in &bands {
                @let (low, high) = (y(ls[0]), y(ls[ls.len() - 1]));
                @let (median, p99) = (y(percentile(ls, 0.5)), y(percentile(ls, 0.99)));
                rect class="band range" x=(x) y=(high) width=(LATENCY_COLUMN) height=((low - high).max(1.0)) {}
                rect class="band middle" x=(x) y=(p99) width=(LATENCY_COLUMN) height=((median - p99).max(1.0)) {}
            }
        }
    };
    chart(
        "latency",
        &scale,
        model,
        axis,
        |v| human_duration(v as u64),
        body,
    )
}

/// The `q` quantile of sorted values (0 for none).
fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Successful acquisitions per second, in bins of whole seconds at least [`BAR`] px wide.
pub fn throughput(model: &Model) -> Markup {
    let scale = Scale::of(model);
    let px_per_second = scale.per_ns() * SECOND as f64;
    let seconds_per_bin = [1u64, 2, 5, 10, 30, 60, 300, 600, 1800, 3600]
        .into_iter()
        .find(|s| *s as f64 * px_per_second >= BAR)
        .unwrap_or(7200);
    let bin = seconds_per_bin * SECOND;
    let mut counts = vec![0u64; (model.end / bin + 1) as usize];
    for hold in &model.holds {
        counts[(hold.start.min(model.end) / bin) as usize] += 1;
    }
    let rates: Vec<f64> = counts
        .iter()
        .map(|c| *c as f64 / seconds_per_bin as f64)
        .collect();
    let max = rates.iter().copied().fold(0.0, f64::max);
    let axis = y_steps(max, true);
    let body = html! {
        @for (i, rate) in rates.iter().enumerate() {
            @let start = i as u64 * bin;
            @let x = scale.x(start);
            @let width = (scale.x(start + bin) - x - 1.0).max(1.0);
            @let y = chart_y(*rate, axis.1);
            rect class="bar" x=(x) y=(y) height=(CHART_BOTTOM - y) width=(width) {
                title { (counts[i]) " acquisitions from " (human_duration(start)) " to " (human_duration((start + bin).min(model.end))) }
            }
        }
    };
    chart(
        "throughput",
        &scale,
        model,
        axis,
        |v| format!("{v}/s"),
        body,
    )
}

#[cfg(test)]
#[path = "svg_tests.rs"]
mod tests;
