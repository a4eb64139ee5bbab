//! What the target process runs instead of its vDSO's clock functions, and the data those
//! replacements read. Two pages, mapped together in the target: the data page (shared, read and
//! write) then the code page (read and execute). Each replacement
//! calls the original (its first instructions moved here, see `prologue.rs`, or else the
//! system call), then adds the offset when the clock read is one of the masked ones.
//!
//! The bytes below are `trampolines.s` (beside this file) assembled with
//! `as --64 trampolines.s -o t.o && objcopy -O binary -j .text t.o t.bin`: bytes 0x1000 on.
//! Their rip-relative loads reach back into the data page, so the layout constants here must
//! match the `.org` lines there.
//!
//! The offset lives in two slots and an index naming the live one: a change writes the idle
//! slot, then flips the index. A write through /proc/pid/mem is a kernel memcpy with no
//! promise of 8-byte atomicity; a flipped index is one byte changing, so a reader never sees
//! half of an offset (unless two changes land within its few nanoseconds of reading).

/// Bytes of the data page, then as many of code.
pub const PAGE: u64 = 4096;
/// Offset of the clock-id bitmask (u64) in the data page.
pub const MASK_AT: u64 = 0x00;
/// Offset of the live slot's index (u64, 0 or 1).
pub const INDEX_AT: u64 = 0x08;
/// Offset of slot 0; slot 1 follows it. Each is `{sec, nsec, usec, unused}` as i64.
pub const SLOTS_AT: u64 = 0x10;
pub const SLOT_BYTES: u64 = 32;

/// Offset of the three pointers to the originals (clock_gettime, gettimeofday, time).
pub const ORIGINALS_AT: u64 = 0x50;

/// Where each replacement starts in the code page.
pub const CLOCK_GETTIME_AT: u64 = 0x000;
pub const GETTIMEOFDAY_AT: u64 = 0x080;
pub const TIME_AT: u64 = 0x100;
/// Where each system-call stand-in starts.
const SYSCALLS_AT: u64 = 0x180;
const SYSCALL_BYTES: u64 = 0x10;
/// Where the moved first instructions of each original go, and how much room each has.
const RELOCATED_AT: u64 = 0x200;
pub const RELOCATED_BYTES: u64 = 0x40;

/// clock_gettime(id, ts): calls the original (or its system call); if it succeeded and
/// (id as u32) < 64 and the mask has bit id, ts += slot (nanoseconds carried into seconds).
/// Negative ids (per-thread and per-process CPU clocks) fail the unsigned test, untouched.
const CLOCK_GETTIME: &[u8] = &[
    0x57, 0x56, 0x48, 0x83, 0xec, 0x08, 0xff, 0x15, 0x44, 0xf0, 0xff, 0xff, 0x48, 0x83, 0xc4, 0x08,
    0x5e, 0x5f, 0x85, 0xc0, 0x75, 0x4f, 0x83, 0xff, 0x40, 0x73, 0x4a, 0x48, 0x8b, 0x15, 0xde, 0xef,
    0xff, 0xff, 0x48, 0x0f, 0xa3, 0xfa, 0x73, 0x3d, 0x48, 0x8b, 0x0d, 0xd9, 0xef, 0xff, 0xff, 0x48,
    0xc1, 0xe1, 0x05, 0x48, 0x8d, 0x15, 0xd6, 0xef, 0xff, 0xff, 0x48, 0x01, 0xca, 0x48, 0x8b, 0x42,
    0x08, 0x48, 0x03, 0x46, 0x08, 0x48, 0x8b, 0x0a, 0x48, 0x03, 0x0e, 0x48, 0x3d, 0x00, 0xca, 0x9a,
    0x3b, 0x7c, 0x09, 0x48, 0x2d, 0x00, 0xca, 0x9a, 0x3b, 0x48, 0xff, 0xc1, 0x48, 0x89, 0x0e, 0x48,
    0x89, 0x46, 0x08, 0x31, 0xc0, 0xc3,
];

