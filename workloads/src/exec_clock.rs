//! The evidence that `skew-clients` moved a client program's clock, in the program's own word.
//!
//! The harness moves the wall clock of a `--lock exec:...` program by patching its vDSO, then
//! writes a new line to the client's skew file (`<offset_ms> <sequence>`). Before its next
//! request, the client sees the line has changed and asks the program `{"op": "clock"}` (when
//! its hello offered `"clock": true`); it times the exchange on its own wall clock, which no
//! fault moves, and writes the reading to the file beside the skew file
//! ([`reading_file`]), naming the line it answers. The harness waits for that reading and counts
//! the skew as effective only when the program's clock is seen off by it.
//!
//! Requests go one at a time, so a clock is asked only between the worker's requests: the
//! reading comes before the next `acquire` or `release`, at most one acquire or one critical
//! section after the skew.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::exec_session::{Breakage, Session, Verdict};

/// The file a client writes the readings of its program's clock to, beside its skew file.
pub fn reading_file(skew_file: &Path) -> PathBuf {
    let mut name = skew_file.as_os_str().to_owned();
    name.push("-read");
    PathBuf::from(name)
}

/// One reading of a client program's clock, or why there is none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockReading {
    /// The skew file's line this reading answers.
    pub asked: String,
    /// How far the program's wall clock is from the client's (ms), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_ms: Option<i64>,
    /// Half the exchange's round trip, rounded up (ms): how far the reading may be off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where a client sends its readings (the harness writes them to [`reading_file`]).
pub type Report = Box<dyn Fn(&ClockReading) + Send>;

/// Answers the harness's asks for a program's clock.
pub struct ClockAsks {
    skew_file: PathBuf,
    /// The skew file's line last answered.
    answered: Option<String>,
    report: Report,
}

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl ClockAsks {
    pub fn new(skew_file: PathBuf, report: Report) -> ClockAsks {
        ClockAsks {
            skew_file,
            answered: None,
            report,
        }
    }

    /// If the skew file has a line not answered yet, asks `session` for its clock (within
    /// `bound`) and reports the reading. A program that offered `clock` and then breaks the
    /// protocol on it gives its breakage.
    pub fn answer(&mut self, session: &mut Session, bound: Duration) -> Result<(), Breakage> {
        let Ok(line) = std::fs::read_to_string(&self.skew_file) else {
            return Ok(());
        };
        let asked = line.trim().to_string();
        if asked.is_empty() || self.answered.as_deref() == Some(asked.as_str()) {
            return Ok(());
        }
        self.answered = Some(asked.clone());
        let mut reading = ClockReading {
            asked,
            offset_ms: None,
            uncertainty_ms: None,
            error: None,
        };
        if !session.tells_clock {
            reading.error = Some("its hello did not offer \"clock\": true".to_string());
            (self.report)(&reading);
            return Ok(());
        }
        let sent = wall_ms();
        let answer = session.request("clock", json!({}), bound)?;
        let received = wall_ms();
        match (answer.result, answer.wall_ms) {
            (Verdict::Ok, Some(wall)) => {
                let half = (received - sent + 1) / 2;
                reading.offset_ms = Some(wall as i64 - (sent + half));
                reading.uncertainty_ms = Some(half.max(1));
            }
            _ => {
                reading.error = Some(
                    answer
                        .error
                        .unwrap_or_else(|| "it answered clock with no wall_ms".to_string()),
                );
            }
        }
        (self.report)(&reading);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A program 5 s ahead: it answers `clock` with `date`'s ms plus 5000.
    const AHEAD: &str = r#"echo '{"protocol": 1, "clock": true}'; while read line; do
        id=${line#*\"id\":}; id=${id%%,*}
        echo "{\"id\": $id, \"result\": \"ok\", \"wall_ms\": $(( $(date +%s%3N) + 5000 ))}"
    done"#;

    fn scratch(name: &str) -> PathBuf {
        let pid = std::process::id();
        std::env::temp_dir().join(format!("lockpick-clock-asks-{pid}-{name}"))
    }

    /// Where renewal reports would go: these programs make none.
    fn renewals() -> crate::exec_renewal::Renewals {
        crate::exec_renewal::Renewals::new(crate::clock::RunClock::start())
    }

    fn asks(skew_file: &Path) -> (ClockAsks, Arc<Mutex<Vec<ClockReading>>>) {
        let seen: Arc<Mutex<Vec<ClockReading>>> = Arc::default();
        let into = Arc::clone(&seen);
        let report: Report = Box::new(move |r| into.lock().unwrap().push(r.clone()));
        (ClockAsks::new(skew_file.to_path_buf(), report), seen)
    }

    #[test]
    fn a_new_line_in_the_skew_file_is_answered_once_with_the_programs_clock() {
        let skew_file = scratch("answered");
        let program = ["sh".to_string(), "-c".to_string(), AHEAD.to_string()];
        let mut session =
            Session::start(&program, &[], Duration::from_secs(5), &renewals()).unwrap();
        let (mut asks, seen) = asks(&skew_file);
        let bound = Duration::from_secs(5);
        asks.answer(&mut session, bound).unwrap();
        assert!(seen.lock().unwrap().is_empty(), "no line, no ask");
        std::fs::write(&skew_file, "5000 1\n").unwrap();
        asks.answer(&mut session, bound).unwrap();
        asks.answer(&mut session, bound).unwrap();
        let readings = seen.lock().unwrap().clone();
        assert_eq!(readings.len(), 1, "{readings:?}");
        assert_eq!(readings[0].asked, "5000 1");
        let offset = readings[0].offset_ms.expect("told");
        assert!((offset - 5000).abs() < 500, "{readings:?}");
        session.kill();
        std::fs::remove_file(&skew_file).unwrap();
    }

    #[test]
    fn a_program_that_does_not_offer_clock_is_not_asked() {
        let skew_file = scratch("not-offered");
        std::fs::write(&skew_file, "5000 1\n").unwrap();
        let program = [
            "sh".to_string(),
            "-c".to_string(),
            r#"echo '{"protocol": 1}'; sleep 5"#.to_string(),
        ];
        let mut session =
            Session::start(&program, &[], Duration::from_secs(5), &renewals()).unwrap();
        let (mut asks, seen) = asks(&skew_file);
        asks.answer(&mut session, Duration::from_millis(200))
            .unwrap();
        let readings = seen.lock().unwrap().clone();
        assert_eq!(readings.len(), 1);
        assert!(readings[0].offset_ms.is_none());
        assert!(readings[0]
            .error
            .as_deref()
            .unwrap()
            .contains("did not offer"));
        session.kill();
        std::fs::remove_file(&skew_file).unwrap();
    }

    #[test]
    fn a_reading_names_the_line_it_answers_and_round_trips() {
        let reading = ClockReading {
            asked: "5000 3".to_string(),
            offset_ms: Some(4_998),
            uncertainty_ms: Some(1),
            error: None,
        };
        let text = serde_json::to_string(&reading).unwrap();
        assert_eq!(
            text,
            r#"{"asked":"5000 3","offset_ms":4998,"uncertainty_ms":1}"#
        );
        assert_eq!(
            serde_json::from_str::<ClockReading>(&text).unwrap(),
            reading
        );
        assert_eq!(
            reading_file(Path::new("/s/clock-skew-c0")),
            Path::new("/s/clock-skew-c0-read")
        );
    }
}
