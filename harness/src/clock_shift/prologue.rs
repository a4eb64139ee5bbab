//! Keeping a patched vDSO function's fast path: its first instructions (the ones the 12-byte
//! jump overwrites) are copied into the code page, followed by a jump back to the first
//! instruction left intact, so the replacement can call the original and read the clock
//! without entering the kernel. A system call costs several times a vDSO read, and servers
//! read the clock on every request (Redis: 38% fewer pipelined SETs per second with every read
//! a system call).
//!
//! Only instructions known to be movable are copied: pushes, register moves, tests, compares
//! and arithmetic on registers with immediates, and `lea reg, [rip + disp]` (turned into
//! `movabs reg, address`, the same value). Anything else, or a branch anywhere in the function
//! landing inside the copied bytes, and the replacement makes the system call instead.

/// The bytes the entry jump overwrites.
pub const PATCH_BYTES: usize = 12;

/// One decoded instruction: its length, and its replacement when it cannot be copied as is.
struct Instruction {
    len: usize,
    rewritten: Option<Vec<u8>>,
}

fn is_rex(byte: u8) -> bool {
    (0x40..=0x4f).contains(&byte)
}

/// Decodes the instruction at the start of `code` (at `address`), if it is one of the kinds
/// known to be movable.
fn decode(code: &[u8], address: u64) -> Option<Instruction> {
    let (rex, rest) = match code.first() {
        Some(&b) if is_rex(b) => (Some(b), &code[1..]),
        _ => (None, code),
    };
    let prefix = usize::from(rex.is_some());
    let copy = |len: usize| {
        Some(Instruction {
            len: prefix + len,
            rewritten: None,
        })
    };
    let opcode = *rest.first()?;
    let modrm = rest.get(1).copied();
    let register_form = modrm.is_some_and(|m| m >> 6 == 0b11);
    match opcode {
        0x50..=0x57 => copy(1), // push r64
        0x88..=0x8b | 0x84 | 0x85 | 0x31 | 0x33 if register_form => copy(2), // mov/test/xor r, r
        0x01 | 0x03 | 0x29 | 0x2b | 0x39 | 0x3b if register_form => copy(2), // add/sub/cmp r, r
        0x83 if register_form => copy(3), // op r, imm8
        0x81 if register_form => copy(6), // op r, imm32
        0xb8..=0xbf if rex.is_none_or(|r| r & 0x08 == 0) => copy(5), // mov r32, imm32
        0x8d if modrm.is_some_and(|m| m & 0xc7 == 0x05) && rex.is_some_and(|r| r & 0x08 != 0) => {
            // lea r64, [rip + disp32]: the address is fixed once the vDSO is mapped.
            let disp = i32::from_le_bytes(rest.get(2..6)?.try_into().ok()?);
            let len = prefix + 6;
            let target = (address + len as u64).wrapping_add_signed(i64::from(disp));
            let register = (modrm? >> 3) & 7;
            let high = rex? & 0x04 != 0; // REX.R extends the register field
            let mut bytes = vec![0x48 | u8::from(high), 0xb8 + register];
            bytes.extend_from_slice(&target.to_le_bytes());
            Some(Instruction {
                len,
                rewritten: Some(bytes),
            })
        }
        _ => None,
    }
}

