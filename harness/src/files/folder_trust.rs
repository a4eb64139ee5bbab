//! Whether a folder lockpick is about to write in could be changed under it by another user.
//! As root, lockpick writes its runs only where nobody else can rename a folder, swap one for a
//! link, or plant files: every folder on the way must belong to root or to this user and be
//! writable by nobody else (unless sticky, as `/tmp` is: there others cannot rename or remove
//! what is not theirs), and every link on the way must be root's or this user's too.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why `path` (or the deepest folder of it that exists) could be changed by someone else;
/// `None` when it cannot.
pub fn changeable_by_others(path: &Path) -> Option<String> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let literal: Vec<PathBuf> = absolute.ancestors().map(Path::to_path_buf).collect();
    // The same folders with every link resolved, so a link's target is judged too.
    let resolved: Vec<PathBuf> = literal
        .iter()
        .find_map(|p| p.canonicalize().ok())
        .map(|real| real.ancestors().map(Path::to_path_buf).collect())
        .unwrap_or_default();
    let me = nix::unistd::geteuid().as_raw();
    for folder in literal.iter().chain(&resolved).rev() {
        let Ok(meta) = std::fs::symlink_metadata(folder) else {
            continue;
        };
        if meta.uid() != 0 && meta.uid() != me {
            return Some(format!(
                "{} belongs to uid {}, and lockpick writes only in folders of root's or its own",
                folder.display(),
                meta.uid()
            ));
        }
        let sticky = meta.mode() & 0o1000 != 0;
        if meta.file_type().is_dir() && meta.mode() & 0o022 != 0 && !sticky {
            return Some(format!(
                "{} can be written by other users (mode {:o}), who could swap what lockpick \
                 writes there for a link",
                folder.display(),
                meta.mode() & 0o7777
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{chown, symlink, PermissionsExt};

    #[test]
    fn a_folder_others_can_change_is_named() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            changeable_by_others(&dir.path().join("store/redis-none")),
            None
        );
        assert_eq!(
            changeable_by_others(Path::new("/tmp/not-there/store")),
            None
        );
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let why = changeable_by_others(&open.join("store")).unwrap();
        assert!(why.contains("can be written by other users"), "{why}");
        // Sticky, like /tmp: others cannot move what is not theirs.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(changeable_by_others(&open.join("store")), None);
        if nix::unistd::geteuid().is_root() {
            let theirs = dir.path().join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            chown(&theirs, Some(65534), Some(65534)).unwrap();
            let why = changeable_by_others(&theirs.join("store")).unwrap();
            assert!(why.contains("uid 65534"), "{why}");
            // A link of root's to their folder: the target is judged as well.
            let link = dir.path().join("link");
            symlink(&theirs, &link).unwrap();
            assert!(changeable_by_others(&link).unwrap().contains("uid 65534"));
            // Their link to root's folder: the link itself is theirs to change.
            let mine = dir.path().join("mine");
            std::fs::create_dir(&mine).unwrap();
            let planted = dir.path().join("planted");
            symlink(&mine, &planted).unwrap();
            nix::unistd::fchownat(
                None,
                &planted,
                Some(65534.into()),
                Some(65534.into()),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .unwrap();
            assert!(changeable_by_others(&planted.join("redis-none"))
                .unwrap()
                .contains("uid 65534"));
        }
    }
}
