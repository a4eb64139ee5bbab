//! One cell of a comparison: what its run showed, and whether that meets what the cell was
//! expected to show.

use std::path::PathBuf;
use std::time::Duration;

use lockpick_checkers::{Results, Validity};
use serde::Serialize;

use super::matrix::{CellExpectation, Expectation};
use super::repeats::{judge_repeats, tally, Repeat};
use crate::summary_md::Counts;

/// Which cell: a lock under a nemesis (several joined by `+`) with a fencing mode.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CellName {
    pub lock: String,
    pub nemesis: String,
    pub fencing: String,
}

impl std::fmt::Display for CellName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} × {} (fencing {})",
            self.lock, self.nemesis, self.fencing
        )
    }
}

/// What a finished cell's run showed.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub verdict: Validity,
    pub counts: Counts,
    pub acquisitions: usize,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub unavailability: f64,
    /// Why the run could not prove what it did not find.
    pub unknown_reasons: Vec<String>,
    /// Overlaps whose cause the history cannot decide.
    pub undecidable: usize,
    /// The first violation's story on one line, and the first of each kind that an expectation
    /// names.
    pub first_story: Option<String>,
    pub first_stale_write: Option<String>,
    pub first_grant_under_live_lease: Option<String>,
    /// What ran the servers, on one line: each service's version, and where (see
    /// [`Figures::servers_line`]).
    pub servers: String,
    /// The run's folder.
    pub dir: PathBuf,
    pub seed: u64,
    #[serde(serialize_with = "as_secs")]
    pub took: Duration,
}

fn as_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Figures {
    /// The servers as the run's setup line records them: `redis 7.0.15, netns`; with the
    /// program when `--server-bin` chose it (`redis 7.0.15 /opt/redis-server, netns`), with the
    /// image in the Docker runtime (`redis 7.4.1, docker redis:7.4`).
    pub fn servers_line(setup: &serde_json::Value, show_programs: bool) -> String {
        let mut words: Vec<String> = Vec::new();
        if let Some(versions) = setup["server_versions"].as_object() {
            for (service, version) in versions {
                let mut word = format!("{service} {}", version.as_str().unwrap_or("?"));
                if let Some(program) = setup["server_bins"][service].as_str() {
                    if show_programs {
                        word = format!("{word} {program}");
                    }
                }
                words.push(word);
            }
        }
        let mut runtime = setup["runtime"].as_str().unwrap_or("netns").to_string();
        if let Some(image) = setup["runtime_facts"]["server_image"].as_str() {
            runtime = format!("{runtime} {image}");
        }
        words.push(runtime);
        words.join(", ")
    }

    /// The parts of a run's results a comparison shows and judges.
    pub fn story_of(results: &Results, kinds: &[&str]) -> Option<String> {
        results
            .stories
            .iter()
            .find(|s| kinds.iter().any(|k| s.kind == *k))
            .map(|s| s.one_line())
    }

    pub fn first_grant_story(results: &Results) -> Option<String> {
        let overlaps = results.overlapping_holders.as_ref()?;
        let first = overlaps.overlaps.iter().find(|o| {
            o.cause == lockpick_checkers::overlap_cause::OverlapCause::GrantedUnderLiveLease
        })?;
        Some(format!(
            "client {} was granted the lock at {} while client {}'s lease was live: {}",
            first.second.process,
            lockpick_checkers::story::seconds(first.second.start),
            first.first.process,
            first.why
        ))
    }
}

/// How a cell ended.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    Ran(Box<Figures>),
    /// The lock refuses the nemesis; the reason, as the run's configuration gives it.
    NotApplicable {
        reason: String,
    },
}

/// Whether what a cell showed meets what it was expected to show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "judgement", content = "why", rename_all = "kebab-case")]
pub enum Judgement {
    Holds,
    /// Shown false, with the evidence in one line.
    Broken(String),
    /// Neither shown nor refuted: the run could not give the proof the expectation needs.
    Unproven(String),
    /// Nothing to judge: the cell did not run (n/a).
    NotJudged,
}

impl Judgement {
    pub(super) fn rank(&self) -> u8 {
        match self {
            Judgement::NotJudged | Judgement::Holds => 0,
            Judgement::Unproven(_) => 1,
            Judgement::Broken(_) => 2,
        }
    }

