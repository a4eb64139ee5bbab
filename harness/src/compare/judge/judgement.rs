//! One run's figures as a comparison keeps them, and how they are judged against an
//! expectation; where a cell stands follows from its judgement. Below the cells and their
//! repeats, which both judge through here.

use std::path::PathBuf;
use std::time::Duration;

use lockpick_checkers::model::Model;
use lockpick_checkers::setup::SetupRecord;
use lockpick_checkers::story::Story;
use lockpick_checkers::{Results, Validity};
use serde::{Deserialize, Serialize};

use crate::compare::plan::matrix::Expectation;
use crate::report::summary_md::Counts;
use crate::report::HistoryFacts;

/// What a finished cell's run showed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// The same stories shortened for a comment ([`Story::shortened`]).
    #[serde(skip)]
    pub first_story_short: Option<String>,
    #[serde(skip)]
    pub first_stale_write_short: Option<String>,
    /// What the run told beside its verdict: lease bounds a client program reported that the
    /// server contradicts (`lease_claims`).
    pub told: Option<String>,
    /// What ran the servers, on one line: each service's version, and where, and the library
    /// a client program named (see [`Figures::servers_line`]).
    pub servers: String,
    /// When the cell ended early at its first proven violation (`--until decided`), in
    /// seconds on the run clock.
    pub decided_at: Option<f64>,
    /// The run's folder.
    pub dir: PathBuf,
    /// The run's command line (`lockpick run …`), word by word: what reproduces it.
    #[serde(skip)]
    pub command: Vec<String>,
    pub seed: u64,
    #[serde(serialize_with = "as_secs", deserialize_with = "from_secs")]
    pub took: Duration,
}

fn as_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// A shard's `took` back (`lockpick merge`): a negative, huge or odd number is refused.
fn from_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let secs = f64::deserialize(d)?;
    Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
}

/// What a finished run leaves to measure a cell's figures by: the checkers' results, the model
/// they judged, what was read off the history beside it, and the two settings the figures need.
pub struct Measured<'a> {
    pub results: &'a Results,
    pub model: &'a Model,
    pub history: &'a HistoryFacts,
    pub time_limit: Duration,
    /// Whether the servers line names each server's program (`--server-bin` chose one).
    pub show_programs: bool,
}

impl Figures {
    /// A run's figures, all from its checked history: what `compare` keeps of a cell it ran,
    /// and what `merge` measures again from a shard's stored history (so that a shard's record
    /// decides nothing by itself).
    pub fn measure(
        m: Measured,
        dir: PathBuf,
        command: Vec<String>,
        seed: u64,
        took: Duration,
    ) -> Figures {
        let r = m.results;
        let ms = |q| {
            m.history
                .acquire_latency_percentile(q)
                .map(|ns| ns as f64 / 1e6)
        };
        let stale = Figures::story_of(r, &["stale-write"]);
        Figures {
            verdict: r.valid,
            counts: Counts::of(r),
            acquisitions: m.model.holds.len(),
            p50_ms: ms(0.5),
            p99_ms: ms(0.99),
            unavailability: unavailability(m.model, m.time_limit.as_nanos() as u64),
            unknown_reasons: r.unknown_reasons.clone(),
            undecidable: r.overlapping_holders.as_ref().map_or(0, |o| o.undecidable),
            first_story: r.stories.first().map(|s| s.one_line()),
            first_story_short: r.stories.first().map(|s| s.shortened()),
            first_stale_write: stale.map(|s| s.one_line()),
            first_stale_write_short: stale.map(|s| s.shortened()),
            told: r.lease_claims.as_ref().and_then(|c| c.note()),
            first_grant_under_live_lease: Figures::first_grant_story(r),
            servers: Figures::servers_line(
                &m.history.setup_record,
                &m.history.libraries,
                m.show_programs,
            ),
            decided_at: (m.model.run_end.as_ref())
                .and_then(|e| e.decided_at_ns)
                .map(|ns| ns as f64 / 1e9),
            dir,
            command,
            seed,
            took,
        }
    }

    /// The servers as the run's setup line records them: `redis 7.0.15, netns`; with the
    /// program when `--server-bin` chose it (`redis 7.0.15 /opt/redis-server, netns`), with the
    /// image in the Docker runtime (`redis 7.4.1, docker redis:7.4`); then each library a
    /// client program named (`redis 7.0.15, netns; client redis-py 5.0.1`).
    pub fn servers_line(setup: &SetupRecord, libraries: &[String], show_programs: bool) -> String {
        let mut words: Vec<String> = Vec::new();
        for (service, version) in &setup.server_versions {
            let mut word = format!("{service} {version}");
            if let Some(program) = setup.server_bins.get(service) {
                if show_programs {
                    word = format!("{word} {program}");
                }
            }
            words.push(word);
        }
        let mut runtime = setup.runtime.as_deref().unwrap_or("netns").to_string();
        if let Some(image) = setup.runtime_fact("server_image") {
            runtime = format!("{runtime} {image}");
        }
        words.push(runtime);
        let mut line = words.join(", ");
        for library in libraries {
            line = format!("{line}; client {library}");
        }
        line
    }

