//! lockpick runs as root and treats everything it did not make as hostile: container labels,
//! names and folders it finds, histories, schedules, matrices, and files planted where it
//! writes. Each case here is one such input; each must end in a clear refusal or be ignored,
//! never in root deleting, writing or believing what it should not.

//!
//! The cases are grouped by what they attack: `clean` (labels, prefixes, what no run made),
//! `histories` (crafted histories and inflated claims), `files` (schedule and matrix files,
//! plans), `run_folders` (run folders' files planted for report, shrink and the index),
//! `forged_commands` (a run folder's command naming programs for a shrink to run),
//! `store` (links planted where lockpick writes, stores others could change) and
//! `processes` (client programs that reach past their worker).

mod clean;
mod files;
mod forged_commands;
mod histories;
mod processes;
mod run_folders;
mod store;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A name no other test or run uses.
pub fn unique(what: &str) -> String {
    format!(
        "lockpick-hostile-{what}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    )
}

/// Runs `command`, killing it if it has not ended after `limit`: a hostile input must never
/// make lockpick wait forever.
pub fn within(mut command: Command, limit: Duration) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    match receiver.recv_timeout(limit) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{command:?} still ran after {limit:?}");
        }
    }
}

/// A file of root's that no planted link may change.
pub struct Victim(pub std::path::PathBuf);

impl Victim {
    pub fn new(dir: &Path) -> Victim {
        let path = dir.join("roots-own-file");
        std::fs::write(&path, "precious").unwrap();
        Victim(path)
    }

    pub fn untouched(&self, case: &str) {
        assert_eq!(
            std::fs::read_to_string(&self.0).unwrap(),
            "precious",
            "{case}: root's file was written through a planted link"
        );
    }
}

/// `sh -c '<plant>; exec lockpick <args>'`: the plant may name lockpick's pid as `$$`, since
/// exec keeps it, which is how a user predicts a name lockpick will use.
pub fn planted_then(plant: &str, args: &str) -> Output {
    let script = format!("{plant} && exec {} {args}", env!("CARGO_BIN_EXE_lockpick"));
    Command::new("sh").args(["-c", &script]).output().unwrap()
}
