//! `--vary KNOB=FROM..TO` with `--points N`, or `KNOB=A,B,C`: the knob and its values, checked
//! before anything starts. A duration written `1.5x` is that multiple of the TTL.

use std::time::Duration;

use anyhow::Result;

use super::knob::{self, Knob, Unit};
use crate::config::{bad, parse_duration};

/// Most points a sweep may hold.
pub const MAX_POINTS: usize = 50;

/// Points a range holds when `--points` is not given.
pub const DEFAULT_POINTS: usize = 5;

/// One value of the knob, as written or spread from a range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Duration(Duration),
    /// A multiple of the TTL, resolved once the TTL is known.
    TimesTtl(f64),
    Count(u32),
}

impl Value {
    /// The value as a run's flag reads it, with the run's TTL for a multiple of it.
    pub fn word(self, ttl: Duration) -> String {
        match self {
            Value::Duration(d) => format!("{}ms", (d.as_nanos() + 500_000) / 1_000_000),
            Value::TimesTtl(x) => format!("{}ms", (ttl.as_secs_f64() * x * 1e3).round() as u64),
            Value::Count(n) => n.to_string(),
        }
    }

    /// The value as a number on the plot's own scale: seconds, a count, or the multiple.
    fn number(self) -> f64 {
        match self {
            Value::Duration(d) => d.as_secs_f64(),
            Value::TimesTtl(x) => x,
            Value::Count(n) => n as f64,
        }
    }
}

/// The knob a sweep varies and its values, in increasing order.
pub struct Range {
    pub knob: &'static Knob,
    pub values: Vec<Value>,
}

/// Reads `--vary` and `--points` into the knob and its values.
pub fn parse(vary: &str, points: Option<usize>) -> Result<Range> {
    let Some((name, values)) = vary.split_once('=') else {
        return Err(bad(format!(
            "--vary {vary:?} names no range: write KNOB=FROM..TO (as fault-duration=0.2x..3x) or \
             KNOB=A,B,C"
        )));
    };
    let knob = knob::find(name.trim()).ok_or_else(|| {
        bad(format!(
            "--vary: unknown knob {:?}: use one of {}",
            name.trim(),
            knob::names().join(", ")
        ))
    })?;
    let values = match values.split_once("..") {
        Some((from, to)) => {
            let (from, to) = (value(knob, from)?, value(knob, to)?);
            spread(knob, from, to, points.unwrap_or(DEFAULT_POINTS))?
        }
        None => {
            if points.is_some() {
                return Err(bad(
                    "--points spreads a FROM..TO range, not a list of values",
                ));
            }
            let listed: Vec<&str> = values.split(',').filter(|v| !v.trim().is_empty()).collect();
            let values = listed
                .iter()
                .map(|v| value(knob, v))
                .collect::<Result<Vec<_>>>()?;
            increasing(knob, values)?
        }
    };
    if values.len() > MAX_POINTS {
        return Err(bad(format!(
            "--vary {vary}: {} points, more than the {MAX_POINTS} a sweep may hold",
            values.len()
        )));
    }
    Ok(Range { knob, values })
}

/// One value as written for `knob`.
fn value(knob: &Knob, text: &str) -> Result<Value> {
    let text = text.trim();
    let flag = format!("--vary {}=", knob.name);
    if text.is_empty() {
        return Err(bad(format!("{flag}: an end of the range is empty")));
    }
    match knob.unit {
        Unit::Count => text
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .map(Value::Count)
            .ok_or_else(|| {
                bad(format!(
                    "{flag}{text}: {} is a whole number from 1",
                    knob.name
                ))
            }),
        Unit::Duration => match text.strip_suffix('x') {
            Some(_) if !knob.against_ttl => Err(bad(format!(
                "{flag}{text}: {} cannot be a multiple of the TTL",
                knob.name
            ))),
            Some(times) => match times.trim().parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 && x < 1e4 => Ok(Value::TimesTtl(x)),
                _ => Err(bad(format!(
                    "{flag}{text}: a multiple of the TTL is a positive number then x, as 1.5x"
                ))),
            },
            None => parse_duration(&flag, text).map(Value::Duration),
        },
    }
}

/// `points` values evenly spaced from `from` to `to`, both included.
fn spread(knob: &Knob, from: Value, to: Value, points: usize) -> Result<Vec<Value>> {
    let same_kind = std::mem::discriminant(&from) == std::mem::discriminant(&to);
    if !same_kind {
        return Err(bad(format!(
            "--vary {}: both ends must be multiples of the TTL, or both durations",
            knob.name
        )));
    }
    let (a, b) = (from.number(), to.number());
    if a >= b {
        let what = if a == b { "empty" } else { "reversed" };
        return Err(bad(format!(
            "--vary {}: the range is {what} (it must go from a smaller value to a larger one)",
            knob.name
        )));
    }
    if !(2..=MAX_POINTS).contains(&points) {
        return Err(bad(format!(
            "--points {points} must be between 2 and {MAX_POINTS}"
        )));
    }
    let at = |i: usize| a + (b - a) * i as f64 / (points - 1) as f64;
    // Rounded as the runs read them (a duration to the millisecond, `Value::word`) before the
    // repeats go: a range with more points than whole milliseconds or numbers holds each once.
    let values = (0..points).map(|i| match from {
        Value::Duration(_) => Value::Duration(Duration::from_millis((at(i) * 1e3).round() as u64)),
        Value::TimesTtl(_) => Value::TimesTtl((at(i) * 1e3).round() / 1e3),
        Value::Count(_) => Value::Count(at(i).round() as u32),
    });
    let mut values: Vec<Value> = values.collect();
    values.dedup();
    Ok(values)
}

