//! `sweep.html`: the plots (inline SVG), then the table of every point with links to its runs'
//! reports.

use std::path::Path;

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::outcome::Outcome;
use super::plot::{self, Measure};
use crate::compare::outputs::relative;
use crate::report;

/// The page's own few rules, on top of the shared stylesheet.
const SWEEP_STYLE: &str = "
figure.plot { margin: 1em 0; }
figure.plot svg { max-width: 100%; height: auto; border: 1px solid #e5e7eb; }
table#points td, table#points th { padding: 2px 8px; }
";

/// The page with its `plots` inline, and links relative to the sweep's folder `dir`.
pub fn render(outcome: &Outcome, plots: &[(&Measure, String)], dir: &Path) -> String {
    let page: Markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (outcome.headline()) }
                style { (PreEscaped(report::STYLE)) (PreEscaped(SWEEP_STYLE)) }
            }
            body {
                h1 { (outcome.headline()) }
                p.note {
                    "One colour per lock; solid lines fencing on, dashed fencing off. Each point is the share (or mean) over \
                     its runs, one per seed (" (outcome.seeds.len()) " a point). x: "
                    (plot::x_axis(outcome)) "."
                }
                p.note {
                    "A share counts only the decided runs (valid or invalid): an unknown run proved nothing \
                     (its faults may not have taken effect), so it counts toward no share or mean and is \
                     written beside its point as \"n unknown\". A point with no decided run is not drawn: \
                     it is no evidence of safety."
                }
                @for (measure, svg) in plots {
                    figure.plot data-measure=(measure.y_axis) {
                        (PreEscaped(svg))
                        figcaption { (measure.title) }
                    }
                }
                h2 { "Every point" }
                div.scroll {
                    table #points {
                        tr { @for h in outcome.header() { th { (h) } } th { "runs" } }
                        @for (row, stats) in outcome.rows().iter().zip(&outcome.stats) {
                            tr {
                                @for cell in row { td { (cell) } }
                                td {
                                    @for run in outcome.runs.iter().filter(|r| r.point == stats.point && r.series == stats.series) {
                                        a href=(relative(dir, &run.dir.join(report::REPORT))) {
                                            (run.verdict.to_string())
                                        }
                                        " "
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    page.into_string()
}
