//! The `lockpick client` process: one worker loop against one lock, streaming its operations
//! as JSON lines on standard output. The controller starts one per client node.

use std::time::Duration;

use anyhow::{Context, Result};
use lockpick_checkers::Process;
use lockpick_workloads::clock::SkewableClock;
use lockpick_workloads::recorder::Recorder;
use lockpick_workloads::resource_client::ResourceClient;
use lockpick_workloads::worker::{self, WorkerConfig};
use lockpick_workloads::{LockClient, RunClock};

use crate::cli::ClientArgs;
use crate::locks::{self, ClientParams};

pub fn run(args: &ClientArgs) -> Result<()> {
    let ttl = Duration::from_millis(args.ttl_ms);
    let timeout = Duration::from_millis(args.op_timeout_ms);
    let entry = locks::find(&args.lock).context("no such lock")?;
    let mut lock = entry.client(ClientParams {
        nodes: &args.nodes,
        key: &args.key,
        ttl,
        op_timeout: timeout,
        clock: SkewableClock::new(args.skew_file.clone()),
    })?;
    if let Some(fault) = injected_fault(args.process) {
        lock = Box::new(Faulty { inner: lock, fault });
    }
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

/// A fault a test injects into one client process through `LOCKPICK_INJECT_CLIENT`
/// (`crash:<process>` or `hang:<process>`): when that client first goes to release the lock
/// (its release invoke already recorded), it panics, or stops making progress for good. Used to
/// prove the run goes on without it.
#[derive(Clone, Copy)]
enum ClientFault {
    Crash,
    Hang,
}

fn injected_fault(process: u64) -> Option<ClientFault> {
    let text = std::env::var("LOCKPICK_INJECT_CLIENT").ok()?;
    let (kind, target) = text.split_once(':')?;
    if target.parse::<u64>().ok()? != process {
        return None;
    }
    match kind {
        "crash" => Some(ClientFault::Crash),
        "hang" => Some(ClientFault::Hang),
        _ => None,
    }
}

struct Faulty {
    inner: Box<dyn LockClient>,
    fault: ClientFault,
}

impl LockClient for Faulty {
    fn try_acquire(
        &mut self,
        wait: Duration,
    ) -> lockpick_workloads::Outcome<lockpick_workloads::Grant> {
        self.inner.try_acquire(wait)
    }

    fn release(&mut self, _grant: &lockpick_workloads::Grant) -> lockpick_workloads::Outcome<()> {
        // The release invoke is recorded before this call: the fault leaves it open.
        match self.fault {
            ClientFault::Crash => panic!("injected crash (LOCKPICK_INJECT_CLIENT)"),
            ClientFault::Hang => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
        }
    }
}
