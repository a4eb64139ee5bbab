//! Server clock jumps through libfaketime: a server started under it reads its wall clock as
//! true time plus the offset in its own timestamp file (in the run's scratch folder), which the
//! clock nemeses rewrite. The monotonic clock is left alone, as a real clock step leaves it.
//! Go programs (etcd) do not read the clock through libc, so this cannot reach them; and a JVM
//! (ZooKeeper) under libfaketime ran 7 times slower here, too slow to test anything but that:
//! both have their running vDSO patched instead (`clock_shift`, `cluster/clock_vdso.rs`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
/// Debian's redis-server (jemalloc) hangs at start under libfaketime unless glibc's malloc
/// comes first.
pub const GLIBC_MALLOC: &str = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0";

/// The timestamp file of a server.
pub fn file(scratch: &Path, node: &str) -> PathBuf {
    scratch.join(format!("faketime-{node}"))
}

/// The environment a server needs to run under libfaketime with `file`: the file re-read on
/// every clock read (a jump applies at once), the monotonic clock left alone.
pub fn environment(file: &Path) -> Vec<(String, String)> {
    vec![
        ("LD_PRELOAD".into(), format!("{GLIBC_MALLOC} {LIBFAKETIME}")),
        ("FAKETIME_TIMESTAMP_FILE".into(), file.display().to_string()),
        ("FAKETIME_NO_CACHE".into(), "1".into()),
        ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
    ]
}

/// Sets the server's clock to true time plus `offset_ms` (negative: behind). Written to a new file and renamed, so the server never reads half a line.
pub fn set_offset(file: &Path, offset_ms: i64) -> Result<()> {
    let text = format!("{:+.3}\n", offset_ms as f64 / 1000.0);
    crate::files::safe_write::replace(file, text)
        .with_context(|| format!("cannot replace {file:?}"))
}

/// Where a run lists the pids of its servers under libfaketime.
fn registry(scratch: &Path) -> PathBuf {
    scratch.join("faketime-pids")
}

/// Notes a server started under libfaketime, whose shared memory must be removed when it is
/// gone (libfaketime names it after the pid, not after the run, and leaves it behind when its
/// process is killed).
pub fn register(scratch: &Path, pid: nix::unistd::Pid) -> Result<()> {
    use std::io::Write;
    let mut file = crate::files::safe_write::append(&registry(scratch))?;
    writeln!(file, "{pid}")?;
    Ok(())
}

/// Removes libfaketime's shared memory of a process that is gone.
pub fn forget(pid: nix::unistd::Pid) {
    let _ = std::fs::remove_file(format!("/dev/shm/faketime_shm_{pid}"));
    let _ = std::fs::remove_file(format!("/dev/shm/sem.faketime_sem_{pid}"));
}

/// Removes the shared memory of every server the run started under libfaketime. Call it once
/// they have all exited.
pub fn forget_all(scratch: &Path) {
    let Ok(text) = std::fs::read_to_string(registry(scratch)) else {
        return;
    };
    for pid in text.lines().filter_map(|l| l.trim().parse().ok()) {
        forget(nix::unistd::Pid::from_raw(pid));
    }
}