    /// The worse of two judgements.
    pub fn and(self, other: Judgement) -> Judgement {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// One cell, ready for every output.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    #[serde(flatten)]
    pub name: CellName,
    pub expected: String,
    pub why_expected: Option<String>,
    #[serde(flatten)]
    pub outcome: Outcome,
    #[serde(flatten)]
    pub judgement: Judgement,
    /// Every repeat, in order, when the cell ran more than once (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<Repeat>,
}

impl Cell {
    /// A cell from what each of its repeats showed (in order), or the one reason it could not
    /// run. The repeat that stands for the cell gives its figures.
    pub fn new(name: CellName, expected: &CellExpectation, outcomes: Vec<Outcome>) -> Cell {
        let runs: Vec<Figures> = outcomes
            .iter()
            .filter_map(|o| match o {
                Outcome::Ran(f) => Some((**f).clone()),
                Outcome::NotApplicable { .. } => None,
            })
            .collect();
        let (outcome, judgement, repeats) = if runs.is_empty() {
            let outcome = outcomes
                .into_iter()
                .next()
                .unwrap_or(Outcome::NotApplicable {
                    reason: "no repeat ran".to_string(),
                });
            (outcome, Judgement::NotJudged, Vec::new())
        } else {
            let (judgement, repeats, shown) = judge_repeats(expected, &runs);
            let outcome = Outcome::Ran(Box::new(runs[shown].clone()));
            let repeats = if repeats.len() > 1 {
                repeats
            } else {
                Vec::new()
            };
            (outcome, judgement, repeats)
        };
        Cell {
            name,
            expected: expected.words(),
            why_expected: expected.why.clone(),
            outcome,
            judgement,
            repeats,
        }
    }

    /// The cell's verdict in words: `invalid`, or over repeats `invalid 5/5`.
    pub fn verdict_words(&self) -> Option<String> {
        let f = self.figures()?;
        Some(match tally(f.verdict, &self.repeats) {
            Some(tally) => format!("{} {tally}", f.verdict),
            None => f.verdict.to_string(),
        })
    }

