//! Finding a program on the PATH, as a shell would: for requirements, services and runtimes.

use std::path::PathBuf;

/// Finds `program` on the PATH.
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}
