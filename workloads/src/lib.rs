//! Lock clients behind one trait, and the worker loop every client process runs.
//!
//! A lock client knows how to take and give back one lock on one kind of service
//! ([`LockClient`]); everything else (the loop, the critical section on the protected resource,
//! recording each operation and classifying its outcome) is written once in [`worker`], so every
//! lock is exercised and recorded the same way.

pub mod client_spec;
pub mod clock;
pub mod error;
pub mod etcd_gateway;
pub mod etcd_lock;
pub mod exec_answer;
pub mod exec_breakage;
pub mod exec_client;
pub mod exec_clock;
pub mod exec_launch;
pub mod exec_renewal;
pub mod exec_server_check;
pub mod exec_session;
pub mod exec_stderr;
pub mod lease;
pub mod lock_client;
pub mod mariadb_lock;
pub mod mariadb_session;
pub mod nats_kv_lock;
pub mod nats_kv_session;
pub mod postgres_lock;
pub mod postgres_session;
pub mod recorder;
pub mod redis_lock;
pub mod redis_node;
pub mod redis_sentinel_lock;
pub mod redis_server_check;
pub mod redlock;
pub mod renewal_gate;
pub mod resource_client;
pub mod rslock_lock;
pub mod worker;
pub mod zookeeper_lock;

pub use clock::RunClock;
pub use error::WorkloadError;
pub use lease::{Lease, OnRenewal};
pub use lock_client::{Grant, LockClient, Outcome, ReleaseFail, ReleaseFailKind, Released};
