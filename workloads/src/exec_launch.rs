//! How a client program is started: the environment it is given (PROTOCOL.md's table) and how
//! long it has to say hello and to exit.

use std::time::Duration;

use crate::exec_session::PROTOCOL_VERSION;

/// How long a program may take to start and say hello: interpreters and JVM-free runtimes
/// start well within it, and a run's clients start before its faults.
pub const HELLO_WITHIN: Duration = Duration::from_secs(10);

/// How long a program may take to exit after its stdin closes.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A program's environment (PROTOCOL.md's table): the servers as `ip:port`, the lease time and
/// the bound on each request in ms, its client's process number and the lock's name.
pub fn environment(
    servers: &[String],
    ttl_ms: u64,
    op_timeout_ms: u64,
    client: u64,
    key: &str,
) -> Vec<(String, String)> {
    [
        ("LOCKPICK_PROTOCOL", PROTOCOL_VERSION.to_string()),
        ("LOCKPICK_SERVERS", servers.join(",")),
        ("LOCKPICK_TTL_MS", ttl_ms.to_string()),
        ("LOCKPICK_OP_TIMEOUT_MS", op_timeout_ms.to_string()),
        ("LOCKPICK_CLIENT", client.to_string()),
        ("LOCKPICK_KEY", key.to_string()),
    ]
    .map(|(name, value)| (name.to_string(), value))
    .into()
}
