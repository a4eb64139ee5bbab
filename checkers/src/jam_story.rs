//! The story of a jammed lock, told with the same steps as every other story.

use crate::liveness::Jam;
use crate::model::Model;
use crate::story::{Step, Story, Teller};
use crate::words::seconds;

/// The story of a jammed lock: who held it last, what was done to it, when its lease certainly
/// ended, and the refusals since.
pub fn of_jam(model: &Model, jam: &Jam) -> Story {
    let mut t = Teller::new(model);
    let a = &jam.last_holder;
    t.acquired(a);
    // Faults up to the first refusal: a client killed with its acquire in flight after the last
    // lease ended may hold the key it never reported, and that is what jammed the lock.
    t.faults(a.start, jam.first_refused_at.max(jam.free_from));
    t.released(a);
    t.cause(
        jam.free_from,
        format!(
            "from {} nobody held the lock and every earlier lease had certainly ended (the last to end was {})",
            seconds(jam.free_from),
            jam.free_how
        ),
    );
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
    let title = format!(
        "the lock jammed: refused to everyone for {} after client {}'s lease had ended",
        seconds(jam.length()),
        a.process
    );
    t.finish("jam", title)
}
