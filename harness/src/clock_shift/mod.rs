//! Moving one process's clocks, for any program, as Chaos Mesh's TimeChaos does: stop its
//! threads with ptrace, map two pages into it (an offset, and replacements for the vDSO's
//! `clock_gettime`, `gettimeofday` and `time` that make the real system call and add the
//! offset), and turn each vDSO function's first instruction into a jump there. Programs that
//! read the clock through libc and programs that call the vDSO themselves (Go) are both
//! caught; a JVM reads it through libc. The offset then changes while the process runs, by a
//! write into its memory, with no stop at all.
//!
//! Which clocks move is chosen: the wall clocks by default (CLOCK_REALTIME, its _COARSE and
//! _ALARM forms, CLOCK_TAI, gettimeofday, time), as an NTP step moves them; the monotonic ones
//! (CLOCK_MONOTONIC, _COARSE, _RAW, CLOCK_BOOTTIME, _ALARM) only when asked, since no real
//! clock step moves them. CPU-time clocks never move.
//!
//! Reaches: every thread there is, threads started later (they share the memory) and children
//! forked later (they inherit the patched vDSO, and the offset's page is shared with them). A
//! program started by `exec` gets a fresh vDSO and is not reached. A thread interrupted by a
//! signal inside the first 12 bytes of a patched function resumes there after its handler, in
//! the middle of the jump: that window is a few instructions wide, and is not guarded.
//!
//! x86_64 Linux only. Refused (bad input: exit 254) where it cannot work: another
//! architecture, a process with no vDSO, a kernel that refuses ptrace.

mod prologue;
mod tracer;
mod trampoline;
mod vdso;

use anyhow::{Context, Result};

use crate::bad_input::bad;
use tracer::Stopped;
use trampoline::{Replaced, INDEX_AT, MASK_AT, PAGE, SLOTS_AT, SLOT_BYTES};
use vdso::{Memory, Vdso};

/// Which clocks an offset moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clocks {
    /// The wall clocks only, as an NTP step moves them.
    Wall,
    /// The wall clocks and the monotonic ones.
    WallAndMonotonic,
}

const CLOCK_REALTIME: u32 = 0;
const CLOCK_MONOTONIC: u32 = 1;
const CLOCK_MONOTONIC_RAW: u32 = 4;
const CLOCK_REALTIME_COARSE: u32 = 5;
const CLOCK_MONOTONIC_COARSE: u32 = 6;
const CLOCK_BOOTTIME: u32 = 7;
const CLOCK_REALTIME_ALARM: u32 = 8;
const CLOCK_BOOTTIME_ALARM: u32 = 9;
const CLOCK_TAI: u32 = 11;

impl Clocks {
    /// The clock ids moved, as bits. gettimeofday and time follow CLOCK_REALTIME's bit.
    pub fn mask(self) -> u64 {
        let wall = [
            CLOCK_REALTIME,
            CLOCK_REALTIME_COARSE,
            CLOCK_REALTIME_ALARM,
            CLOCK_TAI,
        ];
        let monotonic = [
            CLOCK_MONOTONIC,
            CLOCK_MONOTONIC_RAW,
            CLOCK_MONOTONIC_COARSE,
            CLOCK_BOOTTIME,
            CLOCK_BOOTTIME_ALARM,
        ];
        let ids: Vec<u32> = match self {
            Clocks::Wall => wall.to_vec(),
            Clocks::WallAndMonotonic => wall.into_iter().chain(monotonic).collect(),
        };
        ids.into_iter().fold(0, |mask, id| mask | 1 << id)
    }
}

/// A process whose clocks read true time plus an offset (0 at first).
pub struct ShiftedProcess {
    pid: i32,
    /// The process's start time (field 22 of /proc/pid/stat): tells it from a later process
    /// given the same pid.
    started: u64,
    memory: Memory,
    vdso_range: std::ops::Range<u64>,
    /// Each patched entry and the bytes it had.
    patched: Vec<(u64, [u8; 12])>,
    /// The data page in the target.
    data: u64,
    live_slot: u64,
    offset_ns: i64,
    restored: bool,
    /// The functions whose replacement reads the clock through the vDSO's own code.
    fast: Vec<&'static str>,
}

