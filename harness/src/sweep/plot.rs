//! The sweep's plots as SVG (plotters): one line per lock × fencing mode, the swept knob on the
//! x axis (its ratio to the TTL where it is read against the TTL, with the line where the two
//! are equal drawn), a measure of the points on the y axis.

use plotters::prelude::*;

use super::outcome::Outcome;
use super::stats::PointStats;

/// What one plot shows on its y axis.
pub struct Measure {
    /// The plot's title and y axis name.
    pub title: &'static str,
    /// The file it is also written to, beside `sweep.html` (for a book or a comment).
    pub file: &'static str,
    pub y_axis: &'static str,
    /// The point's value, `None` where it has none (no decided run, no fault hit a holder):
    /// such a point is not drawn, and its line is broken there.
    pub of: fn(&PointStats) -> Option<f64>,
    /// Whether the axis is a share, from 0 to 1.
    pub share: bool,
}

/// The plots of `sweep.html`, in order.
pub static MEASURES: &[Measure] = &[
    Measure {
        title: "Runs with overlapping holders",
        file: "overlaps.svg",
        y_axis: "share of runs with overlapping holders",
        of: |s| s.overlap_share,
        share: true,
    },
    Measure {
        title: "Runs with stale writes the resource accepted",
        file: "stale-writes.svg",
        y_axis: "share of runs with accepted stale writes",
        of: |s| s.stale_share,
        share: true,
    },
    Measure {
        title: "Time to the next grant after a fault on the holder",
        file: "next-grant.svg",
        y_axis: "mean time to the next grant (s)",
        of: |s| s.next_grant_mean_s,
        share: false,
    },
];

/// Colours of the lines, in the order of the series.
const COLOURS: [RGBColor; 6] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

/// The x axis's name.
pub fn x_axis(outcome: &Outcome) -> String {
    let knob = outcome.knob;
    match (knob.against_ttl, knob.unit) {
        (true, _) => format!("{} / TTL", knob.about),
        (false, super::knob::Unit::Count) => knob.about.to_string(),
        (false, super::knob::Unit::Duration) => format!("{} (s)", knob.about),
    }
}

/// Where the line "equal to the TTL" goes on the x axis, if anywhere.
fn marker(outcome: &Outcome) -> Option<(f64, String)> {
    if outcome.knob.against_ttl {
        return Some((1.0, format!("{} = TTL", outcome.knob.name)));
    }
    let pause = outcome.pause_s?;
    (outcome.knob.name == "ttl").then(|| (pause, "TTL = fault duration".to_string()))
}

