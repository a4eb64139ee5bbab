//! The target's vDSO: where it is mapped (from /proc/pid/maps), and where its clock functions
//! start (from the dynamic symbols of the ELF image read out of its memory).

use std::fs::File;
use std::os::unix::fs::FileExt;

use anyhow::{bail, Context, Result};
use object::{Object, ObjectSegment, ObjectSymbol};

use super::trampoline::Replaced;
use crate::bad_input::bad;

/// An open /proc/pid/mem: reads and writes any mapping of the target, read-only ones included
/// (the kernel's forced access, as a debugger uses for breakpoints), without stopping it.
pub struct Memory {
    file: File,
}

impl Memory {
    pub fn open(pid: i32) -> Result<Memory> {
        let path = format!("/proc/{pid}/mem");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {path}"))?;
        Ok(Memory { file })
    }

    pub fn read(&self, address: u64, len: usize) -> Result<Vec<u8>> {
        let mut bytes = vec![0; len];
        self.file
            .read_exact_at(&mut bytes, address)
            .with_context(|| format!("cannot read {len} bytes at {address:#x} of the target"))?;
        Ok(bytes)
    }

    pub fn write(&self, address: u64, bytes: &[u8]) -> Result<()> {
        self.file.write_all_at(bytes, address).with_context(|| {
            format!(
                "cannot write {} bytes at {address:#x} of the target",
                bytes.len()
            )
        })
    }
}

/// One clock function of the vDSO.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub address: u64,
    pub size: u64,
    pub replaced: Replaced,
}

/// The vDSO of a process: its mapping and its clock functions, one per address (the
/// `__vdso_` names and their plain aliases share one).
#[derive(Debug)]
pub struct Vdso {
    pub start: u64,
    pub end: u64,
    pub entries: Vec<Entry>,
}

/// The `[vdso]` line of /proc/pid/maps.
fn mapping(pid: i32) -> Result<(u64, u64)> {
    let path = format!("/proc/{pid}/maps");
    let maps = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    for line in maps.lines() {
        if line.split_whitespace().nth(5) != Some("[vdso]") {
            continue;
        }
        let range = line.split_whitespace().next().unwrap_or_default();
        let (start, end) = range.split_once('-').unwrap_or_default();
        let start = u64::from_str_radix(start, 16).context("bad [vdso] line")?;
        let end = u64::from_str_radix(end, 16).context("bad [vdso] line")?;
        return Ok((start, end));
    }
    Err(bad(format!(
        "process {pid} has no vDSO (a static binary, or a kernel booted with vdso=0): its \
         clocks cannot be moved by patching it"
    )))
}

/// Finds the vDSO of `pid` and its clock functions.
pub fn locate(pid: i32, memory: &Memory) -> Result<Vdso> {
    let (start, end) = mapping(pid)?;
    if end - start > 1 << 20 {
        bail!(
            "process {pid}'s vDSO spans {} bytes: not a vDSO",
            end - start
        );
    }
    let image = memory.read(start, (end - start) as usize)?;
    let elf = object::read::elf::ElfFile64::<object::Endianness>::parse(image.as_slice())
        .with_context(|| format!("process {pid}'s vDSO is not a 64-bit ELF image"))?;
    if elf.architecture() != object::Architecture::X86_64 {
        return Err(bad(format!(
            "process {pid}'s vDSO is for {:?}: clock shifting is x86_64 only",
            elf.architecture()
        )));
    }
    // Symbols hold link-time addresses; the first loaded segment maps at the mapping's start.
    let linked_at = elf
        .segments()
        .next()
        .map(|s| s.address())
        .context("the vDSO has no loaded segment")?;
    let mut entries: Vec<Entry> = Vec::new();
    for symbol in elf.dynamic_symbols() {
        let replaced = match symbol.name() {
            Ok("__vdso_clock_gettime" | "clock_gettime") => Replaced::ClockGettime,
            Ok("__vdso_gettimeofday" | "gettimeofday") => Replaced::Gettimeofday,
            Ok("__vdso_time" | "time") => Replaced::Time,
            _ => continue,
        };
        let Some(offset) = symbol.address().checked_sub(linked_at) else {
            continue;
        };
        let address = start + offset;
        if address + symbol.size() > end || symbol.size() == 0 {
            bail!("the vDSO's {:?} lies outside it", symbol.name());
        }
        if !entries.iter().any(|e| e.address == address) {
            entries.push(Entry {
                address,
                size: symbol.size(),
                replaced,
            });
        }
    }
    if !entries.iter().any(|e| e.replaced == Replaced::ClockGettime) {
        return Err(bad(format!(
            "process {pid}'s vDSO has no clock_gettime: nothing to redirect"
        )));
    }
    Ok(Vdso {
        start,
        end,
        entries,
    })
}
