//! Where each cell stands against its expectation, and the gate's outcome in words: what the
//! page title, the summary's heading and the JUnit report all say, in the same terms.

use crate::compare::judge::cell::Cell;
pub use crate::compare::judge::judgement::State;

/// How many cells stand where, and what that makes of the gate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub broken: usize,
    pub not_proven: usize,
    pub held: usize,
    pub not_applicable: usize,
    pub not_run: usize,
}

impl Tally {
    pub fn of(cells: &[Cell]) -> Tally {
        let mut t = Tally::default();
        for c in cells {
            *match c.state() {
                State::Broken => &mut t.broken,
                State::NotProven => &mut t.not_proven,
                State::Held => &mut t.held,
                State::NotApplicable => &mut t.not_applicable,
                State::NotRun => &mut t.not_run,
            } += 1;
        }
        t
    }

    /// The gate's outcome, in the words a title starts with (the exit code says the same).
    pub fn gate(&self, interrupted: bool) -> String {
        let cells = |n: usize| {
            if n == 1 {
                "1 cell".to_string()
            } else {
                format!("{n} cells")
            }
        };
        if self.broken > 0 {
            format!("gate FAILED: {} off its expectation", cells(self.broken))
        } else if interrupted {
            format!(
                "gate not proven: interrupted, {} not run",
                cells(self.not_run)
            )
        } else if self.not_proven > 0 {
            format!(
                "gate not proven: {} could not prove it",
                cells(self.not_proven)
            )
        } else {
            "gate passed: every expectation held".to_string()
        }
    }

    /// One line of counts: `1 broken · 0 not proven · 8 held · 1 n/a`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} broken · {} not proven · {} held · {} n/a",
            self.broken, self.not_proven, self.held, self.not_applicable
        );
        if self.not_run > 0 {
            line.push_str(&format!(" · {} not run", self.not_run));
        }
        line
    }
}

/// The cells in the order a reviewer reads them: by state (broken first), then as planned.
pub fn by_state(cells: &[Cell]) -> Vec<&Cell> {
    let mut sorted: Vec<&Cell> = cells.iter().collect();
    sorted.sort_by_key(|c| c.state());
    sorted
}
