//! The example client programs of `examples/`, as the tests run them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The path of `examples/<path>`.
pub fn example(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    root.join("examples")
        .join(path)
        .to_string_lossy()
        .to_string()
}

/// The etcd example, built once per test binary with Debian's Go, offline.
pub fn go_etcd_client() -> &'static str {
    static BUILT: OnceLock<String> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("exec-examples/go-etcd");
        let status = Command::new(example("go-etcd/build.sh"))
            .arg(&out)
            .status()
            .expect("the build script runs");
        assert!(status.success(), "the etcd example does not build");
        out.to_string_lossy().to_string()
    })
}

/// The Node example over the `redlock` npm package, installed once per test binary from its
/// vendored tarballs, offline.
pub fn node_redlock_client() -> &'static str {
    static INSTALLED: OnceLock<String> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("exec-examples/node-redlock");
        let status = Command::new(example("node-redlock/install.sh"))
            .arg(&dir)
            .status()
            .expect("the install script runs");
        assert!(status.success(), "the redlock example does not install");
        dir.join("lock_client.js").to_string_lossy().to_string()
    })
}
