//! The `lockpick client` process: one worker loop against one lock, streaming its operations
//! as JSON lines on standard output. The controller starts one per client node.

use std::time::Duration;

use anyhow::{Context, Result};
use lockpick_checkers::Process;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::recorder::Recorder;
use lockpick_workloads::resource_client::{read_secret, ResourceClient};
use lockpick_workloads::worker::{self, WorkerConfig};

use crate::cli::ClientArgs;
use crate::locks;

pub fn run(args: &ClientArgs) -> Result<()> {
    let spec = ClientSpec::from_json(&args.spec).context("cannot read --spec")?;
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
