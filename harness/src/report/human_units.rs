//! Durations in the units a person would say.

const SECOND: u64 = 1_000_000_000;

/// A duration as a person says it: `0 s`, `250 µs`, `1.5 ms`, `500 ms`, `1 s`, `2.5 s`,
/// `1 min 30 s`.
pub fn human_duration(ns: u64) -> String {
    const MINUTE: u64 = 60 * SECOND;
    if ns == 0 {
        return "0 s".to_string();
    }
    if ns < 1_000_000 {
        return format!("{} µs", decimal(ns as f64 / 1e3));
    }
    if ns < SECOND {
        return format!("{} ms", decimal(ns as f64 / 1e6));
    }
    if ns < MINUTE {
        return format!("{} s", decimal(ns as f64 / 1e9));
    }
    let (minutes, rest) = (ns / MINUTE, ns % MINUTE);
    if rest == 0 {
        format!("{minutes} min")
    } else {
        format!("{minutes} min {}", human_duration(rest))
    }
}

/// Up to two decimals, without trailing zeros: `1`, `1.5`, `0.25`.
fn decimal(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_human_units() {
        assert_eq!(human_duration(0), "0 s");
        assert_eq!(human_duration(250_000), "250 µs");
        assert_eq!(human_duration(1_500_000), "1.5 ms");
        assert_eq!(human_duration(500_000_000), "500 ms");
        assert_eq!(human_duration(SECOND), "1 s");
        assert_eq!(human_duration(2_500_000_000), "2.5 s");
        assert_eq!(human_duration(90 * SECOND), "1 min 30 s");
        assert_eq!(human_duration(120 * SECOND), "2 min");
    }
}
