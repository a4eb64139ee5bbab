//! What the target process runs instead of its vDSO's clock functions, and the data those
//! replacements read. Two pages, mapped together in the target: the data page (shared, read and
//! write) then the code page (read and execute). Each replacement makes the real system call,
//! then adds the offset when the clock read is one of the masked ones.
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

/// Where each replacement starts in the code page.
pub const CLOCK_GETTIME_AT: u64 = 0x000;
pub const GETTIMEOFDAY_AT: u64 = 0x080;
pub const TIME_AT: u64 = 0x100;

/// clock_gettime(id, ts): syscall 228; if it succeeded and (id as u32) < 64 and the mask has
/// bit id, ts += slot (nanoseconds carried into seconds). Negative ids (per-thread and
/// per-process CPU clocks) fail the unsigned test and are left alone.
const CLOCK_GETTIME: &[u8] = &[
    0x49, 0x89, 0xf8, 0x49, 0x89, 0xf1, 0xb8, 0xe4, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x85, 0xc0,
    0x75, 0x50, 0x41, 0x83, 0xf8, 0x40, 0x73, 0x4a, 0x48, 0x8b, 0x15, 0xe1, 0xef, 0xff, 0xff, 0x4c,
    0x0f, 0xa3, 0xc2, 0x73, 0x3d, 0x48, 0x8b, 0x0d, 0xdc, 0xef, 0xff, 0xff, 0x48, 0xc1, 0xe1, 0x05,
    0x48, 0x8d, 0x15, 0xd9, 0xef, 0xff, 0xff, 0x48, 0x01, 0xca, 0x48, 0x8b, 0x42, 0x08, 0x49, 0x03,
    0x41, 0x08, 0x48, 0x8b, 0x0a, 0x49, 0x03, 0x09, 0x48, 0x3d, 0x00, 0xca, 0x9a, 0x3b, 0x7c, 0x09,
    0x48, 0x2d, 0x00, 0xca, 0x9a, 0x3b, 0x48, 0xff, 0xc1, 0x49, 0x89, 0x09, 0x49, 0x89, 0x41, 0x08,
    0x31, 0xc0, 0xc3,
];

/// gettimeofday(tv, tz): syscall 96; if it succeeded, tv is not null and the mask has
/// CLOCK_REALTIME, tv += slot (microseconds carried into seconds).
const GETTIMEOFDAY: &[u8] = &[
    0x49, 0x89, 0xf8, 0xb8, 0x60, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x85, 0xc0, 0x75, 0x4d, 0x4d,
    0x85, 0xc0, 0x74, 0x48, 0x48, 0x0f, 0xba, 0x25, 0x63, 0xef, 0xff, 0xff, 0x00, 0x73, 0x3d, 0x48,
    0x8b, 0x0d, 0x62, 0xef, 0xff, 0xff, 0x48, 0xc1, 0xe1, 0x05, 0x48, 0x8d, 0x15, 0x5f, 0xef, 0xff,
    0xff, 0x48, 0x01, 0xca, 0x48, 0x8b, 0x42, 0x10, 0x49, 0x03, 0x40, 0x08, 0x48, 0x8b, 0x0a, 0x49,
    0x03, 0x08, 0x48, 0x3d, 0x40, 0x42, 0x0f, 0x00, 0x7c, 0x09, 0x48, 0x2d, 0x40, 0x42, 0x0f, 0x00,
    0x48, 0xff, 0xc1, 0x49, 0x89, 0x08, 0x49, 0x89, 0x40, 0x08, 0x31, 0xc0, 0xc3,
];

/// time(tloc): syscall 201; unless it failed, and if the mask has CLOCK_REALTIME, the result
/// += the slot's whole seconds (stored through tloc too when it is not null).
const TIME: &[u8] = &[
    0x49, 0x89, 0xf8, 0xb8, 0xc9, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x3d, 0x01, 0xf0, 0xff, 0xff,
    0x73, 0x2b, 0x48, 0x0f, 0xba, 0x25, 0xe5, 0xee, 0xff, 0xff, 0x00, 0x73, 0x20, 0x48, 0x8b, 0x0d,
    0xe4, 0xee, 0xff, 0xff, 0x48, 0xc1, 0xe1, 0x05, 0x48, 0x8d, 0x15, 0xe1, 0xee, 0xff, 0xff, 0x48,
    0x01, 0xca, 0x48, 0x03, 0x02, 0x4d, 0x85, 0xc0, 0x74, 0x03, 0x49, 0x89, 0x00, 0xc3,
];

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
}

/// The code page as it must be written.
pub fn code_page() -> Vec<u8> {
    let mut page = vec![0xcc; PAGE as usize]; // int3 between the functions
    for (at, code) in [
        (CLOCK_GETTIME_AT, CLOCK_GETTIME),
        (GETTIMEOFDAY_AT, GETTIMEOFDAY),
        (TIME_AT, TIME),
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
    fn the_code_fits_between_its_neighbours() {
        assert!(CLOCK_GETTIME.len() as u64 <= GETTIMEOFDAY_AT - CLOCK_GETTIME_AT);
        assert!(GETTIMEOFDAY.len() as u64 <= TIME_AT - GETTIMEOFDAY_AT);
        assert!(TIME_AT + TIME.len() as u64 <= PAGE);
        // Each ends in `ret`.
        for code in [CLOCK_GETTIME, GETTIMEOFDAY, TIME] {
            assert_eq!(code.last(), Some(&0xc3));
        }
    }
}