    pub fn figures(&self) -> Option<&Figures> {
        match &self.outcome {
            Outcome::Ran(f) => Some(f),
            Outcome::NotApplicable { .. } => None,
        }
    }
}

/// One expectation against one run.
pub fn judge(expectation: Expectation, f: &Figures) -> Judgement {
    let story = |s: &Option<String>| s.clone().unwrap_or_else(|| "no story recorded".to_string());
    let not_proven = || {
        let reasons = if f.unknown_reasons.is_empty() {
            "the run is unknown".to_string()
        } else {
            f.unknown_reasons.join("; ")
        };
        Judgement::Unproven(format!("expected {expectation}, not proven: {reasons}"))
    };
    match expectation {
        Expectation::Valid => match f.verdict {
            Validity::Valid => Judgement::Holds,
            Validity::Invalid => Judgement::Broken(format!(
                "expected valid, found invalid: {}",
                story(&f.first_story)
            )),
            Validity::Unknown => not_proven(),
        },
        Expectation::Invalid => match f.verdict {
            Validity::Invalid => Judgement::Holds,
            Validity::Valid => Judgement::Broken(
                "expected invalid (known unsafe), found valid: the run did not show the \
                 violation (a longer run, or other knobs, may)"
                    .to_string(),
            ),
            Validity::Unknown => not_proven(),
        },
        Expectation::NoStaleWriteAccepted if f.counts.stale_writes > 0 => {
            Judgement::Broken(format!(
                "expected no stale write accepted, found {} accepted: {}",
                f.counts.stale_writes,
                story(&f.first_stale_write)
            ))
        }
        Expectation::NoGrantUnderLiveLease if f.counts.grants_under_live_lease > 0 => {
            Judgement::Broken(format!(
                "expected no grant under a live lease, found {}: {}",
                f.counts.grants_under_live_lease,
                story(&f.first_grant_under_live_lease)
            ))
        }
        Expectation::NoGrantUnderLiveLease if f.undecidable > 0 => Judgement::Unproven(format!(
            "expected no grant under a live lease, not proven: {} overlap(s) of undecidable cause",
            f.undecidable
        )),
        Expectation::NoStaleWriteAccepted | Expectation::NoGrantUnderLiveLease
            if !f.unknown_reasons.is_empty() =>
        {
            not_proven()
        }
        Expectation::NoStaleWriteAccepted | Expectation::NoGrantUnderLiveLease => Judgement::Holds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(verdict: Validity, counts: Counts) -> Figures {
        Figures {
            verdict,
            counts,
            acquisitions: 10,
            p50_ms: None,
            p99_ms: None,
            unavailability: 0.0,
            unknown_reasons: Vec::new(),
            undecidable: 0,
            first_story: Some("client 1 paused → client 2 wrote".to_string()),
            first_stale_write: Some("client 1 wrote late".to_string()),
            first_grant_under_live_lease: None,
            servers: "redis 7.0.15, netns".to_string(),
            dir: PathBuf::new(),
            seed: 1,
            took: Duration::ZERO,
        }
    }

    fn overlapping() -> Counts {
        Counts {
            overlaps: 3,
            ..Counts::default()
        }
    }

    #[test]
    fn the_servers_line_names_versions_programs_and_images() {
        let netns = serde_json::json!({"runtime": "netns",
            "server_versions": {"redis": "7.0.15"},
            "server_bins": {"redis": "/opt/redis-server"}});
        assert_eq!(Figures::servers_line(&netns, false), "redis 7.0.15, netns");
        assert_eq!(
            Figures::servers_line(&netns, true),
            "redis 7.0.15 /opt/redis-server, netns"
        );
        let docker = serde_json::json!({"runtime": "docker",
            "server_versions": {"etcd": "3.5.9"},
            "runtime_facts": {"server_image": "quay.io/coreos/etcd:v3.5.9"}});
        assert_eq!(
            Figures::servers_line(&docker, false),
            "etcd 3.5.9, docker quay.io/coreos/etcd:v3.5.9"
        );
        assert_eq!(
            Figures::servers_line(&serde_json::Value::Null, false),
            "netns"
        );
    }

    #[test]
    fn fenced_overlaps_meet_no_stale_write_but_break_valid() {
        let f = figures(Validity::Invalid, overlapping());
        assert_eq!(
            judge(Expectation::NoStaleWriteAccepted, &f),
            Judgement::Holds
        );
        assert_eq!(judge(Expectation::Invalid, &f), Judgement::Holds);
        let broken = judge(Expectation::Valid, &f);
        assert!(matches!(&broken, Judgement::Broken(w) if w.contains("client 2 wrote")));
    }

    #[test]
    fn a_stale_write_breaks_its_expectation_with_the_story() {
        let counts = Counts {
            stale_writes: 2,
            ..overlapping()
        };
        let f = figures(Validity::Invalid, counts);
        let judged = judge(Expectation::NoStaleWriteAccepted, &f);
        assert!(
            matches!(&judged, Judgement::Broken(w) if w.contains("2 accepted") && w.contains("wrote late"))
        );
    }

    #[test]
    fn an_unknown_run_proves_nothing_it_did_not_show() {
        let mut f = figures(Validity::Unknown, Counts::default());
        f.unknown_reasons = vec!["the history is incomplete".to_string()];
        for e in Expectation::ALL {
            assert!(matches!(judge(e, &f), Judgement::Unproven(_)), "{e}");
        }
        let mut undecided = figures(Validity::Invalid, overlapping());
        undecided.undecidable = 1;
        assert!(matches!(
            judge(Expectation::NoGrantUnderLiveLease, &undecided),
            Judgement::Unproven(_)
        ));
    }

    #[test]
    fn a_known_unsafe_cell_that_shows_nothing_breaks_its_expectation() {
        let f = figures(Validity::Valid, Counts::default());
        assert!(matches!(
            judge(Expectation::Invalid, &f),
            Judgement::Broken(_)
        ));
        let worst = Judgement::Holds
            .and(Judgement::Unproven("u".into()))
            .and(Judgement::Holds);
        assert_eq!(worst, Judgement::Unproven("u".into()));
    }
}
