//! `compare --shrink`: once the matrix has run and the gate is decided, each broken cell whose
//! run is invalid is shrunk as `lockpick shrink` would (its folder under `<store>/shrink/`),
//! all of them within one budget. A shrink is extra information: it never changes a verdict or
//! the exit code, and one that cannot be made (budget spent, Ctrl-C, a replay that failed) is
//! told with its reason instead.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use lockpick_checkers::Validity;

use crate::cli::{CompareArgs, ViolationKind};
use crate::compare::judge::cell::{judge, Cell, CellName, Judgement};
use crate::compare::plan::matrix::Expectation;
use crate::compare::plan::Plan;
use crate::run::LeftBehind;
use crate::shrink::{self, Budget, Request, Shrunk};
use crate::text::shell;
use crate::text::terminal::field;

/// The shrinks' settings, checked before any cell runs.
pub struct Settings {
    pub replays: u32,
    pub min_failures: u32,
    pub budget: Budget,
}

impl Settings {
    /// `None` without `--shrink`; bad input when its flags are wrong.
    pub fn of(args: &CompareArgs) -> Result<Option<Settings>> {
        if !args.shrink {
            return Ok(None);
        }
        shrink::check_replays(
            args.shrink_replays,
            args.shrink_min_failures,
            ("--shrink-replays", "--shrink-min-failures"),
        )?;
        let budget = Budget::parse(&args.shrink_budget).map_err(|e| {
            crate::bad_input::bad(format!(
                "--shrink-{}",
                e.to_string().trim_start_matches("--")
            ))
        })?;
        Ok(Some(Settings {
            replays: args.shrink_replays,
            min_failures: args.shrink_min_failures,
            budget,
        }))
    }
}

/// One broken cell's shrink.
pub struct CellShrink {
    pub name: CellName,
    pub outcome: std::result::Result<Shrunk, String>,
}

/// The kind of violation a broken cell's shrink must keep: the one its broken expectation
/// names (`None`: any, the run's first).
fn kind_for(expectations: &[Expectation], cell: &Cell) -> Option<ViolationKind> {
    let figures = cell.figures()?;
    let broke = expectations
        .iter()
        .find(|e| matches!(judge(**e, figures), Judgement::Broken(_)))?;
    match broke {
        Expectation::NoStaleWriteAccepted => Some(ViolationKind::StaleWrite),
        Expectation::NoGrantUnderLiveLease => Some(ViolationKind::Overlap),
        Expectation::Recovers => Some(ViolationKind::Jam),
        Expectation::Valid | Expectation::Invalid => None,
    }
}

/// Shrinks every broken, invalid cell in turn, until the budget is spent or Ctrl-C.
pub fn shrink_broken(
    plan: &Plan,
    cells: &[Cell],
    settings: &Settings,
    interrupt: Arc<AtomicBool>,
) -> Result<Vec<CellShrink>> {
    let started = Instant::now();
    let mut runs = 0;
    let mut shrinks = Vec::new();
    for (index, cell) in cells.iter().enumerate() {
        let Some(figures) = cell.figures() else {
            continue;
        };
        if !matches!(cell.judgement, Judgement::Broken(_)) || figures.verdict != Validity::Invalid {
            continue;
        }
        let left = Budget {
            runs: settings.budget.runs.saturating_sub(runs),
            time: settings.budget.time.saturating_sub(started.elapsed()),
        };
        let outcome = if interrupt.load(Ordering::SeqCst) {
            Err("interrupted before its shrink began".to_string())
        } else if left.runs == 0 || left.time.as_secs() == 0 {
            Err(format!(
                "the shrink budget ({} runs, {} s) was spent on the cells before it",
                settings.budget.runs,
                settings.budget.time.as_secs()
            ))
        } else {
            crate::tell!(
                "lockpick compare: shrinking {}",
                field(&cell.name.to_string())
            );
            let run: PathBuf = std::path::absolute(&figures.dir).unwrap_or(figures.dir.clone());
            let request = Request {
                run: &run,
                kind: kind_for(&plan.cells[index].expected.expectations, cell),
                replays: settings.replays,
                min_failures: settings.min_failures,
                budget: left,
                store: &plan.store,
            };
            match shrink::shrink_run(&request, Arc::clone(&interrupt)) {
                // Something of a replay may still act: no further run starts.
                Err(e) if e.downcast_ref::<LeftBehind>().is_some() => return Err(e),
                outcome => outcome.map_err(|e| format!("{e:#}")),
            }
        };
        if let Ok(shrunk) = &outcome {
            runs += shrunk.runs;
        }
        shrinks.push(CellShrink {
            name: cell.name.clone(),
            outcome,
        });
    }
    Ok(shrinks)
}

/// The terminal's lines about the shrinks, after the table.
pub fn tell(shrinks: &[CellShrink]) {
    for s in shrinks {
        let name = field(&s.name.to_string());
        match &s.outcome {
            Ok(shrunk) => {
                crate::say!(
                    "shrunk {name}: {} -> {}, {}in {} runs, {:.0} s; replay: {}",
                    shrunk.from,
                    shrunk.to,
                    confirmed_words(shrunk),
                    shrunk.runs,
                    shrunk.seconds,
                    shell::command(&shrunk.command)
                );
                if let Some(why) = &shrunk.stopped {
                    crate::say!("  (the shrink stopped early: {})", field(why));
                }
            }
            Err(why) => crate::say!("not shrunk {name}: {}", field(why)),
        }
    }
}

/// `failed 2 of 3 replays, ` or, when nothing smaller failed, what was kept.
pub fn confirmed_words(shrunk: &Shrunk) -> String {
    match shrunk.confirmed {
        Some((failed, ran)) => format!("failed {failed} of {ran} replays, "),
        None => "nothing smaller failed (the run's own schedule is kept), ".to_string(),
    }
}
