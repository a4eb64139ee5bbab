//! The oracle on real servers: a candidate schedule is replayed as a normal `lockpick run`
//! (its own prefix, subnet, run folder and teardown) up to k times, and counts as failing when
//! m of them show the kind of violation sought. Replays stop early once the answer is settled,
//! and none starts once the budget is spent or Ctrl-C was pressed.
//!
//! Each candidate lives in `<shrink>/candidates/<n>/` (its schedule and its replays' store);
//! one that does not fail, or is superseded by a smaller failing one, is removed again.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use lockpick_checkers::Validity;
use serde::Serialize;

use super::search::{Answer, Candidate, Oracle};
use super::source::{self, Source};
use crate::bad_input::bad;
use crate::cli::ViolationKind;
use crate::config::{parse_duration, RunConfig};
use crate::run::LeftBehind;
use crate::schedule::Schedule;
use crate::store;

/// What the search may spend.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Budget {
    pub runs: u32,
    #[serde(serialize_with = "seconds")]
    pub time: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_secs())
}

impl Budget {
    /// `runs=60,time=30m`, either part optional (the other keeps its default).
    pub fn parse(text: &str) -> Result<Budget> {
        let mut budget = Budget {
            runs: 60,
            time: Duration::from_secs(30 * 60),
        };
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('=') {
                Some(("runs", n)) => {
                    budget.runs = n.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                        bad(format!(
                            "--budget {text}: runs={n} is not a whole number above 0"
                        ))
                    })?;
                }
                Some(("time", d)) => budget.time = parse_duration("--budget time", d)?,
                _ => {
                    return Err(bad(format!(
                        "--budget {text}: {part:?} is neither runs=N nor time=D (as \
                         runs=60,time=30m)"
                    )))
                }
            }
        }
        Ok(budget)
    }
}

/// One candidate tried, for the progress lines and `shrink.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub step: String,
    pub windows: usize,
    pub clients: u32,
    pub time_limit_ms: u64,
    pub replays: u32,
    pub failed: u32,
    pub kept: bool,
}

pub struct Replayer<'a> {
    pub source: &'a Source,
    pub dir: &'a Path,
    pub kind: ViolationKind,
    pub replays: u32,
    pub min_failures: u32,
    pub budget: Budget,
    pub started: Instant,
    pub interrupt: Arc<AtomicBool>,
    pub runs: u32,
    pub steps: Vec<Step>,
    /// The best candidate's folder and the run folders of its failing replays.
    pub best: Option<(PathBuf, Vec<PathBuf>)>,
    /// Why the search stopped early, if it did.
    pub stopped: Option<String>,
    pub error: Option<anyhow::Error>,
}

