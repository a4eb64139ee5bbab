//! `spawn` wires what the spec says, and a namespace node's process is where the run needs it:
//! in the node's network, leading its own group, in the run's cgroup.

use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;

use nix::unistd::Pid;

use super::*;
use crate::run_prefix::RunPrefix;
use crate::runtime::netns::NetnsRuntime;
use crate::runtime::Runtime;

fn shell(script: &str) -> ProcessSpec {
    ProcessSpec::new("a shell", Programs::Harness, Path::new("sh")).args(["-c", script])
}

#[test]
fn output_and_errors_named_the_same_log_are_appended_to_it_in_order() {
    let folder = tempfile::tempdir().unwrap();
    let log = folder.path().join("server.log");
    std::fs::write(&log, "earlier run\n").unwrap();
    let mut spec = shell("echo out; echo err >&2; echo \"$WHO\"").streams(
        Stream::Null,
        Stream::appended_log(&log),
        Stream::appended_log(&log),
    );
    spec.env.push(("WHO".into(), "n1".into()));
    let mut process = spawn_here(Command::new("sh"), &spec).unwrap();
    assert!(process.wait().unwrap().success());
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "earlier run\nout\nerr\nn1\n"
    );
}

#[test]
fn a_new_log_refuses_an_existing_file_and_pipes_reach_the_controller() {
    let folder = tempfile::tempdir().unwrap();
    let log = folder.path().join("client.log");
    std::fs::write(&log, "").unwrap();
    let taken = shell("true").streams(Stream::Null, Stream::Null, Stream::new_log(&log));
    let refused = spawn_here(Command::new("sh"), &taken).err().unwrap();
    assert!(
        format!("{refused:#}").contains("cannot open"),
        "{refused:#}"
    );

    let fresh = folder.path().join("fresh.log");
    let spec = shell("read secret; echo \"got $secret\"; echo oops >&2").streams(
        Stream::Piped,
        Stream::Piped,
        Stream::new_log(&fresh),
    );
    let mut process = spawn_here(Command::new("sh"), &spec).unwrap();
    process.take_stdin().unwrap().write_all(b"s3\n").unwrap();
    let mut out = String::new();
    process
        .take_stdout()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(process.wait().unwrap().success());
    assert_eq!(out, "got s3\n");
    assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "oops\n");
}

#[test]
fn a_namespace_node_process_runs_in_the_node_network_its_own_group_and_the_run_cgroup() {
    let prefix = RunPrefix::claim().unwrap();
    let mut runtime = NetnsRuntime::create(&prefix.name, prefix.subnet()).unwrap();
    let node = runtime.add_node("n1").unwrap();
    let spec = ProcessSpec::new("a sleeper", Programs::Node, Path::new("sleep")).arg("600");
    let mut process = runtime.spawn(&node, &spec).unwrap();
    let pid = process.pid();
    let inode = |path: String| std::fs::metadata(path).unwrap().ino();
    let network = inode(format!("/proc/{pid}/ns/net"));
    let node_network = inode(format!("/run/netns/{}", node.host_name));
    let group = nix::unistd::getpgid(Some(pid));
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let has_cgroup = runtime.cgroup_procs().is_some();
    process.kill().unwrap();
    process.wait().unwrap();
    assert!(runtime.teardown().is_empty());

    assert_eq!(network, node_network);
    assert_ne!(network, inode("/proc/self/ns/net".to_string()));
    assert_eq!(group, Ok(Pid::from_raw(pid.as_raw())));
    if has_cgroup {
        assert!(cgroup.trim_end().ends_with(&prefix.name), "{cgroup}");
    }
}
