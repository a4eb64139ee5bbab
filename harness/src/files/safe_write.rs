//! Every file lockpick writes goes through here. lockpick runs as root, in folders others may
//! have planted links in (a store in a shared folder, `/dev/shm`): a file is created only
//! exclusively and never through a link (`O_EXCL | O_NOFOLLOW`), and a file that replaces
//! another (a report written again, the store's index) is written to a new file of an
//! unpredictable name beside it and renamed over it, so a link in its place is replaced, never
//! followed, and no reader ever sees half a file.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of the files lockpick writes (before the umask): readable by all, as reports are
/// meant to be read.
const MODE: u32 = 0o644;

/// Creates `path`, which must not exist yet (not even as a link), for writing.
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(MODE)
        .custom_flags(libc_nofollow())
        .open(path)
}

/// Writes `contents` into a new file `path`, which must not exist yet.
pub fn write_new(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    create_new(path)?.write_all(contents.as_ref())
}

/// Replaces `path` with a file holding `contents`: written aside under a random name in the
/// same folder, then renamed over it. Whatever was at `path`, a link included, is replaced.
pub fn replace(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut aside = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".new")
        .tempfile_in(folder)?;
    aside.write_all(contents.as_ref())?;
    aside
        .as_file()
        .set_permissions(Permissions::from_mode(MODE))?;
    aside.as_file().sync_data()?;
    aside.persist(path).map(|_| ()).map_err(|e| e.error)
}

/// Opens `path` to append to it, creating it if it does not exist; a link there is refused,
/// and so is anything but a regular file.
pub fn append(path: &Path) -> io::Result<File> {
    match create_new(path) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        made => return made,
    }
    // Without blocking: opening a FIFO to write waits for a reader (regular files ignore it).
    let file = OpenOptions::new()
        .append(true)
        .custom_flags(libc_nofollow() | nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

fn libc_nofollow() -> i32 {
    nix::fcntl::OFlag::O_NOFOLLOW.bits()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_planted_link_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("roots-file");
        std::fs::write(&target, "precious").unwrap();
        let link = dir.path().join("report.html");
        symlink(&target, &link).unwrap();
        // Created exclusively: the link is in the way, refused.
        assert_eq!(
            write_new(&link, "x").unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        // Appended to: a link is refused.
        assert!(append(&link).is_err());
        // Replaced: the link gives way to a file, its target untouched.
        replace(&link, "report").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "report");
        assert!(!link.symlink_metadata().unwrap().file_type().is_symlink());
        // Nothing aside is left.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn a_dangling_link_is_not_created_through_either() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("would-be-made");
        let link = dir.path().join("empty.jsonl");
        symlink(&target, &link).unwrap();
        assert!(write_new(&link, "").is_err());
        assert!(append(&link).is_err());
        assert!(!target.exists());
        // A fifo is refused for appending (it would block, and is not a log).
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(write_new(&fifo, "").is_err());
        assert!(append(&fifo).is_err());
    }
}