/// gettimeofday(tv, tz): calls the original; if it succeeded, tv is not null and the mask has
/// CLOCK_REALTIME, tv += slot (microseconds carried into seconds).
const GETTIMEOFDAY: &[u8] = &[
    0x57, 0x56, 0x48, 0x83, 0xec, 0x08, 0xff, 0x15, 0xcc, 0xef, 0xff, 0xff, 0x48, 0x83, 0xc4, 0x08,
    0x5e, 0x5f, 0x85, 0xc0, 0x75, 0x4d, 0x48, 0x85, 0xff, 0x74, 0x48, 0x48, 0x0f, 0xba, 0x25, 0x5c,
    0xef, 0xff, 0xff, 0x00, 0x73, 0x3d, 0x48, 0x8b, 0x0d, 0x5b, 0xef, 0xff, 0xff, 0x48, 0xc1, 0xe1,
    0x05, 0x48, 0x8d, 0x15, 0x58, 0xef, 0xff, 0xff, 0x48, 0x01, 0xca, 0x48, 0x8b, 0x42, 0x10, 0x48,
    0x03, 0x47, 0x08, 0x48, 0x8b, 0x0a, 0x48, 0x03, 0x0f, 0x48, 0x3d, 0x40, 0x42, 0x0f, 0x00, 0x7c,
    0x09, 0x48, 0x2d, 0x40, 0x42, 0x0f, 0x00, 0x48, 0xff, 0xc1, 0x48, 0x89, 0x0f, 0x48, 0x89, 0x47,
    0x08, 0x31, 0xc0, 0xc3,
];

/// time(tloc): calls the original; unless it failed, and if the mask has CLOCK_REALTIME, the
/// result += the slot's whole seconds (stored through tloc too when it is not null).
const TIME: &[u8] = &[
    0x57, 0xff, 0x15, 0x59, 0xef, 0xff, 0xff, 0x5f, 0x48, 0x3d, 0x01, 0xf0, 0xff, 0xff, 0x73, 0x2b,
    0x48, 0x0f, 0xba, 0x25, 0xe7, 0xee, 0xff, 0xff, 0x00, 0x73, 0x20, 0x48, 0x8b, 0x0d, 0xe6, 0xee,
    0xff, 0xff, 0x48, 0xc1, 0xe1, 0x05, 0x48, 0x8d, 0x15, 0xe3, 0xee, 0xff, 0xff, 0x48, 0x01, 0xca,
    0x48, 0x03, 0x02, 0x48, 0x85, 0xff, 0x74, 0x03, 0x48, 0x89, 0x07, 0xc3,
];

/// The system calls, called instead of an original whose first instructions cannot be moved.
const SYS_CLOCK_GETTIME: &[u8] = &[0xb8, 0xe4, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3];

const SYS_GETTIMEOFDAY: &[u8] = &[0xb8, 0x60, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3];

const SYS_TIME: &[u8] = &[0xb8, 0xc9, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3];

// The layout holds together: each piece fits before the next.
const _: () = {
    assert!(SLOTS_AT + 2 * SLOT_BYTES <= ORIGINALS_AT);
    assert!(ORIGINALS_AT + 3 * 8 <= PAGE);
    assert!(CLOCK_GETTIME.len() as u64 <= GETTIMEOFDAY_AT - CLOCK_GETTIME_AT);
    assert!(GETTIMEOFDAY.len() as u64 <= TIME_AT - GETTIMEOFDAY_AT);
    assert!(TIME_AT + TIME.len() as u64 <= SYSCALLS_AT);
    assert!(SYS_CLOCK_GETTIME.len() as u64 <= SYSCALL_BYTES);
    assert!(SYS_GETTIMEOFDAY.len() as u64 <= SYSCALL_BYTES);
    assert!(SYS_TIME.len() as u64 <= SYSCALL_BYTES);
    assert!(SYSCALLS_AT + 3 * SYSCALL_BYTES <= RELOCATED_AT);
    assert!(RELOCATED_AT + 3 * RELOCATED_BYTES <= PAGE);
};

/// Which replacement stands in for a vDSO function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replaced {
    ClockGettime,
    Gettimeofday,
    Time,
}

