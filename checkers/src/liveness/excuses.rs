//! When a stretch of refusals is excused: the spans in which unavailability is expected (a
//! server fault and its recovery, an acquire that may have taken the lock), and the longest
//! part of a stretch outside them.

use crate::model::Model;

/// Spans in which unavailability is expected, sorted and merged:
/// - a fault aimed at a server (any target that is not a client), from its start to its stop
///   plus the grace;
/// - an acquire of unknown outcome, which may have taken the lock: from its invoke to its
///   completion plus the longest lease any hold of the run recorded (to the end of the history
///   when none recorded an end).
pub(super) fn excused_spans(model: &Model, grace: u64) -> Vec<(u64, u64)> {
    let end = model.end;
    let longest_lease = model
        .holds
        .iter()
        .filter_map(|h| {
            h.lease
                .and_then(|l| l.expires_by)
                .map(|e| e.saturating_sub(h.start))
        })
        .max();
    let faults = model
        .faults
        .iter()
        .filter(|w| w.targets.iter().any(|t| t.client().is_none()))
        .map(|w| (w.start, w.stop.unwrap_or(end).saturating_add(grace)));
    // An attempt after which the server held the key with no expiry excuses nothing: that key
    // is what jams the lock (`stuck_keys`).
    let unknown = model
        .unknown_acquires
        .iter()
        .filter(|a| a.key_without_expiry.is_none())
        .map(|a| {
            let until = longest_lease.map_or(u64::MAX, |l| a.completed.saturating_add(l));
            (a.invoked, until)
        });
    let mut spans: Vec<(u64, u64)> = faults.chain(unknown).collect();
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// The longest part of `[from, to]` outside every span.
pub(super) fn longest_unexcused(from: u64, to: u64, spans: &[(u64, u64)]) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64)> = None;
    let mut cursor = from;
    let mut consider = |a: u64, b: u64| {
        if b > a && best.is_none_or(|(x, y)| b - a > y - x) {
            best = Some((a, b));
        }
    };
    for &(s, e) in spans {
        if e <= cursor {
            continue;
        }
        if s >= to {
            break;
        }
        consider(cursor, s.min(to));
        cursor = cursor.max(e);
        if cursor >= to {
            break;
        }
    }
    if cursor < to {
        consider(cursor, to);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_faults_and_their_grace_are_cut_out_of_a_stretch() {
        let spans = vec![(10, 20), (30, 40)];
        assert_eq!(longest_unexcused(0, 50, &spans), Some((0, 10)));
        assert_eq!(longest_unexcused(12, 100, &spans), Some((40, 100)));
        assert_eq!(longest_unexcused(12, 18, &spans), None);
        assert_eq!(longest_unexcused(0, 50, &[]), Some((0, 50)));
    }
}
