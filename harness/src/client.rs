//! The `lockpick client` process: one worker loop against one lock, streaming its operations
//! as JSON lines on standard output. The controller starts one per client node.

use std::time::Duration;

use anyhow::{Context, Result};
use lockpick_checkers::Process;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::recorder::Recorder;
use lockpick_workloads::resource_client::{read_secret, ResourceClient};
use lockpick_workloads::worker::{self, QuietExtension, WorkerConfig};

use crate::cli::ClientArgs;
use crate::locks;

pub fn run(args: &ClientArgs) -> Result<()> {
    let spec = ClientSpec::from_json(&args.spec).context("cannot read --spec")?;
    // Listen first: SIGUSR1's default ends a process, and the controller may send it to a
    // client that kill-client has just restarted while its lock client still connects.
    let extension = quiet_extension(&spec)?;
    let entry = locks::find(&spec.lock)
        .with_context(|| format!("no lock {:?} in the catalogue", spec.lock))?;
    let mut lock = crate::test_hooks::wrap_client(entry.client(&spec)?, spec.process, spec.ttl());
    let timeout = spec.op_timeout();
    let config = WorkerConfig {
        process: spec.process,
        acquire_wait: timeout,
        work: Duration::from_millis(spec.work_ms),
        backoff: Duration::from_millis(20),
        deadline_ns: spec.deadline_ns,
        extension,
        max_attempts: spec.max_attempts,
    };
    // Read before the lock's program starts, which never sees this process's standard input.
    let secret = read_secret(std::io::stdin()).context("cannot read the run's secret")?;
    let mut resource = ResourceClient::new(spec.resource, timeout, secret);
    let recorder = Recorder::new(
        std::io::stdout(),
        spec.run_clock(),
        Process::Client(spec.process),
    );
    worker::run(&config, lock.as_mut(), &mut resource, &recorder)
        .context("the controller stopped listening")
}

/// The controller extends the quiet phase with SIGUSR1 and ends the extension with SIGUSR2
/// (`run/quiet.rs`).
fn quiet_extension(spec: &ClientSpec) -> Result<QuietExtension> {
    let extension = QuietExtension {
        by_ns: spec.quiet_extension_ms.saturating_mul(1_000_000),
        ..QuietExtension::default()
    };
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, extension.extended.clone())
        .context("cannot listen for SIGUSR1")?;
    signal_hook::flag::register(signal_hook::consts::SIGUSR2, extension.ended.clone())
        .context("cannot listen for SIGUSR2")?;
    Ok(extension)
}
