use super::*;

#[test]
fn no_prefix_names_a_path_outside_its_folder() {
    let root = Path::new("/dev/shm");
    for hostile in [
        "../../tmp/X",
        "/",
        "",
        "..",
        ".",
        "lkp1a2b3c/../..",
        "lkp1a2b3c/x",
        "/etc",
        "lkp1A2B3C",
        "lkp1a2b3c\n",
    ] {
        assert_eq!(leftover_path(root, hostile, ""), None, "{hostile:?}");
        assert_eq!(leftover_path(root, hostile, ".lock"), None, "{hostile:?}");
    }
    assert_eq!(leftover_path(root, "lkp1a2b3c", "/../../x"), None);
    assert_eq!(
        leftover_path(root, "lkp1a2b3c", ".lock"),
        Some(PathBuf::from("/dev/shm/lkp1a2b3c.lock"))
    );
}

#[test]
fn only_a_folder_of_this_user_and_no_link_counts_as_ours() {
    use std::os::unix::fs::{chown, symlink};
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("lkp1a2b3c");
    fs::create_dir(&folder).unwrap();
    assert_eq!(ours(&folder, true), Ownership::Ours);
    assert!(matches!(ours(&folder, false), Ownership::Foreign(_)));
    let link = dir.path().join("lkp1a2b3d");
    symlink(&folder, &link).unwrap();
    assert_eq!(ours(&link, true), Ownership::Foreign("is a link".into()));
    assert_eq!(
        ours(&dir.path().join("lkp1a2b3e"), true),
        Ownership::Missing
    );
    if nix::unistd::geteuid().is_root() {
        let theirs = dir.path().join("lkp1a2b3f");
        fs::create_dir(&theirs).unwrap();
        chown(&theirs, Some(65534), Some(65534)).unwrap();
        assert!(matches!(ours(&theirs, true), Ownership::Foreign(why) if why.contains("65534")));
    }
}
