//! Teardown never lets lockpick exit quietly beside a process of its run: it waits until each
//! killed process is gone, and names any that outlives its bound.

use std::path::PathBuf;
use std::process::Child;

use super::*;
use crate::processes::freezer;
use crate::run_prefix::RunPrefix;

const FREEZER_V1: &str = "/sys/fs/cgroup/freezer";

/// A cgroup v1 freezer group: a task frozen there does not act on SIGKILL until thawed, as a
/// process stuck in an uninterruptible wait on a loaded machine would not.
struct FrozenGroup(PathBuf);

impl FrozenGroup {
    fn holding(pid: Pid) -> FrozenGroup {
        let name = format!("lockpick-test-{}", std::process::id());
        let group = FrozenGroup(Path::new(FREEZER_V1).join(name));
        std::fs::create_dir(&group.0).unwrap();
        std::fs::write(group.0.join("cgroup.procs"), pid.to_string()).unwrap();
        std::fs::write(group.0.join("freezer.state"), "FROZEN").unwrap();
        group
    }
}

impl Drop for FrozenGroup {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("freezer.state"), "THAWED");
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::fs::remove_dir(&self.0).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn sleeper(runtime: &NetnsRuntime, node: &Node) -> Child {
    runtime
        .command(node, Path::new("sleep"))
        .unwrap()
        .arg("600")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

fn pid_of(child: &Child) -> Pid {
    Pid::from_raw(child.id() as i32)
}

#[test]
fn teardown_ends_a_stopped_process_and_names_one_that_outlives_its_bound() {
    if !Path::new(FREEZER_V1).join("cgroup.procs").exists() {
        eprintln!("no cgroup v1 freezer on this machine: skipped");
        return;
    }
    let prefix = RunPrefix::claim().unwrap();
    let runtime = NetnsRuntime::create(&prefix.name, prefix.subnet()).unwrap();
    let mut runtime = runtime.with_teardown_wait(Duration::from_secs(2));
    let node = runtime.add_node("n1").unwrap();
    let mut stopped = sleeper(&runtime, &node);
    let mut stuck = sleeper(&runtime, &node);
    kill(pid_of(&stopped), Signal::SIGSTOP).unwrap();
    let frozen = FrozenGroup::holding(pid_of(&stuck));
    let cgroup = runtime.cgroup.as_ref().map(|c| c.path().to_path_buf());

    let started = Instant::now();
    let problems = runtime.teardown();
    let took = started.elapsed();

    let stopped_gone = freezer::is_gone(pid_of(&stopped));
    let stuck_alive = !freezer::is_gone(pid_of(&stuck));
    // Thawed, the frozen one dies of the SIGKILL it already has; then its cgroup can go. (All
    // before any assertion, so that a failure leaves nothing behind either.)
    drop(frozen);
    let _ = stuck.wait();
    let _ = stopped.wait();
    if let Some(cgroup) = cgroup {
        let deadline = Instant::now() + Duration::from_secs(5);
        crate::processes::cgroup::kill_and_remove(&cgroup, deadline).unwrap();
    }

    // The stopped one died; the frozen one outlived the bound, and is named.
    assert!(stopped_gone, "a SIGSTOPped process survived");
    assert!(stuck_alive);
    let named: Vec<&str> = problems
        .iter()
        .flat_map(|p| p.split(|c: char| !c.is_ascii_digit()))
        .collect();
    let stuck_pid = stuck.id().to_string();
    assert!(
        named.contains(&stuck_pid.as_str()),
        "teardown kept quiet about process {stuck_pid}, still alive: {problems:?}"
    );
    assert!(
        !named.contains(&stopped.id().to_string().as_str()),
        "{problems:?}"
    );
    assert!(took >= Duration::from_secs(2), "gave up after {took:?}");
    assert!(took < Duration::from_secs(10), "waited {took:?}");
}
