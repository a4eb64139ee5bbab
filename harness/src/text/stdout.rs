//! What lockpick prints for a person on standard output. A reader that has gone (`lockpick run
//! ... | head -1`) closes the pipe; that is no failure of the run, whose results are stored and
//! whose exit code must stay its verdict's, so a closed or broken standard output is ignored
//! here rather than panicking (`println!` would, and the exit code would become 255). The same
//! for standard error (`2>&1 | head -1`).
//!
//! The `lockpick client` process does not print through this: its standard output is the
//! history, and a closed one means the controller is gone.

use std::io::Write;

/// Writes `text` as it is to standard output, ignoring a reader that has gone.
pub fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// `println!` to standard output that ignores a reader that has gone.
#[macro_export]
macro_rules! say {
    () => { $crate::text::stdout::print("\n") };
    ($($arg:tt)*) => { $crate::text::stdout::print(&format!("{}\n", format_args!($($arg)*))) };
}

/// Writes `text` as it is to standard error, ignoring a reader that has gone (`2>&1 | head`).
pub fn print_err(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
}

/// `eprintln!` that ignores a reader of standard error that has gone.
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => { $crate::text::stdout::print_err(&format!("{}\n", format_args!($($arg)*))) };
}
