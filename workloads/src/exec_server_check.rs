//! Claims are claims: the lease bounds an exec program reports are its own word, and a program
//! can report a lease ten times longer than the one it took. Where the lock's server can be
//! asked, lockpick asks it right after each grant and `extend` and records its count beside the
//! report (`server_lease` on the acquire `ok` or the `renew`), for the checkers to compare and
//! to prefer. A lock whose server can be asked brings its own check (the harness's
//! `Lock::server_check`); the exec client only calls it.

use crate::clock::RunClock;
use crate::lease::ServerLease;

/// One server's word on the lock's lease, asked by the exec client.
pub trait ServerCheck: Send {
    /// The server's count of the lock's lease now, or `None` when it gives no word (no
    /// answer, or no such lease).
    fn ask(&mut self, clock: &RunClock) -> Option<ServerLease>;
}
