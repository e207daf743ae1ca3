//! Spin loops without symbols: read the instruction bytes around a sampled IP from the mapped
//! binary and recognise a spin-hint loop (x86: the IP right after `pause` F3 90 in a short
//! backward loop; aarch64: right after `isb`/`yield` with a backward branch close by).

use std::os::unix::fs::FileExt;

use object::read::elf::{FileHeader, ProgramHeader};
use object::read::ReadCache;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arch {
    X86,
    Aarch64,
    Other,
}

/// A binary's loadable segments; instruction bytes are read from the file when asked for
/// (only the ELF and program headers are read to open it, never the whole file).
pub struct Binary {
    file: std::fs::File,
    len: u64,
    loads: Loads,
    arch: Arch,
}

/// (vaddr, size in file, file offset) of each loadable segment.
type Loads = Vec<(u64, u64, u64)>;

/// PT_LOAD segments with file bytes, and the machine, of an ELF header of class `H`.
fn load_segments<H>(data: &ReadCache<std::fs::File>) -> Option<(Loads, u16)>
where
    H: FileHeader<Endian = object::Endianness>,
{
    let h = H::parse(data).ok()?;
    let e = h.endian().ok()?;
    let loads = h
        .program_headers(e, data)
        .ok()?
        .iter()
        .filter(|p| p.p_type(e) == object::elf::PT_LOAD)
        .filter_map(|p| {
            let size: u64 = p.p_filesz(e).into();
            (size > 0).then(|| (p.p_vaddr(e).into(), size, p.p_offset(e).into()))
        })
        .collect();
    Some((loads, h.e_machine(e)))
}

impl Binary {
    /// Open an ELF file and read its program headers; `None` when it cannot be read or is not
    /// ELF.
    pub fn open(path: &std::path::Path) -> Option<Binary> {
        let file = std::fs::File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        let cache = ReadCache::new(file);
        let (loads, machine) = match object::FileKind::parse(&cache).ok()? {
            object::FileKind::Elf64 => {
                load_segments::<object::elf::FileHeader64<object::Endianness>>(&cache)?
            }
            object::FileKind::Elf32 => {
                load_segments::<object::elf::FileHeader32<object::Endianness>>(&cache)?
            }
            _ => return None,
        };
        let arch = match machine {
            object::elf::EM_X86_64 | object::elf::EM_386 => Arch::X86,
            object::elf::EM_AARCH64 => Arch::Aarch64,
            _ => Arch::Other,
        };
        Some(Binary {
            file: cache.into_inner(),
            len,
            loads,
            arch,
        })
    }

    /// File offset of a virtual address (as perf prints it for a DSO), via the program headers.
    pub fn file_offset(&self, vaddr: u64) -> Option<u64> {
        self.loads
            .iter()
            .find(|(va, size, _)| vaddr >= *va && vaddr - va < *size)
            .map(|(va, _, off)| vaddr - va + off)
    }

    /// Whether the sampled IP at `vaddr` sits in a spin-hint loop.
    pub fn is_spin_loop(&self, vaddr: u64) -> bool {
        let Some(off) = self.file_offset(vaddr) else {
            return false;
        };
        if off > self.len {
            return false;
        }
        // Every byte the recognisers look at: 64 before the hint, 48 + 6 after the IP.
        // (Aligned to 4 bytes, so that the aarch64 check sees the IP's own alignment.)
        let start = off.saturating_sub(128) & !3;
        let end = (off + 64).min(self.len);
        let mut window = vec![0u8; (end - start) as usize];
        if self.file.read_exact_at(&mut window, start).is_err() {
            return false;
        }
        let ip = (off - start) as usize;
        match self.arch {
            Arch::X86 => x86_spin_loop(&window, ip),
            Arch::Aarch64 => aarch64_spin_loop(&window, ip),
            Arch::Other => false,
        }
    }
}

