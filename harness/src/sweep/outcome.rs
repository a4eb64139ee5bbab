//! What a sweep found, as every output reads it: `sweep.json` is this value, `sweep.md` its
//! table for a pull-request comment.

use serde::Serialize;

use super::knob::Knob;
use super::measure::RunMeasure;
use super::plan::{Point, Series};
use super::stats::PointStats;
use crate::text::markdown;

#[derive(Serialize)]
pub struct Outcome {
    #[serde(serialize_with = "knob_name")]
    pub knob: &'static Knob,
    pub nemesis: String,
    /// The TTL every run shared, in seconds (`None` when it is the swept knob).
    pub ttl_s: Option<f64>,
    /// The fault duration every run shared, in seconds, when it was given.
    pub pause_s: Option<f64>,
    pub points: Vec<Point>,
    pub series: Vec<Series>,
    pub seeds: Vec<u64>,
    pub planned_runs: usize,
    /// Whether Ctrl-C stopped the sweep: the points done are kept, a point may have fewer runs.
    pub interrupted: bool,
    pub stats: Vec<PointStats>,
    pub runs: Vec<RunMeasure>,
}

fn knob_name<S: serde::Serializer>(knob: &&'static Knob, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(knob.name)
}

/// A share of the decided runs as a percentage with the runs it counts, and its mean: `67% (2/3
/// decided), mean 1.3`; a dash when no run was decided.
pub fn share(share: Option<f64>, mean: Option<f64>, decided: usize) -> String {
    match (share, mean) {
        (Some(share), Some(mean)) => {
            let hits = (share * decided as f64).round() as usize;
            format!(
                "{:.0}% ({hits}/{decided} decided), mean {mean:.1}",
                share * 100.0
            )
        }
        _ => "– (no decided run)".to_string(),
    }
}

/// The columns of the table.
pub const COLUMNS: usize = 11;

/// Seconds, or a dash where nothing was measured.
pub fn seconds(s: Option<f64>) -> String {
    s.map_or("–".to_string(), |s| format!("{s:.2} s"))
}

impl Outcome {
    /// The sweep in one sentence: what varied, for what, how many runs.
    pub fn headline(&self) -> String {
        let ran = self.runs.len();
        let ttl = self.ttl_s.map_or(String::new(), |t| format!(", TTL {t} s"));
        let interrupted = if self.interrupted {
            " (interrupted: the points done are kept)"
        } else {
            ""
        };
        format!(
            "Sweep of {} over {} points under {}{ttl}: {ran} of {} runs{interrupted}",
            self.knob.name,
            self.points.len(),
            self.nemesis,
            self.planned_runs
        )
    }

    /// One row per point of each line, as the markdown table and the page show them.
    pub fn rows(&self) -> Vec<[String; COLUMNS]> {
        (self.stats.iter())
            .map(|s| {
                let point = &self.points[s.point];
                let series = &self.series[s.series];
                let ms = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
                [
                    point.value.clone(),
                    point.ratio.map_or("–".to_string(), |r| format!("{r:.2}")),
                    format!("{} fencing {}", series.lock, series.fencing),
                    format!("{}/{}/{}", s.invalid, s.unknown, s.valid),
                    s.unknown.to_string(),
                    share(s.overlap_share, s.mean_overlaps, s.decided),
                    share(s.stale_share, s.mean_stale_writes, s.decided),
                    s.rejected.to_string(),
                    format!(
                        "{} (n={}, max {})",
                        seconds(s.next_grant_mean_s),
                        s.next_grant_samples,
                        seconds(s.next_grant_max_s)
                    ),
                    format!("{} / {}", ms(s.acquire_p50_ms), ms(s.acquire_p99_ms)),
                    s.never_granted.to_string(),
                ]
            })
            .collect()
    }

    /// The table's columns.
    pub fn header(&self) -> [String; COLUMNS] {
        let ratio = if self.knob.name == "ttl" {
            "fault duration / TTL"
        } else {
            "ratio to the TTL"
        };
        [
            self.knob.name.to_string(),
            ratio.to_string(),
            "lock".to_string(),
            "invalid/unknown/valid".to_string(),
            "unknown (counted in no share)".to_string(),
            "decided runs with overlapping holders".to_string(),
            "decided runs with stale writes accepted".to_string(),
            "accesses the fence rejected".to_string(),
            "time to next grant after a fault on the holder".to_string(),
            "acquire p50 / p99 ms".to_string(),
            "no grant after the fault before the end".to_string(),
        ]
    }

    /// `sweep.md`: the headline and the table, for a pull-request comment.
    pub fn markdown(&self) -> String {
        let mut md = format!("### {}\n\n", markdown::escape(&self.headline()));
        let line = |cells: &[String]| {
            let cells: Vec<String> = cells.iter().map(|c| markdown::escape(c)).collect();
            format!("| {} |\n", cells.join(" | "))
        };
        md.push_str(&line(&self.header()));
        md.push_str(&format!("|{}\n", " --- |".repeat(COLUMNS)));
        for row in self.rows() {
            md.push_str(&line(&row));
        }
        md.push_str(
            "\nShares count the decided runs (valid or invalid) of a point that showed the violation \
             at least once: an unknown run proved nothing (its faults may not have taken effect) \
             and counts toward no share or mean; a point with no decided run has none. The time \
             to the next grant runs from a fault on the client holding the lock (a kill, a pause) \
             to the next grant to another client.\n",
        );
        md
    }
}
