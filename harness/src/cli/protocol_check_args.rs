//! `lockpick protocol-check` flags, as plain data: the service whose server the program is
//! checked against, the lease and request bounds it is given, and the program itself.

use clap::Args;

use super::values::{duration_word, service_values};

#[derive(Args, Debug)]
pub struct ProtocolCheckArgs {
    /// The service whose real servers the program talks to, as in `--lock exec:<service>:...`.
    #[arg(long, value_parser = service_values(), default_value = crate::locks::exec::default_service())]
    pub service: String,
    /// The lease time the program is given (LOCKPICK_TTL_MS).
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = duration_word)]
    pub ttl: String,
    /// The bound on each request (LOCKPICK_OP_TIMEOUT_MS, and every acquire's wait_ms); at most
    /// half the TTL, so the held lock outlives the contender's whole acquire [default: half
    /// the TTL, at most 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = duration_word)]
    pub op_timeout: Option<String>,
    /// The client program and its arguments (workloads/PROTOCOL.md), last: after `--`, or
    /// without it (everything from the program's name on is the program's, its flags too).
    #[arg(trailing_var_arg = true, required = true, num_args = 1.., value_name = "COMMAND")]
    pub command: Vec<String>,
}
