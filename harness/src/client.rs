//! The `lockpick client` process: one worker loop against one lock, streaming its operations
//! as JSON lines on standard output. The controller starts one per client node.

use std::time::Duration;

use anyhow::{Context, Result};
use lockpick_checkers::Process;
use lockpick_workloads::client_spec::ClientSpec;
use lockpick_workloads::recorder::Recorder;
use lockpick_workloads::resource_client::{read_secret, ResourceClient};
use lockpick_workloads::worker::{self, WorkerConfig};
use lockpick_workloads::{Grant, LockClient, OnRenewal, Outcome, Released};

use crate::cli::ClientArgs;
use crate::locks;

pub fn run(args: &ClientArgs) -> Result<()> {
    let spec = ClientSpec::from_json(&args.spec).context("cannot read --spec")?;
    let entry = locks::find(&spec.lock)
        .with_context(|| format!("no lock {:?} in the catalogue", spec.lock))?;
    let mut lock = entry.client(&spec)?;
    if let Some(fault) = injected_fault(spec.process, spec.ttl()) {
        lock = Box::new(Faulty { inner: lock, fault });
    }
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

/// A fault a test injects into one client process through `LOCKPICK_INJECT_CLIENT`
/// (`crash:<process>`, `hang:<process>` or `late-grant:<process or all>`): when that client first
/// goes to release the lock (its release invoke already recorded), it panics, or stops making
/// progress for good; or each grant reaches the worker five sixths of a TTL late, after the
/// lease's watchdog has renewed it at least once (every third of the TTL; a library renewing on
/// its own, such as python-redis-lock's thread at two thirds, too: at two thirds late, its
/// renewal and the grant tied, and on a busy machine no renewal raced its grant). Used to prove the run goes on without it, and
/// that a renewal is never recorded before its grant.
#[derive(Clone, Copy)]
enum ClientFault {
    Crash,
    Hang,
    LateGrant(Duration),
}

fn injected_fault(process: u64, ttl: Duration) -> Option<ClientFault> {
    let text = std::env::var("LOCKPICK_INJECT_CLIENT").ok()?;
    let (kind, target) = text.split_once(':')?;
    if target != "all" && target.parse::<u64>().ok()? != process {
        return None;
    }
    match kind {
        "crash" => Some(ClientFault::Crash),
        "hang" => Some(ClientFault::Hang),
        "late-grant" => Some(ClientFault::LateGrant(ttl * 5 / 6)),
        _ => None,
    }
}

struct Faulty {
    inner: Box<dyn LockClient>,
    fault: ClientFault,
}

impl LockClient for Faulty {
    fn try_acquire(&mut self, wait: Duration, on_renewal: OnRenewal) -> Outcome<Grant> {
        let outcome = self.inner.try_acquire(wait, on_renewal);
        if let (ClientFault::LateGrant(late), Outcome::Ok(_)) = (self.fault, &outcome) {
            std::thread::sleep(late);
        }
        outcome
    }

    fn release(&mut self, grant: &Grant) -> Released {
        // The release invoke is recorded before this call: the fault leaves it open.
        match self.fault {
            ClientFault::Crash => panic!("injected crash (LOCKPICK_INJECT_CLIENT)"),
            ClientFault::Hang => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            ClientFault::LateGrant(_) => self.inner.release(grant),
        }
    }
}
