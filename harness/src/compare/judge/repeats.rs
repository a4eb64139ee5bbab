//! A cell run several times (`compare --repeat N`), each repeat with its own seed, and what its
//! expectations say over all of them: "valid" (and every expectation other than "invalid")
//! must hold in every repeat; "invalid" needs a violation in every repeat, or in `at-least` of
//! them when the group says so. One run can miss a violation or find one by luck; repeats say
//! how sure the gate is ("invalid 5/5").

use std::path::PathBuf;

use lockpick_checkers::Validity;
use serde::Serialize;

use crate::compare::judge::judgement::{judge, Figures, Judgement};
use crate::compare::plan::matrix::{CellExpectation, Expectation};

/// One repeat of a cell: its seed, what it showed, and its run's folder.
#[derive(Clone, Debug, Serialize)]
pub struct Repeat {
    pub seed: u64,
    pub verdict: Validity,
    pub dir: PathBuf,
    /// Its own expectations judged on it alone.
    #[serde(flatten)]
    pub judgement: Judgement,
}

/// The expectations of a cell over its repeats (in order): the cell's judgement, each repeat's
/// own, and which repeat stands for the cell in the outputs (the first that shows what decided
/// the judgement).
pub fn judge_repeats(
    expected: &CellExpectation,
    runs: &[Figures],
) -> (Judgement, Vec<Repeat>, usize) {
    let own = |f: &Figures| {
        expected
            .expectations
            .iter()
            .map(|e| judge(*e, f))
            .fold(Judgement::Holds, Judgement::and)
    };
    let repeats: Vec<Repeat> = runs
        .iter()
        .map(|f| Repeat {
            seed: f.seed,
            verdict: f.verdict,
            dir: f.dir.clone(),
            judgement: own(f),
        })
        .collect();
    let judgement = if runs.len() <= 1 {
        repeats
            .first()
            .map_or(Judgement::NotJudged, |r| r.judgement.clone())
    } else {
        over_repeats(expected, runs)
    };
    let shown = match judgement {
        Judgement::Holds | Judgement::NotJudged => {
            repeats.iter().position(|r| r.judgement == Judgement::Holds)
        }
        ref worse => repeats
            .iter()
            .position(|r| r.judgement.rank() >= worse.rank()),
    };
    (judgement, repeats, shown.unwrap_or(0))
}

/// Several repeats: every expectation but "invalid" must hold in each; "invalid" is counted.
fn over_repeats(expected: &CellExpectation, runs: &[Figures]) -> Judgement {
    let mut judgement = Judgement::Holds;
    for expectation in &expected.expectations {
        let judged = match expectation {
            Expectation::Invalid => invalid_in_enough(expected.at_least, runs),
            e => runs
                .iter()
                .map(|f| judge(*e, f))
                .fold(Judgement::Holds, Judgement::and),
        };
        judgement = judgement.and(judged);
    }
    judgement
}

/// "invalid" over repeats: at least `at_least` (else every one) found a violation.
fn invalid_in_enough(at_least: Option<usize>, runs: &[Figures]) -> Judgement {
    let n = runs.len();
    let k = at_least.unwrap_or(n).min(n);
    let count = |v| runs.iter().filter(|f| f.verdict == v).count();
    let (invalid, unknown) = (count(Validity::Invalid), count(Validity::Unknown));
    if invalid >= k {
        return Judgement::Holds;
    }
    let seeds = |v| {
        let seeds: Vec<String> = runs
            .iter()
            .filter(|f| f.verdict == v)
            .map(|f| f.seed.to_string())
            .collect();
        seeds.join(", ")
    };
    if invalid + unknown >= k {
        Judgement::Unproven(format!(
            "expected invalid in at least {k} of {n} repeats, invalid in {invalid}, not proven \
             in {unknown} (seeds {})",
            seeds(Validity::Unknown)
        ))
    } else {
        Judgement::Broken(format!(
            "expected invalid in at least {k} of {n} repeats, found invalid in {invalid}: valid \
             with seeds {} (a longer run, or other knobs, may show it)",
            seeds(Validity::Valid)
        ))
    }
}

/// How the repeats' verdicts add up, when there are several: `5/5` for the verdict that stands
/// for the cell, then the others (`3/5 (valid 2/5)`).
pub fn tally(shown: Validity, repeats: &[Repeat]) -> Option<String> {
    let n = repeats.len();
    if n <= 1 {
        return None;
    }
    let count = |v| repeats.iter().filter(|r| r.verdict == v).count();
    let others: Vec<String> = [Validity::Invalid, Validity::Unknown, Validity::Valid]
        .into_iter()
        .filter(|v| *v != shown && count(*v) > 0)
        .map(|v| format!("{v} {}/{n}", count(v)))
        .collect();
    let mut text = format!("{}/{n}", count(shown));
    if !others.is_empty() {
        text = format!("{text} ({})", others.join(", "));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary_md::Counts;
    use std::time::Duration;

    fn run(verdict: Validity, seed: u64) -> Figures {
        Figures {
            verdict,
            counts: Counts::default(),
            acquisitions: 10,
            p50_ms: None,
            p99_ms: None,
            unavailability: 0.0,
            unknown_reasons: vec![],
            undecidable: 0,
            first_story: None,
            first_stale_write: None,
            first_grant_under_live_lease: None,
            first_story_short: None,
            first_stale_write_short: None,
            told: None,
            decided_at: None,
            servers: String::new(),
            dir: PathBuf::new(),
            command: Vec::new(),
            seed,
            took: Duration::ZERO,
        }
    }

    fn expect(e: Expectation, at_least: Option<usize>) -> CellExpectation {
        CellExpectation {
            expectations: vec![e],
            why: None,
            at_least,
        }
    }

    use Validity::{Invalid, Unknown, Valid};

    #[test]
    fn invalid_needs_a_violation_in_every_repeat_unless_at_least_says_fewer() {
        let runs = [run(Invalid, 1), run(Valid, 2), run(Invalid, 3)];
        let (every, repeats, shown) = judge_repeats(&expect(Expectation::Invalid, None), &runs);
        assert!(
            matches!(&every, Judgement::Broken(w) if w.contains("invalid in 2") && w.contains("seeds 2")),
            "{every:?}"
        );
        assert_eq!(
            repeats[shown].seed, 2,
            "the valid repeat stands for the cell"
        );
        let (some, _, shown) = judge_repeats(&expect(Expectation::Invalid, Some(2)), &runs);
        assert_eq!(some, Judgement::Holds);
        assert_eq!(runs[shown].seed, 1, "an invalid repeat stands for the cell");
        let with_unknown = [run(Invalid, 1), run(Unknown, 2)];
        let (unproven, _, _) = judge_repeats(&expect(Expectation::Invalid, None), &with_unknown);
        assert!(matches!(unproven, Judgement::Unproven(_)), "{unproven:?}");
    }

    #[test]
    fn valid_must_hold_in_every_repeat() {
        let all = [run(Valid, 1), run(Valid, 2)];
        let (judged, _, _) = judge_repeats(&expect(Expectation::Valid, None), &all);
        assert_eq!(judged, Judgement::Holds);
        let one_bad = [run(Valid, 1), run(Invalid, 2), run(Valid, 3)];
        let (judged, repeats, shown) = judge_repeats(&expect(Expectation::Valid, None), &one_bad);
        assert!(matches!(judged, Judgement::Broken(_)));
        assert_eq!(repeats[shown].verdict, Invalid);
        assert_eq!(tally(Invalid, &repeats).as_deref(), Some("1/3 (valid 2/3)"));
        assert_eq!(tally(Valid, &repeats[..1]), None);
    }
}
