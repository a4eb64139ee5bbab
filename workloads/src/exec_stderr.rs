//! A client program's stderr, copied to lockpick's own (a run's client log, or what
//! `protocol-check` prints) with a bound: a program that floods its stderr must not fill the
//! run's disk or bury the check's lines. The head is copied as it comes; past it, only the last
//! [`KEPT_TAIL`] bytes are kept, written at the end after one line that says how much was cut
//! (a program's last words, a traceback, are usually what explains its breakage).

use std::io::{Read, Write};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Duration;

/// How much of the start of a program's stderr is copied as it comes.
pub const KEPT_HEAD: usize = 32 * 1024;
/// How much of the end of a program's stderr is kept once the head is full.
pub const KEPT_TAIL: usize = 32 * 1024;

/// The copy of one program's stderr, on a thread of its own until the program closes it.
pub struct StderrCopy {
    done: Receiver<()>,
}

impl StderrCopy {
    /// Starts copying `from` (the program `name`'s stderr) to `to`.
    pub fn start(
        name: String,
        from: impl Read + Send + 'static,
        to: impl Write + Send + 'static,
    ) -> StderrCopy {
        let (sender, done) = mpsc::channel();
        thread::spawn(move || {
            copy_bounded(&name, from, to);
            let _ = sender.send(());
        });
        StderrCopy { done }
    }

    /// Waits up to `at_most` for the copy to end (the program and whatever it started closed
    /// their stderr), so its tail is written before lockpick goes on or exits.
    pub fn finish(self, at_most: Duration) {
        let _ = self.done.recv_timeout(at_most);
    }
}

/// Copies the head of `from` to `to`, reads and drops the middle, and writes the tail at the
/// end after a line with the count of bytes cut. Reads to the end, so the program never blocks
/// on a full pipe.
pub fn copy_bounded(name: &str, mut from: impl Read, mut to: impl Write) {
    let mut buffer = vec![0u8; 16 * 1024];
    let mut copied = 0usize;
    let mut tail: Vec<u8> = Vec::new();
    let mut cut = 0u64;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut chunk = &buffer[..n];
        if copied < KEPT_HEAD {
            let head = chunk.len().min(KEPT_HEAD - copied);
            let _ = to.write_all(&chunk[..head]);
            let _ = to.flush();
            copied += head;
            chunk = &chunk[head..];
        }
        tail.extend_from_slice(chunk);
        if tail.len() > 2 * KEPT_TAIL {
            let over = tail.len() - KEPT_TAIL;
            cut += over as u64;
            tail.drain(..over);
        }
    }
    if tail.len() > KEPT_TAIL {
        let over = tail.len() - KEPT_TAIL;
        cut += over as u64;
        tail.drain(..over);
    }
    if cut > 0 {
        let _ = writeln!(
            to,
            "\n[lockpick: {cut} bytes of {name}'s stderr cut here: the first {} KiB and the last \
             {} KiB are kept]",
            KEPT_HEAD / 1024,
            KEPT_TAIL / 1024
        );
    }
    let _ = to.write_all(&tail);
    let _ = to.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_stderr_is_copied_whole() {
        let mut out = Vec::new();
        copy_bounded("p", &b"a traceback\n"[..], &mut out);
        assert_eq!(out, b"a traceback\n");
    }

    #[test]
    fn a_flood_keeps_its_head_and_tail_and_says_how_much_was_cut() {
        let total = 10 * 1024 * 1024;
        let mut input = vec![b'm'; total];
        input[..5].copy_from_slice(b"first");
        input[total - 4..].copy_from_slice(b"last");
        let mut out = Vec::new();
        copy_bounded("p", &input[..], &mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(out.len() < KEPT_HEAD + KEPT_TAIL + 200, "{}", out.len());
        assert!(text.starts_with("first"));
        assert!(text.ends_with("last"));
        let cut = total - KEPT_HEAD - KEPT_TAIL;
        assert!(
            text.contains(&format!("[lockpick: {cut} bytes of p's stderr cut here")),
            "{}",
            &text[KEPT_HEAD..KEPT_HEAD + 200]
        );
    }
}
