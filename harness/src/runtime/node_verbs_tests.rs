//! The default node verbs, on processes of this machine: what the kernel reports back is the
//! history's evidence, so each verb is checked against /proc, not against its own word.

use std::os::unix::process::CommandExt;

use super::process_spec::{spawn_here, Programs, Stream};
use super::*;

/// A runtime whose one node is this machine's own network: the defaults alone.
struct Here;

impl Runtime for Here {
    fn add_node(&mut self, _name: &str) -> Result<Node> {
        anyhow::bail!("no nodes here")
    }
    fn spawn(&self, node: &Node, spec: &ProcessSpec) -> Result<Box<dyn NodeProcess>> {
        spawn_here(self.command(node, &spec.program)?, spec)
    }
    fn command(&self, _node: &Node, program: &Path) -> Result<Command> {
        let mut command = Command::new(program);
        command.process_group(0);
        Ok(command)
    }
    fn network_namespace(&self, _node: &Node) -> Result<std::fs::File> {
        Ok(std::fs::File::open("/proc/self/ns/net")?)
    }
    fn probe(&self, _node: &Node, probe: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()> {
        probe()
    }
    fn teardown(&mut self) -> Vec<String> {
        Vec::new()
    }
}

fn node() -> Node {
    Node {
        name: "n1".into(),
        host_name: "n1".into(),
        ip: Ipv4Addr::LOCALHOST,
    }
}

/// A shell that starts a grandchild leading a process group of its own (as a database's
/// backends may), so a signal to the shell's group alone would miss it.
fn family(runtime: &Here) -> (Box<dyn NodeProcess>, Pid) {
    let spec = ProcessSpec::new("a family", Programs::Node, Path::new("sh"))
        .args(["-c", "setsid sleep 100 & echo $!; wait"])
        .streams(Stream::Null, Stream::Piped, Stream::Null);
    let mut child = runtime.spawn(&node(), &spec).unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.take_stdout().unwrap()),
        &mut line,
    )
    .unwrap();
    (child, Pid::from_raw(line.trim().parse().unwrap()))
}

#[test]
fn a_frozen_process_and_its_descendants_are_seen_stopped_and_a_thawed_one_running() {
    let runtime = Here;
    let (mut child, grandchild) = family(&runtime);
    let pid = child.pid();
    assert!(runtime.freeze(&node(), pid).unwrap());
    assert_eq!(runtime.process_state(&node(), pid), Some('T'));
    assert_eq!(runtime.process_state(&node(), grandchild), Some('T'));
    runtime.thaw(&node(), pid).unwrap();
    assert_ne!(runtime.resumed_state(&node(), pid), Some('T'));
    assert_ne!(runtime.resumed_state(&node(), grandchild), Some('T'));
    assert!(runtime.kill(&node(), child.as_mut()));
    // The grandchild went with it, though it led a group of its own.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while !freezer::is_gone(grandchild) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(freezer::is_gone(grandchild));
    assert_eq!(runtime.process_state(&node(), pid), None);
}