/// How [`ShiftedProcess::restore`] left the process.
#[derive(Debug, PartialEq, Eq)]
pub enum Restoration {
    /// The vDSO has its own bytes again.
    Restored,
    /// The process is gone: nothing to restore.
    Gone,
    /// The process could not be stopped again: its offset is 0, the jumps stay.
    OffsetZeroed(String),
}

fn start_time(pid: i32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("process {pid} is gone"))?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    after
        .split_whitespace()
        .nth(19)
        .and_then(|f| f.parse().ok())
        .with_context(|| format!("cannot read process {pid}'s start time"))
}

const PROT_READ: u64 = 1;
const PROT_WRITE: u64 = 2;
const PROT_EXEC: u64 = 4;
const MAP_SHARED: u64 = 0x01;
const MAP_ANONYMOUS: u64 = 0x20;
const SYS_MMAP: u64 = 9;
const SYS_MPROTECT: u64 = 10;

fn failed(result: u64) -> bool {
    result > -4096i64 as u64
}

/// Redirects `pid`'s vDSO clock functions to read true time plus an offset on `clocks`; the
/// offset is 0 until [`ShiftedProcess::set_offset`].
pub fn inject(pid: i32, clocks: Clocks) -> Result<ShiftedProcess> {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return Err(bad("clock shifting works on x86_64 Linux only"));
    }
    let started = start_time(pid)?;
    let memory = Memory::open(pid)?;
    let vdso = vdso::locate(pid, &memory)?;
    for entry in &vdso.entries {
        if entry.size < 12 {
            return Err(bad(format!(
                "process {pid}'s vDSO function at {:#x} is {} bytes, too short for a jump",
                entry.address, entry.size
            )));
        }
    }
    let mut originals = Vec::new();
    let mut relocated = Vec::new();
    for entry in &vdso.entries {
        let function = memory.read(entry.address, entry.size.min(PAGE) as usize)?;
        let bytes: [u8; 12] = function[..12].try_into().expect("12 bytes");
        if bytes[..2] == [0x48, 0xb8] && bytes[10..] == [0xff, 0xe0] {
            return Err(bad(format!(
                "process {pid}'s clocks are shifted already (its vDSO jumps elsewhere)"
            )));
        }
        originals.push((entry.address, bytes));
        let stub = prologue::relocate(&function, entry.address)
            .filter(|stub| stub.len() as u64 <= trampoline::RELOCATED_BYTES);
        relocated.push((entry.replaced, stub));
    }
    let mut stopped = Stopped::all(pid)?;
    stopped.step_out_of(std::slice::from_ref(&(vdso.start..vdso.end)))?;
    let data = map_pages(&mut stopped, &memory, &vdso, clocks, &relocated)?;
    let mut shifted = ShiftedProcess {
        pid,
        started,
        memory,
        vdso_range: vdso.start..vdso.end,
        patched: Vec::new(),
        data,
        live_slot: 0,
        offset_ns: 0,
        restored: false,
        fast: relocated
            .iter()
            .filter(|(_, stub)| stub.is_some())
            .map(|(replaced, _)| replaced.name())
            .collect(),
    };
    for (entry, original) in vdso.entries.iter().zip(originals) {
        let target = data + PAGE + entry.replaced.code_offset();
        if let Err(e) = shifted
            .memory
            .write(entry.address, &trampoline::entry_jump(target))
        {
            // Put back what was patched so far while the threads are still held.
            let _ = shifted.memory.write(entry.address, &original.1);
            for (address, bytes) in &shifted.patched {
                let _ = shifted.memory.write(*address, bytes);
            }
            shifted.restored = true;
            return Err(e);
        }
        shifted.patched.push(original);
    }
    drop(stopped);
    Ok(shifted)
}