impl Replaced {
    /// Where the replacement starts, relative to the code page.
    pub fn code_offset(self) -> u64 {
        match self {
            Replaced::ClockGettime => CLOCK_GETTIME_AT,
            Replaced::Gettimeofday => GETTIMEOFDAY_AT,
            Replaced::Time => TIME_AT,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Replaced::ClockGettime => "clock_gettime",
            Replaced::Gettimeofday => "gettimeofday",
            Replaced::Time => "time",
        }
    }

    fn index(self) -> u64 {
        match self {
            Replaced::ClockGettime => 0,
            Replaced::Gettimeofday => 1,
            Replaced::Time => 2,
        }
    }

    /// Where its system-call stand-in starts, relative to the code page.
    pub fn syscall_offset(self) -> u64 {
        SYSCALLS_AT + self.index() * SYSCALL_BYTES
    }

    /// Where its moved first instructions go, relative to the code page.
    pub fn relocated_offset(self) -> u64 {
        RELOCATED_AT + self.index() * RELOCATED_BYTES
    }

    /// Where the pointer to its original lives, relative to the data page.
    pub fn original_pointer_at(self) -> u64 {
        ORIGINALS_AT + self.index() * 8
    }
}

/// The code page as it must be written.
pub fn code_page() -> Vec<u8> {
    let mut page = vec![0xcc; PAGE as usize]; // int3 between the functions
    for (at, code) in [
        (CLOCK_GETTIME_AT, CLOCK_GETTIME),
        (GETTIMEOFDAY_AT, GETTIMEOFDAY),
        (TIME_AT, TIME),
        (Replaced::ClockGettime.syscall_offset(), SYS_CLOCK_GETTIME),
        (Replaced::Gettimeofday.syscall_offset(), SYS_GETTIMEOFDAY),
        (Replaced::Time.syscall_offset(), SYS_TIME),
    ] {
        page[at as usize..at as usize + code.len()].copy_from_slice(code);
    }
    page
}

/// A slot's bytes for an offset of `ns`: whole seconds rounded down, and the remainder in
/// nanoseconds and in microseconds, both in 0..1 s, so the replacements only ever carry up.
pub fn slot(ns: i64) -> [u8; SLOT_BYTES as usize] {
    let sec = ns.div_euclid(1_000_000_000);
    let nsec = ns.rem_euclid(1_000_000_000);
    let mut bytes = [0u8; SLOT_BYTES as usize];
    bytes[0..8].copy_from_slice(&sec.to_le_bytes());
    bytes[8..16].copy_from_slice(&nsec.to_le_bytes());
    bytes[16..24].copy_from_slice(&(nsec / 1000).to_le_bytes());
    bytes
}

/// The entry patch of a vDSO function: `movabs rax, target; jmp rax` (rax is free at a call:
/// it holds no argument and the callee may clobber it).
pub fn entry_jump(target: u64) -> [u8; 12] {
    let mut bytes = [0u8; 12];
    bytes[0..2].copy_from_slice(&[0x48, 0xb8]);
    bytes[2..10].copy_from_slice(&target.to_le_bytes());
    bytes[10..12].copy_from_slice(&[0xff, 0xe0]);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_keep_the_remainder_positive() {
        let minus = slot(-1_500_000_000);
        assert_eq!(i64::from_le_bytes(minus[0..8].try_into().unwrap()), -2);
        assert_eq!(
            i64::from_le_bytes(minus[8..16].try_into().unwrap()),
            500_000_000
        );
        assert_eq!(
            i64::from_le_bytes(minus[16..24].try_into().unwrap()),
            500_000
        );
        let plus = slot(30_000_000_001);
        assert_eq!(i64::from_le_bytes(plus[0..8].try_into().unwrap()), 30);
        assert_eq!(i64::from_le_bytes(plus[8..16].try_into().unwrap()), 1);
    }

    #[test]
    fn each_piece_of_code_ends_in_ret() {
        for code in [
            CLOCK_GETTIME,
            GETTIMEOFDAY,
            TIME,
            SYS_CLOCK_GETTIME,
            SYS_GETTIMEOFDAY,
            SYS_TIME,
        ] {
            assert_eq!(code.last(), Some(&0xc3));
        }
    }
}