/// The values as the runs read them, with `ttl` for multiples of it: refused when two points
/// become one once rounded to the millisecond (a list, or multiples of a short TTL), saying how
/// many distinct points there are.
pub fn words(knob: &Knob, values: &[Value], ttl: Duration) -> Result<Vec<String>> {
    let words: Vec<String> = values.iter().map(|v| v.word(ttl)).collect();
    let mut distinct = words.clone();
    distinct.dedup();
    if distinct.len() < words.len() {
        return Err(bad(format!(
            "--vary {}: {} points are only {} distinct ones once rounded to whole milliseconds \
             ({}): give fewer points or farther apart",
            knob.name,
            words.len(),
            distinct.len(),
            distinct.join(", ")
        )));
    }
    Ok(words)
}

/// A list's values, which must be given in increasing order, each once.
fn increasing(knob: &Knob, values: Vec<Value>) -> Result<Vec<Value>> {
    if values.is_empty() {
        return Err(bad(format!("--vary {}=: the list is empty", knob.name)));
    }
    let kinds = values
        .iter()
        .all(|v| std::mem::discriminant(v) == std::mem::discriminant(&values[0]));
    if !kinds {
        return Err(bad(format!(
            "--vary {}: the values must be all multiples of the TTL, or all durations",
            knob.name
        )));
    }
    if values.windows(2).any(|w| w[0].number() >= w[1].number()) {
        return Err(bad(format!(
            "--vary {}: the list must be in increasing order, each value once",
            knob.name
        )));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(range: &Range) -> Vec<String> {
        let ttl = Duration::from_secs(1);
        range.values.iter().map(|v| v.word(ttl)).collect()
    }

    #[test]
    fn a_range_of_ttl_multiples_spreads_its_points_and_includes_both_ends() {
        let range = parse("fault-duration=0.5x..2.5x", Some(5)).unwrap();
        assert_eq!(range.knob.name, "fault-duration");
        assert_eq!(
            words(&range),
            ["500ms", "1000ms", "1500ms", "2000ms", "2500ms"]
        );
        let range = parse("ttl=1s,2s,4s", None).unwrap();
        assert_eq!(words(&range), ["1000ms", "2000ms", "4000ms"]);
        let range = parse("clients=2..4", Some(5)).unwrap();
        assert_eq!(words(&range), ["2", "3", "4"]);
    }

    #[test]
    fn a_range_with_more_points_than_milliseconds_holds_each_millisecond_once() {
        let range = parse("delay=1ms..3ms", Some(10)).unwrap();
        assert_eq!(words(&range), ["1ms", "2ms", "3ms"]);
        let range = parse("work=10ms..20ms", Some(4)).unwrap();
        assert_eq!(words(&range), ["10ms", "13ms", "17ms", "20ms"]);
    }

    #[test]
    fn points_that_the_runs_would_read_as_one_are_refused_with_the_distinct_count() {
        let knob = knob::find("fault-duration").unwrap();
        let ttl = Duration::from_millis(10);
        let range = parse("fault-duration=0.1x..0.3x", Some(5)).unwrap();
        let error = super::words(knob, &range.values, ttl)
            .unwrap_err()
            .to_string();
        assert!(error.contains("5 points are only 3 distinct"), "{error}");
        assert!(!error.contains('\n'), "{error}");
        let range = parse("delay=1.2ms,1.4ms", None).unwrap();
        let delay = knob::find("delay").unwrap();
        let error = super::words(delay, &range.values, ttl)
            .unwrap_err()
            .to_string();
        assert!(error.contains("2 points are only 1 distinct"), "{error}");
        let fine = super::words(knob, &range.values[..1], ttl).unwrap();
        assert_eq!(fine, ["1ms"]);
    }

    #[test]
    fn bad_ranges_are_refused_with_one_line() {
        for (vary, points, says) in [
            ("speed=1..2", None, "unknown knob"),
            ("ttl=2s..1s", None, "reversed"),
            ("ttl=1s..1s", None, "empty"),
            ("ttl=", None, "list is empty"),
            ("ttl=1s..", None, "empty"),
            ("ttl=1x..2x", None, "multiple of the TTL"),
            ("fault-duration=1x..2s", None, "both ends"),
            ("ttl=2s,1s", None, "increasing"),
            ("ttl=1s..2s", Some(1), "--points 1"),
            ("ttl=1s..2s", Some(51), "--points 51"),
            ("ttl=1s,2s", Some(3), "--points spreads"),
            ("ttl", None, "names no range"),
        ] {
            let error = parse(vary, points).err().unwrap().to_string();
            assert!(error.contains(says), "{vary}: {error}");
            assert!(!error.contains('\n'), "{error}");
        }
    }
}