/// x86: bytes `F3 90` end at `ip`, and a backward branch within 48 bytes after it jumps to
/// at most 64 bytes before the pause.
pub fn x86_spin_loop(code: &[u8], ip: usize) -> bool {
    if ip < 2 || ip > code.len() || code[ip - 2..ip] != [0xF3, 0x90] {
        return false;
    }
    let pause = ip - 2;
    let lowest = pause.saturating_sub(64);
    let end = (ip + 48).min(code.len());
    let target_ok = |t: i64| t >= lowest as i64 && t <= pause as i64;
    for p in ip..end {
        let b = code[p];
        // jcc rel8 / jmp rel8
        if (0x70..=0x7F).contains(&b) || b == 0xEB {
            if let Some(&rel) = code.get(p + 1) {
                let t = p as i64 + 2 + i64::from(rel as i8);
                if rel >= 0x80 && target_ok(t) {
                    return true;
                }
            }
        }
        // jcc rel32
        if b == 0x0F && p + 6 <= code.len() && (0x80..=0x8F).contains(&code[p + 1]) {
            let rel = i32::from_le_bytes([code[p + 2], code[p + 3], code[p + 4], code[p + 5]]);
            let t = p as i64 + 6 + i64::from(rel);
            if rel < 0 && target_ok(t) {
                return true;
            }
        }
    }
    false
}

/// aarch64: the word before `ip` is `isb` or `yield`, and one of the next 8 instructions is a
/// backward branch (b, b.cond, cbz/cbnz, tbz/tbnz) to at most 64 bytes before the hint.
pub fn aarch64_spin_loop(code: &[u8], ip: usize) -> bool {
    const ISB: u32 = 0xd503_3fdf;
    const YIELD: u32 = 0xd503_203f;
    let word = |p: usize| -> Option<u32> {
        code.get(p..p + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    if ip < 4 || ip % 4 != 0 {
        return false;
    }
    match word(ip - 4) {
        Some(ISB) | Some(YIELD) => {}
        _ => return false,
    }
    let hint = (ip - 4) as i64;
    let sext = |v: u32, bits: u32| -> i64 { ((v << (32 - bits)) as i32 >> (32 - bits)) as i64 };
    for k in 0..8 {
        let p = ip + 4 * k;
        let Some(w) = word(p) else { break };
        let disp = if w & 0xfc00_0000 == 0x1400_0000 {
            Some(sext(w & 0x03ff_ffff, 26) * 4)
        } else if w & 0xff00_0010 == 0x5400_0000 || w & 0x7e00_0000 == 0x3400_0000 {
            Some(sext((w >> 5) & 0x7_ffff, 19) * 4)
        } else if w & 0x7e00_0000 == 0x3600_0000 {
            Some(sext((w >> 5) & 0x3fff, 14) * 4)
        } else {
            None
        };
        if let Some(d) = disp {
            let t = p as i64 + d;
            if d < 0 && t <= hint && t >= hint - 64 {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_pause_loop() {
        // 0: pause; 2: sub $1,%eax (83 e8 01); 5: jae 0 (73 f9)
        let code = [0xF3, 0x90, 0x83, 0xE8, 0x01, 0x73, 0xF9, 0xC3];
        assert!(x86_spin_loop(&code, 2));
        assert!(!x86_spin_loop(&code, 3));
        // pause without a backward branch
        assert!(!x86_spin_loop(&[0xF3, 0x90, 0xC3, 0x90], 2));
        assert!(!x86_spin_loop(&code, 100));
        assert!(!x86_spin_loop(&code, 0));
    }

    #[test]
    fn aarch64_isb_loop() {
        let mut code = Vec::new();
        code.extend_from_slice(&0xd503_3fdfu32.to_le_bytes()); // 0: isb
        code.extend_from_slice(&0x7100_0400u32.to_le_bytes()); // 4: subs w0, w0, #1
                                                               // 8: b.ne 0 -> imm19 = -2
        let imm = ((-2i32 as u32) & 0x7_ffff) << 5;
        code.extend_from_slice(&(0x5400_0001u32 | imm).to_le_bytes());
        assert!(aarch64_spin_loop(&code, 4));
        assert!(!aarch64_spin_loop(&code, 8));
    }
}