impl Replayer<'_> {
    fn spent(&self) -> Option<String> {
        if self.interrupt.load(Ordering::SeqCst) {
            Some("interrupted".to_string())
        } else if self.runs >= self.budget.runs {
            Some(format!("the budget of {} runs is spent", self.budget.runs))
        } else if self.started.elapsed() >= self.budget.time {
            Some(format!(
                "the budget of {} s is spent",
                self.budget.time.as_secs()
            ))
        } else {
            None
        }
    }

    /// Replays the candidate until m of k are settled: how many failed and how many ran, or
    /// `None` when the search must stop.
    fn replay(
        &mut self,
        step: &str,
        candidate: &Candidate,
        folder: &Path,
    ) -> Result<Option<(u32, u32)>> {
        let schedule = Schedule {
            windows: candidate.windows.clone(),
            ..self.source.schedule.clone()
        };
        let schedule_path = folder.join(store::SCHEDULE);
        let text = serde_json::to_string_pretty(&schedule)? + "\n";
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&schedule_path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .with_context(|| format!("cannot write {}", schedule_path.display()))?;
        let store = folder.join("runs");
        let (words, args) = self.source.replay_command(
            &schedule_path,
            candidate.clients,
            candidate.time_limit_ms,
            Some(&store),
        )?;
        let config = RunConfig::from_args(&args, words)?;
        let (mut failed, mut passed) = (0, 0);
        let mut failing_runs = Vec::new();
        while failed < self.min_failures && passed <= self.replays - self.min_failures {
            if let Some(why) = self.spent() {
                self.stopped = Some(why);
                return Ok(None);
            }
            self.runs += 1;
            let finished = crate::run::run(
                &config,
                Arc::clone(&self.interrupt),
                crate::report::summary_md::RunSummary::FolderOnly,
            )?;
            finished.left_nothing_behind()?;
            if finished.interrupted {
                self.stopped = Some("interrupted".to_string());
                return Ok(None);
            }
            let kinds = source::kinds_of(&finished.results);
            let fails = finished.results.valid == Validity::Invalid && kinds.contains(&self.kind);
            if fails {
                failed += 1;
                failing_runs.push(finished.dir.clone());
            } else {
                passed += 1;
            }
            eprintln!(
                "lockpick shrink: [run {}, {:.0} s] {step} ({} window(s), {} clients, {}): replay \
                 {} {}{} -> {failed} of {} failed",
                self.runs,
                self.started.elapsed().as_secs_f64(),
                candidate.windows.len(),
                candidate.clients,
                source::duration_words(candidate.time_limit_ms),
                failed + passed,
                format!("{:?}", finished.results.valid).to_uppercase(),
                if kinds.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", source::names(&kinds))
                },
                failed + passed,
            );
        }
        if failed >= self.min_failures {
            self.keep(folder, failing_runs);
        }
        Ok(Some((failed, failed + passed)))
    }

    /// Makes `folder` the best candidate's, removing the one it supersedes.
    fn keep(&mut self, folder: &Path, runs: Vec<PathBuf>) {
        if let Some((previous, _)) = self.best.replace((folder.to_path_buf(), runs)) {
            let _ = fs::remove_dir_all(previous);
        }
    }

    /// A fresh folder for the `n`th candidate, created exclusively.
    fn candidate_folder(&self) -> Result<PathBuf> {
        let parent = self.dir.join("candidates");
        match fs::create_dir(&parent) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && parent.is_dir() => {}
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", parent.display())),
        }
        let folder = parent.join(format!("{:03}", self.steps.len() + 1));
        fs::create_dir(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
        Ok(folder)
    }
}

impl Oracle for Replayer<'_> {
    fn test(&mut self, step: &str, candidate: &Candidate) -> Answer {
        if let Some(why) = self.spent() {
            self.stopped = Some(why);
            return Answer::Stop;
        }
        let tried = self.candidate_folder().and_then(|folder| {
            let answer = self.replay(step, candidate, &folder);
            let kept = matches!(&self.best, Some((best, _)) if *best == folder);
            // A run that left part of itself behind keeps its folder: the error names it.
            let left_behind = answer
                .as_ref()
                .is_err_and(|e| e.downcast_ref::<LeftBehind>().is_some());
            if !kept && !left_behind {
                let _ = fs::remove_dir_all(&folder);
            }
            answer.map(|settled| settled.map(|(failed, ran)| (failed, ran, kept)))
        });
        match tried {
            Ok(Some((failed, ran, kept))) => {
                self.steps.push(Step {
                    step: step.to_string(),
                    windows: candidate.windows.len(),
                    clients: candidate.clients,
                    time_limit_ms: candidate.time_limit_ms,
                    replays: ran,
                    failed,
                    kept,
                });
                if kept {
                    Answer::Fails
                } else {
                    Answer::Passes
                }
            }
            Ok(None) => Answer::Stop,
            Err(e) => {
                self.stopped = Some(format!("a replay failed: {e:#}"));
                self.error = Some(e);
                Answer::Stop
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_reads_runs_and_time_in_either_order() {
        let b = Budget::parse("time=2m,runs=7").unwrap();
        assert_eq!((b.runs, b.time), (7, Duration::from_secs(120)));
        let b = Budget::parse("runs=5").unwrap();
        assert_eq!((b.runs, b.time), (5, Duration::from_secs(1800)));
        for wrong in ["runs=0", "runs=x", "5", "time=soon", "walls=3"] {
            let e = Budget::parse(wrong).unwrap_err().to_string();
            assert!(e.starts_with("--budget"), "{wrong}: {e}");
        }
    }
}
