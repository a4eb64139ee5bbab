use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{Children, Role};
use crate::processes::node_process::LocalProcess;

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A direct child frozen in a cgroup v1 freezer group, where SIGKILL cannot end it until the
/// group thaws: stopping must give up on it instead of waiting for ever.
#[test]
fn stopping_leaves_a_child_that_sigkill_cannot_end_instead_of_hanging() {
    let freezer = Path::new("/sys/fs/cgroup/freezer");
    if !freezer.join("cgroup.procs").exists() {
        eprintln!("no cgroup v1 freezer on this machine: skipped");
        return;
    }
    let group = freezer.join(format!("lockpick-children-{}", std::process::id()));
    std::fs::create_dir(&group).unwrap();
    let child = Command::new("sleep").arg("600").spawn().unwrap();
    std::fs::write(group.join("cgroup.procs"), child.id().to_string()).unwrap();
    std::fs::write(group.join("freezer.state"), "FROZEN").unwrap();
    let state = || std::fs::read_to_string(group.join("freezer.state")).unwrap();
    wait_for("the freeze", || state().trim() == "FROZEN");

    let (stopped, told) = mpsc::channel();
    std::thread::spawn(move || {
        let mut children = Children::default();
        children.add(Role::Client(1), Box::new(LocalProcess(child)));
        children.stop_all(Duration::from_millis(100));
        let _ = stopped.send(());
    });
    let returned = told.recv_timeout(super::REAP_WITHIN * 6);
    // Thawed, the child dies of the SIGKILL it already has; all before any assertion.
    std::fs::write(group.join("freezer.state"), "THAWED").unwrap();
    wait_for("the thawed child's end", || {
        std::fs::read_to_string(group.join("cgroup.procs")).is_ok_and(|p| p.trim().is_empty())
    });
    std::fs::remove_dir(&group).unwrap();
    assert!(
        returned.is_ok(),
        "stopping waited for ever on a frozen child"
    );
}