    /// The parts of a run's results a comparison shows and judges.
    pub fn story_of<'a>(results: &'a Results, kinds: &[&str]) -> Option<&'a Story> {
        results
            .stories
            .iter()
            .find(|s| kinds.iter().any(|k| s.kind == *k))
    }

    /// The first grant under a live lease, a grant lost in a failover among them (it is one).
    pub fn first_grant_story(results: &Results) -> Option<String> {
        use lockpick_checkers::overlap_cause::OverlapCause;
        let overlaps = results.overlapping_holders.as_ref()?;
        let first = overlaps.overlaps.iter().find(|o| {
            matches!(
                o.cause,
                OverlapCause::GrantedUnderLiveLease | OverlapCause::LostInFailover
            )
        })?;
        let failover = match first.cause {
            OverlapCause::LostInFailover => format!(" ({})", first.cause.describe()),
            _ => String::new(),
        };
        Some(format!(
            "client {} was granted the lock at {} while client {}'s lease was live{failover}: {}",
            first.second.process,
            lockpick_checkers::story::seconds(first.second.start),
            first.first.process,
            first.why
        ))
    }
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
    /// Nothing to judge: the cell did not run (n/a, or interrupted).
    NotJudged,
}

impl Judgement {
    pub(in crate::compare) fn rank(&self) -> u8 {
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

/// Where a cell stands against its expectation, the way a reviewer sorts them: broken first
/// (it fails the gate), then not proven, then held (whatever the verdict: a known-unsafe cell
/// that showed its violation holds), then the cells that did not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    Broken,
    NotProven,
    Held,
    NotApplicable,
    NotRun,
}

impl State {
    /// The state in a few words.
    pub fn words(self) -> &'static str {
        match self {
            State::Broken => "broken",
            State::NotProven => "not proven",
            State::Held => "held",
            State::NotApplicable => "n/a",
            State::NotRun => "not run",
        }
    }

    /// Its CSS class in `compare.html`.
    pub fn class(self) -> &'static str {
        match self {
            State::Broken => "broken",
            State::NotProven => "not-proven",
            State::Held => "held",
            State::NotApplicable => "na",
            State::NotRun => "not-run",
        }
    }
}

/// Which form of a story a judgement quotes.
#[derive(Clone, Copy)]
pub(in crate::compare) enum Form {
    Full,
    Short,
}

/// One expectation against one run.
pub fn judge(expectation: Expectation, f: &Figures) -> Judgement {
    judge_told(expectation, f, Form::Full)
}

pub(in crate::compare) fn judge_told(
    expectation: Expectation,
    f: &Figures,
    form: Form,
) -> Judgement {
    let told = |full: &Option<String>, short: &Option<String>| {
        let story = match form {
            Form::Full => full,
            Form::Short => short.as_ref().map_or(full, |_| short),
        };
        story
            .clone()
            .unwrap_or_else(|| "no story recorded".to_string())
    };
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
                told(&f.first_story, &f.first_story_short)
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
                told(&f.first_stale_write, &f.first_stale_write_short)
            ))
        }
        Expectation::NoGrantUnderLiveLease if f.counts.grants_under_live_lease > 0 => {
            Judgement::Broken(format!(
                "expected no grant under a live lease, found {}: {}",
                f.counts.grants_under_live_lease,
                told(&f.first_grant_under_live_lease, &None)
            ))
        }
        Expectation::NoGrantUnderLiveLease if f.undecidable > 0 => Judgement::Unproven(format!(
            "expected no grant under a live lease, not proven: {} overlap(s) of undecidable cause",
            f.undecidable
        )),
        Expectation::Recovers if f.counts.jams > 0 => Judgement::Broken(format!(
            "expected the lock to recover, found it jammed {} time(s): refused to everyone while \
             certainly free (the jam's story is in the cell's report)",
            f.counts.jams
        )),
        Expectation::NoStaleWriteAccepted
        | Expectation::NoGrantUnderLiveLease
        | Expectation::Recovers
            if !f.unknown_reasons.is_empty() =>
        {
            not_proven()
        }
        Expectation::NoStaleWriteAccepted
        | Expectation::NoGrantUnderLiveLease
        | Expectation::Recovers => Judgement::Holds,
    }
}

/// The share of `[0, limit]` in which no client believed it held the lock.
fn unavailability(model: &Model, limit: u64) -> f64 {
    let mut spans: Vec<(u64, u64)> = model
        .holds
        .iter()
        .map(|h| (h.start.min(limit), h.end.min(limit)))
        .collect();
    spans.sort_unstable();
    let (mut covered, mut reach) = (0u64, 0u64);
    for (start, end) in spans {
        let start = start.max(reach);
        if end > start {
            covered += end - start;
            reach = end;
        }
    }
    1.0 - covered as f64 / limit.max(1) as f64
}
