//! Durations as people write them on a command line: `30s`, `500ms`, `2m`, `1h`.

use std::time::Duration;

use crate::bad_input::bad;

/// Parses `1.5s`, `500ms`, `2m`, `1h`, or a plain number of seconds. Spaces between the number
/// and its unit are allowed (`10 s`, as people write it; decided for matrix files, where a
/// quoted value invites them): the unit still has to be one of these.
pub fn parse_duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(bad(format!(
            "{flag} {text} is negative: a duration is 0 or more"
        )));
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    match number.parse::<f64>() {
        Ok(n) if scale.is_finite() && n.is_finite() && n * scale < 1e9 => {
            Ok(Duration::from_secs_f64(n * scale))
        }
        _ => Err(bad(format!(
            "{flag} {text:?} is not a duration: write it like 30s, 500ms, 2m or 1h"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_and_without_units() {
        let d = |t| parse_duration("--x", t).unwrap();
        assert_eq!(d("30s"), Duration::from_secs(30));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("1.5s"), Duration::from_millis(1500));
        assert_eq!(d("2m"), Duration::from_secs(120));
        assert_eq!(d("7"), Duration::from_secs(7));
        assert_eq!(d("10 s"), Duration::from_secs(10));
        assert_eq!(d("500 ms"), Duration::from_millis(500));
        for bad in ["", "s", "ten seconds", "5 parsecs", "-1s", "1e400"] {
            assert!(parse_duration("--x", bad).is_err(), "{bad:?} parsed");
        }
    }
}
