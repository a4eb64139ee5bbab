use std::process::{Command, Stdio};

use super::*;

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A process started inside whose grandchild double-forks into a session of its own: both are
/// found in the namespace by their host pids, and ending the namespace ends both.
#[test]
fn ending_the_namespace_ends_a_double_forked_grandchild_too() {
    let mut pids = RunPidNamespace::create(None).unwrap();
    let mut child = pids
        .spawn_inside(|| {
            Command::new("sh")
                .args(["-c", "(setsid sleep 120 &); exec sleep 120"])
                .stdin(Stdio::null())
                .spawn()
                .map_err(Into::into)
        })
        .unwrap();
    let child_pid = Pid::from_raw(child.id() as i32);
    wait_until("two members", || pids.members().len() == 2);
    let members = pids.members();
    assert!(members.contains(&child_pid), "{members:?}");
    let grandchild = *members.iter().find(|&&p| p != child_pid).unwrap();
    // Threads start again on this thread: it left the namespace after the spawn.
    std::thread::spawn(|| ()).join().unwrap();

    let ended = pids.end(Instant::now() + Duration::from_secs(30));
    let _ = child.wait();
    ended.unwrap();
    assert!(
        freezer::is_gone(grandchild),
        "the grandchild outlived its namespace"
    );
    assert!(pids.members().is_empty());
}