/// Maps the data and code pages into the held process and fills them (with the moved first
/// instructions of the originals that could be moved); returns the data page's address.
fn map_pages(
    stopped: &mut Stopped,
    memory: &Memory,
    vdso: &Vdso,
    clocks: Clocks,
    relocated: &[(Replaced, Option<Vec<u8>>)],
) -> Result<u64> {
    let scratch = vdso
        .entries
        .iter()
        .find(|e| e.replaced == Replaced::ClockGettime)
        .expect("locate insists on clock_gettime")
        .address;
    let no_fd = -1i64 as u64;
    let data = stopped.syscall(
        memory,
        scratch,
        SYS_MMAP,
        [
            0,
            2 * PAGE,
            PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS,
            no_fd,
            0,
        ],
    )?;
    anyhow::ensure!(
        !failed(data),
        "mmap in the target failed: errno {}",
        -(data as i64)
    );
    memory.write(data + MASK_AT, &clocks.mask().to_le_bytes())?;
    memory.write(data + INDEX_AT, &0u64.to_le_bytes())?;
    for slot in 0..2 {
        memory.write(data + SLOTS_AT + slot * SLOT_BYTES, &trampoline::slot(0))?;
    }
    memory.write(data + PAGE, &trampoline::code_page())?;
    for replaced in [
        Replaced::ClockGettime,
        Replaced::Gettimeofday,
        Replaced::Time,
    ] {
        let stub = relocated
            .iter()
            .find(|(r, _)| *r == replaced)
            .and_then(|(_, stub)| stub.as_ref());
        let original = match stub {
            Some(stub) => {
                let at = data + PAGE + replaced.relocated_offset();
                memory.write(at, stub)?;
                at
            }
            None => data + PAGE + replaced.syscall_offset(),
        };
        memory.write(
            data + replaced.original_pointer_at(),
            &original.to_le_bytes(),
        )?;
    }
    let result = stopped.syscall(
        memory,
        scratch,
        SYS_MPROTECT,
        [data + PAGE, PAGE, PROT_READ | PROT_EXEC, 0, 0, 0],
    )?;
    anyhow::ensure!(
        !failed(result),
        "mprotect in the target failed: errno {}",
        -(result as i64)
    );
    Ok(data)
}

impl ShiftedProcess {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn offset_ns(&self) -> i64 {
        self.offset_ns
    }

    /// The patched functions whose replacement still reads the clock in user space (the
    /// others make a system call on every read).
    pub fn fast_paths(&self) -> &[&'static str] {
        &self.fast
    }

    /// Moves the shifted clocks to true time plus `ns`, while the process runs.
    pub fn set_offset(&mut self, ns: i64) -> Result<()> {
        anyhow::ensure!(
            !self.restored,
            "process {}'s clocks were restored",
            self.pid
        );
        let idle = 1 - self.live_slot;
        self.memory.write(
            self.data + SLOTS_AT + idle * SLOT_BYTES,
            &trampoline::slot(ns),
        )?;
        self.memory
            .write(self.data + INDEX_AT, &idle.to_le_bytes())?;
        self.live_slot = idle;
        self.offset_ns = ns;
        Ok(())
    }

    /// Puts the vDSO's own bytes back (stopping every thread again); the two pages stay
    /// mapped, unused, since a thread may still be returning through them.
    pub fn restore(&mut self) -> Result<Restoration> {
        if self.restored {
            return Ok(Restoration::Restored);
        }
        if start_time(self.pid).ok() != Some(self.started) {
            self.restored = true;
            return Ok(Restoration::Gone);
        }
        let stopped = Stopped::all(self.pid).and_then(|mut stopped| {
            stopped.step_out_of(std::slice::from_ref(&self.vdso_range))?;
            Ok(stopped)
        });
        let outcome = match stopped {
            Ok(stopped) => {
                let mut written = Ok(());
                for (address, bytes) in &self.patched {
                    written = written.and(self.memory.write(*address, bytes));
                }
                drop(stopped);
                written.map(|()| Restoration::Restored)
            }
            Err(e) => Err(e),
        };
        let restoration = match outcome {
            Ok(r) => r,
            Err(e) => {
                if start_time(self.pid).ok() != Some(self.started) {
                    Restoration::Gone
                } else {
                    self.set_offset(0)?;
                    Restoration::OffsetZeroed(format!("{e:#}"))
                }
            }
        };
        self.restored = true;
        Ok(restoration)
    }
}

impl Drop for ShiftedProcess {
    /// A shifted process is never left shifted by a harness that forgot, or failed.
    fn drop(&mut self) {
        let _ = self.restore();
    }
}
