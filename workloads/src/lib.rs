//! Lock clients behind one trait, and the worker loop every client process runs.
//!
//! A lock client knows how to take and give back one lock on one kind of service
//! ([`LockClient`]); everything else (the loop, the critical section on the protected resource,
//! recording each operation and classifying its outcome) is written once in [`worker`], so every
//! lock is exercised and recorded the same way.

pub mod clock;
pub mod lock_client;
pub mod recorder;
pub mod redis_lock;
pub mod resource_client;
pub mod worker;

pub use clock::RunClock;
pub use lock_client::{Grant, LockClient, Outcome};
