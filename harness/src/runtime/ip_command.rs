//! The `ip` program (iproute2), as the namespace runtime and the Docker runtime call it: one
//! command, or several in one namespace read from a batch.

use std::io::Write;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Runs `ip` with `args`; the error names the command and what `ip` said.
pub fn ip(args: &[&str]) -> Result<()> {
    let output = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("cannot run `ip` (Debian package iproute2)")?;
    if !output.status.success() {
        bail!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Runs `commands` (one `ip` command each, without `ip`) in `namespace` with one `ip -batch`;
/// the names in them are the run's own (its prefix, node names, addresses), never input.
pub fn ip_batch(namespace: &str, commands: &[String]) -> Result<()> {
    let mut child = Command::new("ip")
        .args(["-n", namespace, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run `ip` (Debian package iproute2)")?;
    let script = commands.join("\n") + "\n";
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes())?;
    }
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "`ip -n {namespace} -batch` of {:?} failed: {}",
            commands,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}
