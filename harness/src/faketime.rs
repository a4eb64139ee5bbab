//! Server clock jumps through libfaketime: a server started under it reads its wall clock as
//! true time plus the offset in its own timestamp file (in the run's scratch folder), which the
//! clock nemeses rewrite. The monotonic clock is left alone, as a real clock step leaves it.
//! Go programs (etcd) do not read the clock through libc, so this cannot reach them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
/// Debian's redis-server (jemalloc) hangs at start under libfaketime unless glibc's malloc
/// comes first.
pub const GLIBC_MALLOC: &str = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0";

/// How a server reads its clock, which decides how libfaketime must be loaded.
#[derive(Clone, Copy, Debug)]
pub enum Flavor {
    /// Every read of the file (a jump applies at once).
    Redis,
    /// The file re-read at most once a second: reading it on every call made Java start slowly.
    Java,
}

/// The timestamp file of a server.
pub fn file(scratch: &Path, node: &str) -> PathBuf {
    scratch.join(format!("faketime-{node}"))
}

/// The environment a server needs to run under libfaketime with `file`.
pub fn environment(file: &Path, flavor: Flavor) -> Vec<(String, String)> {
    let mut env = vec![
        (
            "FAKETIME_TIMESTAMP_FILE".to_string(),
            file.display().to_string(),
        ),
        ("FAKETIME_DONT_FAKE_MONOTONIC".to_string(), "1".to_string()),
    ];
    match flavor {
        Flavor::Redis => {
            env.push(("LD_PRELOAD".into(), format!("{GLIBC_MALLOC} {LIBFAKETIME}")));
            env.push(("FAKETIME_NO_CACHE".into(), "1".into()));
        }
        Flavor::Java => {
            env.push(("LD_PRELOAD".into(), LIBFAKETIME.into()));
            env.push(("FAKETIME_CACHE_DURATION".into(), "1".into()));
        }
    }
    env
}

/// Sets the server's clock to true time plus `offset_ms` (negative: behind), with an explicit
/// rate. Written to a new file and renamed, so the server never reads half a line.
pub fn set_offset(file: &Path, offset_ms: i64) -> Result<()> {
    let temporary = file.with_extension("new");
    let text = format!("{:+.3} x1\n", offset_ms as f64 / 1000.0);
    std::fs::write(&temporary, text).with_context(|| format!("cannot write {temporary:?}"))?;
    std::fs::rename(&temporary, file).with_context(|| format!("cannot replace {file:?}"))
}
