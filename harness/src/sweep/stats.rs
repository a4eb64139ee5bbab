//! One point of one line (a lock with a fencing mode), over its seeds: the share of decided runs
//! that showed each violation, the mean counts, the time to the next grant, and acquire latency
//! percentiles from an HDR histogram of every acquire of its runs.
//!
//! Only a decided run (valid or invalid) counts toward a share or a mean: an unknown run proved
//! nothing (its faults may never have taken effect), so counting it as a run without a violation
//! would draw a point "safe" without proof. Unknown runs are counted apart, and a point with no
//! decided run has no share at all.

use hdrhistogram::Histogram;
use lockpick_checkers::Validity;
use serde::Serialize;

use super::measure::RunMeasure;

/// Latencies are recorded in microseconds, up to an hour, to three significant figures.
const MOST_US: u64 = 3_600_000_000;

/// One point of one line.
#[derive(Clone, Debug, Serialize)]
pub struct PointStats {
    pub point: usize,
    pub series: usize,
    /// Runs that ended (fewer than the seeds when the sweep was interrupted).
    pub runs: usize,
    /// Runs with a verdict (valid or invalid): what the shares and means are over.
    pub decided: usize,
    /// Share of the decided runs with overlapping holders, and with stale writes the resource
    /// accepted; `None` when no run was decided.
    pub overlap_share: Option<f64>,
    pub stale_share: Option<f64>,
    /// Mean counts over the decided runs; `None` when no run was decided.
    pub mean_overlaps: Option<f64>,
    pub mean_stale_writes: Option<f64>,
    /// Accesses the resource rejected (the fence at work), over every run of the point.
    pub rejected: usize,
    /// Runs by verdict.
    pub invalid: usize,
    pub unknown: usize,
    pub valid: usize,
    /// Faults that hit the holder and were followed by a grant to another client, over the
    /// runs; the mean and the longest time to that grant, in seconds.
    pub next_grant_samples: usize,
    pub next_grant_mean_s: Option<f64>,
    pub next_grant_max_s: Option<f64>,
    /// Faults on the holder after which nobody was granted the lock before its run ended.
    pub never_granted: usize,
    pub acquires: u64,
    pub acquire_p50_ms: Option<f64>,
    pub acquire_p99_ms: Option<f64>,
}

impl PointStats {
    /// The stats of `runs`, every one of point `point` and line `series`; `None` for none.
    pub fn of(point: usize, series: usize, runs: &[&RunMeasure]) -> Option<PointStats> {
        if runs.is_empty() {
            return None;
        }
        let decided: Vec<&&RunMeasure> = (runs.iter())
            .filter(|r| r.verdict != Validity::Unknown)
            .collect();
        let n = decided.len() as f64;
        let share = |f: fn(&RunMeasure) -> bool| {
            (!decided.is_empty()).then(|| decided.iter().filter(|r| f(r)).count() as f64 / n)
        };
        let mean = |f: fn(&RunMeasure) -> usize| {
            (!decided.is_empty()).then(|| decided.iter().map(|r| f(r)).sum::<usize>() as f64 / n)
        };
        let verdicts = |v: Validity| runs.iter().filter(|r| r.verdict == v).count();
        let gaps: Vec<f64> = runs.iter().flat_map(|r| r.next_grant_s.clone()).collect();
        let mut latencies = Histogram::<u64>::new_with_bounds(1, MOST_US, 3)
            .expect("fixed bounds that hdrhistogram accepts");
        for us in runs.iter().flat_map(|r| &r.acquire_us) {
            latencies.saturating_record((*us).max(1));
        }
        let percentile_ms =
            |q: f64| (!latencies.is_empty()).then(|| latencies.value_at_quantile(q) as f64 / 1e3);
        Some(PointStats {
            point,
            series,
            runs: runs.len(),
            decided: decided.len(),
            rejected: runs.iter().map(|r| r.rejected).sum(),
            overlap_share: share(|r| r.overlaps > 0),
            stale_share: share(|r| r.stale_writes > 0),
            mean_overlaps: mean(|r| r.overlaps),
            mean_stale_writes: mean(|r| r.stale_writes),
            invalid: verdicts(Validity::Invalid),
            unknown: verdicts(Validity::Unknown),
            valid: verdicts(Validity::Valid),
            next_grant_samples: gaps.len(),
            next_grant_mean_s: (!gaps.is_empty())
                .then(|| gaps.iter().sum::<f64>() / gaps.len() as f64),
            next_grant_max_s: gaps.iter().copied().reduce(f64::max),
            never_granted: runs.iter().map(|r| r.never_granted).sum(),
            acquires: latencies.len(),
            acquire_p50_ms: percentile_ms(0.5),
            acquire_p99_ms: percentile_ms(0.99),
        })
    }