/// Whether any branch in `function` may land in its first `len` bytes:
/// every byte offset is read as a possible jump, so a match may be a false alarm (the fast
/// path is then given up), never a miss.
fn branches_into(function: &[u8], len: usize) -> bool {
    // The entry itself too: a jump back to it would now enter the replacement again.
    let inside = |target: i64| (0..len as i64).contains(&target);
    for at in 0..function.len() {
        let short = function.get(at + 1).map(|&d| d as i8 as i64);
        let near = function
            .get(at + 2..at + 6)
            .map(|d| i64::from(i32::from_le_bytes(d.try_into().unwrap())));
        let near_e9 = function
            .get(at + 1..at + 5)
            .map(|d| i64::from(i32::from_le_bytes(d.try_into().unwrap())));
        let at = at as i64;
        let hit = match function[at as usize] {
            0x70..=0x7f | 0xeb | 0xe3 => short.is_some_and(|d| inside(at + 2 + d)),
            0xe8 | 0xe9 => near_e9.is_some_and(|d| inside(at + 5 + d)),
            0x0f => {
                function
                    .get(at as usize + 1)
                    .is_some_and(|b| (0x80..=0x8f).contains(b))
                    && near.is_some_and(|d| inside(at + 6 + d))
            }
            _ => false,
        };
        if hit {
            return true;
        }
    }
    false
}

/// The code to call in place of the function at `start` (whose bytes are `function`): its
/// first instructions, moved, then a jump to the rest, which the patch leaves intact.
pub fn relocate(function: &[u8], start: u64) -> Option<Vec<u8>> {
    let mut stub = Vec::new();
    let mut taken = 0;
    while taken < PATCH_BYTES {
        let instruction = decode(function.get(taken..)?, start + taken as u64)?;
        match instruction.rewritten {
            Some(bytes) => stub.extend(bytes),
            None => stub.extend_from_slice(&function[taken..taken + instruction.len]),
        }
        taken += instruction.len;
    }
    if branches_into(function, taken) {
        return None;
    }
    // jmp qword ptr [rip + 0], then the address: touches no register.
    stub.extend_from_slice(&[0xff, 0x25, 0, 0, 0, 0]);
    stub.extend_from_slice(&(start + taken as u64).to_le_bytes());
    Some(stub)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_setting_prologue_is_moved_as_is() {
        // push rbp; mov rbp, rsp; push r14; push rbx; and rsp, -16; sub rsp, 16; ret
        let code = [
            0x55, 0x48, 0x89, 0xe5, 0x41, 0x56, 0x53, 0x48, 0x83, 0xe4, 0xf0, 0x48, 0x83, 0xec,
            0x10, 0xc3,
        ];
        let stub = relocate(&code, 0x1000).expect("movable");
        assert_eq!(&stub[..15], &code[..15]);
        assert_eq!(&stub[15..21], &[0xff, 0x25, 0, 0, 0, 0]);
        assert_eq!(u64::from_le_bytes(stub[21..29].try_into().unwrap()), 0x100f);
    }

    #[test]
    fn a_rip_relative_lea_becomes_an_absolute_move() {
        // push rbp; lea r10, [rip - 0x6818]; mov rbp, rsp; and rsp, -16
        let code = [
            0x55, 0x4c, 0x8d, 0x15, 0xe8, 0x97, 0xff, 0xff, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xe4,
            0xf0, 0xc3,
        ];
        let stub = relocate(&code, 0x810).expect("movable");
        // lea ends at 0x818; 0x818 - 0x6818 wraps below zero like the real address would.
        let target = 0x818u64.wrapping_sub(0x6818);
        assert_eq!(&stub[1..3], &[0x49, 0xba]); // movabs r10
        assert_eq!(u64::from_le_bytes(stub[3..11].try_into().unwrap()), target);
        assert_eq!(&stub[11..18], &code[8..15]);
    }

    #[test]
    fn unknown_or_branched_into_prologues_are_refused() {
        // cmp dword [rip + d], imm32 first: not movable.
        let time = [
            0x81, 0x3d, 0x3a, 0x95, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x90, 0x90,
        ];
        assert!(relocate(&time, 0xac0).is_none());
        // push rbp; mov rbp, rsp; push rbx x3; push r12; push r13; then jmp back to 1.
        let looped = [
            0x55, 0x48, 0x89, 0xe5, 0x53, 0x53, 0x53, 0x41, 0x54, 0x41, 0x55, 0x53, 0xeb, 0xf3,
        ];
        assert!(relocate(&looped, 0).is_none());
    }
}
