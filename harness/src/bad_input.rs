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

/// The largest schedule or matrix file lockpick reads: far beyond any real one (a schedule of
/// 10 000 windows is about 1 MB).
pub const MAX_INPUT_FILE_BYTES: u64 = 4 << 20;

/// The text of a file the user named with `flag`: a regular file (a link to one is fine) of at
/// most [`MAX_INPUT_FILE_BYTES`], valid UTF-8. Anything else (`/dev/zero`, a FIFO, a folder, a
/// huge or sparse file) is bad input, refused before any of it is read; a FIFO is opened
/// without waiting for a writer.
pub fn read_input_file(flag: &str, path: &std::path::Path) -> anyhow::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = |why: String| bad(format!("{flag} {}: {why}", path.display()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(|e| refuse(format!("cannot read it: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| refuse(format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(refuse("is not a regular file".into()));
    }
    if meta.len() > MAX_INPUT_FILE_BYTES {
        return Err(refuse(format!(
            "is {} bytes, more than the {} a {flag} file may hold",
            meta.len(),
            MAX_INPUT_FILE_BYTES
        )));
    }
    let mut bytes = Vec::new();
    // Bounded again while reading: the file may grow after it was measured.
    file.take(MAX_INPUT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_INPUT_FILE_BYTES {
        return Err(refuse(format!(
            "grew beyond {MAX_INPUT_FILE_BYTES} bytes while read"
        )));
    }
    String::from_utf8(bytes).map_err(|_| refuse("is not UTF-8 text".into()))
}
