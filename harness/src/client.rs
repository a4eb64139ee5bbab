//! The `lockpick client` process: one worker loop against one lock, streaming its operations
//! as JSON lines on standard output. The controller starts one per client node.

use std::time::Duration;

use anyhow::{Context, Result};
use lockpick_checkers::Process;
use lockpick_workloads::recorder::Recorder;
use lockpick_workloads::redis_lock::RedisLock;
use lockpick_workloads::resource_client::ResourceClient;
use lockpick_workloads::worker::{self, WorkerConfig};
use lockpick_workloads::{LockClient, RunClock};

use crate::cli::{ClientArgs, LockKind};

pub fn run(args: &ClientArgs) -> Result<()> {
    let ttl = Duration::from_millis(args.ttl_ms);
    let timeout = Duration::from_millis(args.op_timeout_ms);
    let mut lock: Box<dyn LockClient> = match args.lock {
        LockKind::Redis => Box::new(
            RedisLock::new(&args.nodes[0], &args.key, ttl, timeout).context("bad Redis address")?,
        ),
    };
    let config = WorkerConfig {
        process: args.process,
        acquire_wait: timeout,
        work: Duration::from_millis(args.work_ms),
        backoff: Duration::from_millis(20),
        deadline_ns: args.deadline_ns,
        max_attempts: args.max_attempts,
    };
    let mut resource = ResourceClient::new(args.resource, timeout);
    let clock = RunClock::from_origin(args.origin_ns);
    let mut recorder = Recorder::new(std::io::stdout(), clock, Process::Client(args.process));
    worker::run(&config, lock.as_mut(), &mut resource, &mut recorder)
        .context("the controller stopped listening")
}
