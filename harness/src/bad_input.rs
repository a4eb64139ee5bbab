//! Bad input from the user or the environment: exit code 254, one line naming the culprit, and
//! nothing created. Every file lockpick reads that it did not just make (a schedule, a matrix,
//! a history, a stored run's files) is read here: opened without waiting, refused unless it is
//! a regular file, and bounded in size before any of it is read.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::fcntl::OFlag;

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

/// The largest `config.json`, `command.txt` or `schedule.json` of a run folder: the same
/// bound as a schedule the user names (a real run's command or config is under 10 KB).
pub const MAX_RUN_FILE_BYTES: u64 = MAX_INPUT_FILE_BYTES;

/// The largest `results.json` read back: it lists every violation, so a long broken run's is
/// large, but far from this.
pub const MAX_RESULTS_BYTES: u64 = 64 << 20;

/// The largest history checked. Histories are streamed (memory follows the model, and the
/// checkers bound each line), so this only stops a file without end; a day of a busy run
/// writes a few GB.
pub const MAX_HISTORY_BYTES: u64 = 64 << 30;

/// Whether the file's own name may be a link. A file the user names may be one; a file inside
/// a run folder may not (the folder is hostile input, and a link could point anywhere).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Links {
    Follow,
    Refuse,
}

/// Opens `path` for reading without waiting for a FIFO's writer, and measures it: the file
/// and its size if it is a regular file of at most `max` bytes, else why not.
fn open_regular(path: &Path, links: Links, max: u64) -> Result<(File, u64), String> {
    let mut flags = OFlag::O_NONBLOCK;
    if links == Links::Refuse {
        flags |= OFlag::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32) {
                "is a link, and lockpick follows no link inside a run folder".to_string()
            } else if e.kind() == std::io::ErrorKind::NotFound {
                "does not exist".to_string()
            } else {
                format!("cannot read it: {e}")
            }
        })?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    if meta.len() > max {
        return Err(format!(
            "is {} bytes, more than the {max} such a file may hold",
            meta.len()
        ));
    }
    Ok((file, meta.len()))
}

/// The whole text of a measured file, bounded again while read (it may grow after it was
/// measured).
fn read_bounded(file: File, max: u64) -> Result<String, String> {
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("grew beyond {max} bytes while read"));
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".into())
}

/// The text of a file the user named with `flag`: a regular file (a link to one is fine) of at
/// most [`MAX_INPUT_FILE_BYTES`], valid UTF-8. Anything else (`/dev/zero`, a FIFO, a folder, a
/// huge or sparse file) is bad input, refused before any of it is read; a FIFO is opened
/// without waiting for a writer.
pub fn read_input_file(flag: &str, path: &Path) -> anyhow::Result<String> {
    let refuse = |why: String| bad(format!("{flag} {}: {why}", path.display()));
    let (file, _) = open_regular(path, Links::Follow, MAX_INPUT_FILE_BYTES).map_err(refuse)?;
    read_bounded(file, MAX_INPUT_FILE_BYTES).map_err(refuse)
}

/// The text of the file `name` in the run folder `dir`: a regular file, not a link, of at most
/// `max` bytes, valid UTF-8; anything else is bad input naming the file.
pub fn read_run_file(dir: &Path, name: &str, max: u64) -> anyhow::Result<String> {
    let path = dir.join(name);
    let refuse = |why: String| bad(format!("{}: {why}", path.display()));
    let (file, _) = open_regular(&path, Links::Refuse, max).map_err(refuse)?;
    read_bounded(file, max).map_err(refuse)
}

/// [`read_run_file`], or `None` when the folder has no such file (nor a link by that name).
pub fn read_run_file_if_any(dir: &Path, name: &str, max: u64) -> anyhow::Result<Option<String>> {
    if dir.join(name).symlink_metadata().is_err() {
        return Ok(None);
    }
    read_run_file(dir, name, max).map(Some)
}

/// A history to stream through the checkers: a regular file of at most
/// [`MAX_HISTORY_BYTES`] (never a FIFO, which would stop the check forever, nor a device, which
/// would feed it without end); `links` says whether `path` may be a link.
pub fn open_history(path: &Path, links: Links) -> anyhow::Result<File> {
    let (file, _) = open_regular(path, links, MAX_HISTORY_BYTES).map_err(|why| {
        bad(format!(
            "{}: {why} (a history must be a regular file{})",
            path.display(),
            match links {
                Links::Follow => "",
                Links::Refuse => " of the run folder",
            }
        ))
    })?;
    Ok(file)
}