/// One plot, as an SVG document.
pub fn svg(outcome: &Outcome, measure: &Measure) -> Result<String, String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (720, 440)).into_drawing_area();
        draw(&root, outcome, measure).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(text)
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    outcome: &Outcome,
    measure: &Measure,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let xs: Vec<f64> = outcome.points.iter().map(|p| p.x).collect();
    let (mut lo, mut hi) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let marked = marker(outcome);
    if let Some((at, _)) = &marked {
        lo = lo.min(*at);
        hi = hi.max(*at);
    }
    let pad = ((hi - lo) * 0.05).max(0.05);
    let values = outcome.stats.iter().filter_map(|s| (measure.of)(s));
    // Room above the data for the legend, in the upper left.
    let top = if measure.share {
        1.6
    } else {
        values.fold(0.0f64, f64::max).max(0.1) * 1.7
    };
    let mut chart = ChartBuilder::on(root)
        .caption(measure.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d((lo - pad)..(hi + pad), 0.0..top)?;
    // A share's axis is labelled up to 1 only: above it is the legend's room.
    let share = measure.share;
    let y_label = move |v: &f64| {
        if share && *v > 1.0 + 1e-9 {
            String::new()
        } else {
            format!("{v:.1}")
        }
    };
    chart
        .configure_mesh()
        .x_desc(x_axis(outcome))
        .y_desc(measure.y_axis)
        .y_label_formatter(&y_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    if let Some((at, label)) = marked {
        chart
            .draw_series(LineSeries::new(
                [(at, 0.0), (at, top)],
                BLACK.mix(0.5).stroke_width(1),
            ))?
            .label(label)
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.mix(0.5)));
    }
    // One colour a lock; fencing off dashed with hollow points, so that a lock whose two modes
    // measure the same still shows both lines.
    let mut locks: Vec<&str> = Vec::new();
    for (s, series) in outcome.series.iter().enumerate() {
        if !locks.contains(&series.lock.as_str()) {
            locks.push(&series.lock);
        }
        let lock_index = locks.iter().position(|l| *l == series.lock).unwrap_or(0);
        let colour = COLOURS[lock_index % COLOURS.len()];
        let stats: Vec<&PointStats> = outcome.stats.iter().filter(|st| st.series == s).collect();
        let line: Vec<(f64, f64)> = (stats.iter())
            .filter_map(|st| Some((outcome.points[st.point].x, (measure.of)(st)?)))
            .collect();
        // Unbroken stretches of measured points: a point without a value breaks the line.
        let mut stretches: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for st in &stats {
            match (measure.of)(st) {
                Some(y) => stretches
                    .last_mut()
                    .expect("one")
                    .push((outcome.points[st.point].x, y)),
                None => stretches.push(Vec::new()),
            }
        }
        let fenced = series.fencing == "on";
        let dashed = if fenced { "" } else { " (dashed)" };
        let label = format!("{} fencing {}{dashed}", series.lock, series.fencing);
        for (i, stretch) in stretches.into_iter().enumerate() {
            let drawn = if fenced {
                chart.draw_series(LineSeries::new(stretch, colour.stroke_width(2)))?
            } else {
                let style = colour.mix(0.8).stroke_width(2);
                chart.draw_series(DashedLineSeries::new(stretch, 8, 5, style))?
            };
            if i == 0 {
                drawn.label(label.clone()).legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2))
                });
            }
        }
        // Unknown runs, which count toward no share, are written beside their point (at the
        // axis where the point has no value).
        let font = ("sans-serif", 11).into_font().color(&colour);
        chart.draw_series(stats.iter().filter(|st| st.unknown > 0).map(|st| {
            let x = outcome.points[st.point].x;
            let y = (measure.of)(st).unwrap_or(0.0);
            let text = match (measure.of)(st) {
                Some(_) => format!(" {} unknown", st.unknown),
                None => format!(" no decided run ({} unknown)", st.unknown),
            };
            Text::new(text, (x, y), font.clone())
        }))?;
        let point_style = if fenced {
            colour.filled()
        } else {
            colour.stroke_width(2)
        };
        let radius = if fenced { 3 } else { 5 };
        chart.draw_series(
            line.iter()
                .map(move |&(x, y)| Circle::new((x, y), radius, point_style)),
        )?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use lockpick_checkers::Validity;

    use super::*;
    use crate::sweep::measure::RunMeasure;
    use crate::sweep::plan::{Point, Series};

    fn run(point: usize, verdict: Validity) -> RunMeasure {
        RunMeasure {
            point,
            series: 0,
            seed: 1,
            verdict,
            overlaps: 0,
            stale_writes: 0,
            rejected: 0,
            next_grant_s: Vec::new(),
            never_granted: 0,
            acquire_us: Vec::new(),
            dir: "x".into(),
        }
    }

    #[test]
    fn a_point_without_a_decided_run_is_not_drawn_and_unknown_runs_are_written_beside() {
        let point = |x: f64| Point {
            value: format!("{}ms", x * 1000.0),
            x,
            ratio: Some(x),
        };
        // Point 0: one valid run and one unknown; point 1: unknown runs only.
        let runs = vec![
            run(0, Validity::Valid),
            run(0, Validity::Unknown),
            run(1, Validity::Unknown),
            run(1, Validity::Unknown),
        ];
        let outcome = Outcome {
            knob: crate::sweep::knob::find("fault-duration").unwrap(),
            nemesis: "pause-holder".into(),
            ttl_s: Some(1.0),
            pause_s: None,
            points: vec![point(0.5), point(1.5)],
            series: vec![Series {
                lock: "redis".into(),
                fencing: "on".into(),
            }],
            seeds: vec![1, 2],
            planned_runs: 4,
            interrupted: false,
            stats: PointStats::all(2, 1, &runs),
            runs,
        };
        let svg = svg(&outcome, &MEASURES[0]).unwrap();
        assert_eq!(svg.matches("<circle").count(), 1, "one point drawn: {svg}");
        assert!(svg.contains("1 unknown"), "{svg}");
        assert!(svg.contains("no decided run (2 unknown)"), "{svg}");
    }
}
