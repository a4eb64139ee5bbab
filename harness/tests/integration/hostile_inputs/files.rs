//! Schedule and matrix files that are not files, or too big; plans of too many cells.

use std::time::Duration;

use super::within;
use crate::common::lockpick;

#[test]
fn schedule_and_matrix_files_are_regular_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let fifo = at("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::create_dir(at("folder")).unwrap();
    // 3 GB, sparse: nothing on disk, everything to a reader.
    std::fs::File::create(at("sparse"))
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    std::fs::write(at("five-mib"), vec![b' '; 5 << 20]).unwrap();
    std::fs::write(at("not-utf8"), b"\xff\xfe\xfd").unwrap();
    std::os::unix::fs::symlink("/dev/zero", at("link-to-zero")).unwrap();
    let files = [
        "/dev/zero".into(),
        "/dev/urandom".into(),
        "/dev/null".into(),
        fifo,
        at("folder"),
        at("sparse"),
        at("five-mib"),
        at("not-utf8"),
        at("link-to-zero"),
        at("missing"),
    ];
    for file in &files {
        for (command, flag) in [("run", "--schedule"), ("compare", "--matrix")] {
            let store = tempfile::tempdir().unwrap();
            let mut lockpick = lockpick();
            lockpick
                .arg(command)
                .arg(flag)
                .arg(file)
                .arg("--store")
                .arg(store.path());
            let out = within(lockpick, Duration::from_secs(30));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(254), "{flag} {file:?}: {stderr}");
            assert!(
                stderr.contains(flag) && stderr.lines().count() == 1,
                "{stderr}"
            );
            assert_eq!(
                std::fs::read_dir(store.path()).unwrap().count(),
                0,
                "{flag} {file:?} left files in the store"
            );
        }
    }
}

#[test]
fn a_plan_beyond_max_cells_is_refused_before_any_cell_runs() {
    let store = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], says: &str| {
        let mut command = lockpick();
        command
            .arg("compare")
            .args(args)
            .arg("--store")
            .arg(store.path());
        let out = within(command, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(254), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(std::fs::read_dir(store.path()).unwrap().count(), 0);
    };
    // The default plan, 4 locks × 2 nemeses, against a bound of 3.
    refused(&["--max-cells", "3"], "more than --max-cells 3");
    // A matrix of 5 × 100 cells (each lock listed once: a lock listed twice is refused for
    // its name).
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("lockpick.toml");
    let locks = r#""redis","redlock","rslock","etcd","zookeeper""#;
    let nemeses: Vec<String> = (0..100).map(|_| "\"none\"".to_string()).collect();
    std::fs::write(
        &matrix,
        format!("locks = [{locks}]\nnemeses = [{}]\n", nemeses.join(",")),
    )
    .unwrap();
    refused(&["--matrix", matrix.to_str().unwrap()], "--max-cells");
}
