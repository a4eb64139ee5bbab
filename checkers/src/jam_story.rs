//! The story of a jammed lock, told with the same steps as every other story.

use crate::fault::Target;
use crate::liveness::Jam;
use crate::model::Model;
use crate::story::{Step, Story, Teller};
use crate::stuck_keys::JamCause;
use crate::words::seconds;

/// The story of a jammed lock: who held it last (or which attempt left its key), what was done
/// to it, when nobody held it any more and why nothing freed it, and the refusals since.
pub fn of_jam(model: &Model, jam: &Jam) -> Story {
    let mut t = Teller::new(model);
    let a = &jam.last_holder;
    let attempt = match jam.cause {
        JamCause::AttemptLeftKey {
            process,
            completed,
            index,
            ..
        } => Some((process, completed, index)),
        _ => None,
    };
    let held = !a.acquisition.is_empty();
    if held {
        t.acquired(a);
        // Faults up to the first refusal: a client killed with its acquire in flight after the
        // last lease ended may hold the key it never reported, and that is what jammed the lock.
        t.faults(a.start, jam.first_refused_at.max(jam.free_from));
        // And what was done to the holder itself (a kill that ended it), whenever it came.
        for w in model.faults.iter().filter(|w| {
            w.targets.contains(&Target::Client(a.process))
                && w.start >= a.start
                && w.start <= jam.until
        }) {
            t.step(
                w.start,
                None,
                format!(
                    "the nemesis began a {} at {}",
                    w.describe(),
                    seconds(w.start)
                ),
            );
        }
        t.released(a);
    }
    if let Some((process, completed, index)) = attempt {
        let said = model
            .acquire_errors
            .words()
            .map_or(String::new(), |said| format!(" ({said})"));
        t.step(
            completed,
            Some(index),
            format!(
                "client {process}'s acquire did not succeed at {}{said}",
                seconds(completed)
            ),
        );
        if !held {
            t.faults(completed, jam.first_refused_at.max(jam.free_from));
        }
    }
    let free = match jam.cause {
        JamCause::LeasesEnded => format!(
            "from {} nobody held the lock and every earlier lease had certainly ended (the last \
             to end was {})",
            seconds(jam.free_from),
            jam.free_how
        ),
        _ => format!(
            "from {} nobody held the lock, and yet its key stayed: {}",
            seconds(jam.free_from),
            jam.free_how
        ),
    };
    t.cause(jam.free_from, free);
    let clients: Vec<String> = jam.refused_clients.iter().map(|c| c.to_string()).collect();
    t.steps.push(Step {
        time: jam.until,
        index: Some(jam.first_failure_index),
        text: format!(
            "{} acquire attempts by client(s) {} were refused from {} to {}: the lock stayed taken with no one holding it for {} ({} of it with no server fault to explain it){}",
            jam.failed_attempts,
            clients.join(", "),
            seconds(jam.free_from),
            seconds(jam.until),
            seconds(jam.length()),
            seconds(jam.unexcused),
            match jam.next_grant {
                Some(next) => format!("; it was granted again at {}", seconds(next)),
                None => "; it was never granted again".to_string(),
            }
        ),
        violation: true,
        cause: false,
    });
    let title = match (&jam.cause, attempt) {
        (JamCause::LeasesEnded, _) => format!(
            "the lock jammed: refused to everyone for {} after client {}'s lease had ended",
            seconds(jam.length()),
            a.process
        ),
        (_, Some((process, ..))) => format!(
            "the lock jammed: refused to everyone for {} after client {process}'s failed acquire \
             left its key with no expiry",
            seconds(jam.length())
        ),
        _ => format!(
            "the lock jammed: refused to everyone for {} after client {} let go of a key with no \
             expiry",
            seconds(jam.length()),
            a.process
        ),
    };
    t.finish("jam", title)
}
