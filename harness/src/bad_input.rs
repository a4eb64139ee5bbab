//! Bad input from the user or the environment: exit code 254, one line naming the culprit, and
//! nothing created.

use std::fmt;

#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

pub fn bad(message: impl Into<String>) -> anyhow::Error {
    BadInput(message.into()).into()
}