    /// Every point of every line that has runs, by line then point.
    pub fn all(points: usize, series: usize, runs: &[RunMeasure]) -> Vec<PointStats> {
        let mut stats = Vec::new();
        for s in 0..series {
            for p in 0..points {
                let of: Vec<&RunMeasure> = (runs.iter())
                    .filter(|r| r.point == p && r.series == s)
                    .collect();
                stats.extend(PointStats::of(p, s, &of));
            }
        }
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(overlaps: usize, stale_writes: usize, gaps: &[f64], acquire_us: &[u64]) -> RunMeasure {
        RunMeasure {
            point: 0,
            series: 0,
            seed: 1,
            verdict: if overlaps > 0 {
                Validity::Invalid
            } else {
                Validity::Valid
            },
            overlaps,
            stale_writes,
            rejected: 1,
            next_grant_s: gaps.to_vec(),
            never_granted: 0,
            acquire_us: acquire_us.to_vec(),
            dir: "x".into(),
        }
    }

    #[test]
    fn shares_means_and_percentiles_are_over_the_points_runs() {
        let runs = [
            run(
                3,
                1,
                &[1.0],
                &(1..=100).map(|ms| ms * 1000).collect::<Vec<_>>(),
            ),
            run(0, 0, &[3.0, 2.0], &[]),
            run(1, 0, &[], &[]),
        ];
        let stats = PointStats::all(1, 1, &runs);
        assert_eq!(stats.len(), 1);
        let s = &stats[0];
        assert_eq!(s.runs, 3);
        assert!((s.overlap_share.unwrap() - 2.0 / 3.0).abs() < 1e-9);
        assert!((s.stale_share.unwrap() - 1.0 / 3.0).abs() < 1e-9);
        assert!((s.mean_overlaps.unwrap() - 4.0 / 3.0).abs() < 1e-9);
        assert_eq!((s.decided, s.rejected), (3, 3));
        assert_eq!((s.invalid, s.valid), (2, 1));
        assert_eq!(s.next_grant_mean_s, Some(2.0));
        assert_eq!(s.next_grant_max_s, Some(3.0));
        let p50 = s.acquire_p50_ms.unwrap();
        assert!((49.9..=50.1).contains(&p50), "{p50}");
        let p99 = s.acquire_p99_ms.unwrap();
        assert!((98.9..=99.1).contains(&p99), "{p99}");
        assert!(PointStats::of(0, 0, &[]).is_none());
    }

    #[test]
    fn unknown_runs_count_toward_no_share_and_a_point_of_them_alone_has_none() {
        let unknown = |overlaps| RunMeasure {
            verdict: Validity::Unknown,
            ..run(overlaps, 0, &[], &[])
        };
        // One invalid run, two unknown ones: the share is 1/1, not 1/3.
        let runs = [run(2, 0, &[], &[]), unknown(0), unknown(0)];
        let s = &PointStats::all(1, 1, &runs)[0];
        assert_eq!((s.runs, s.decided, s.unknown), (3, 1, 2));
        assert_eq!(s.overlap_share, Some(1.0));
        assert_eq!(s.mean_overlaps, Some(2.0));
        // Only unknown runs: no share, rather than a "safe" 0.
        let runs = [unknown(0), unknown(0)];
        let s = &PointStats::all(1, 1, &runs)[0];
        assert_eq!((s.decided, s.unknown), (0, 2));
        assert_eq!((s.overlap_share, s.stale_share), (None, None));
        assert_eq!(s.mean_stale_writes, None);
    }
}
