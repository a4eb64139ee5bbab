//! Lookups of holds by acquisition as the builder makes them: the index enters the holds
//! granted since the last lookup first, and a second grant of an acquisition found then is the
//! history's error, at that grant's line.

use super::line_of_index;
use crate::history::Malformed;
use crate::model::{Hold, Model};

/// Enters every hold granted so far in the index; the first grant of an acquisition granted
/// before is the history's error, at its own line.
pub(super) fn settle(model: &mut Model) -> Result<(), Malformed> {
    match model.hold_index.settle(&model.holds) {
        None => Ok(()),
        Some(i) => Err(granted_again(&model.holds[i])),
    }
}

/// The error of `hold`, a grant of an acquisition granted before.
pub(super) fn granted_again(hold: &Hold) -> Malformed {
    Malformed::at(
        line_of_index(hold.start_index),
        format!("acquisition {} granted twice", hold.acquisition),
    )
}

/// The position of the hold of `acquisition`, looked up in the settled index.
pub(super) fn find(model: &mut Model, acquisition: &str) -> Result<Option<usize>, Malformed> {
    settle(model)?;
    Ok(model.hold_index.get(acquisition, &model.holds))
}
