//! Spin loops without symbols: read the instruction bytes around a sampled IP from the mapped
//! binary and recognise a spin-hint loop (x86: the IP right after `pause` F3 90 in a short
//! backward loop; aarch64: right after `isb`/`yield` with a backward branch close by).
//!
//! Names for stripped binaries: the binary's GNU build-id note leads to a separate debug file
//! (`<root>/.build-id/xx/yyyy.debug`, what a distribution's -dbgsym / -debuginfo package
//! installs), whose symbol table names an address.

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

/// Where distributions install separate debug files.
pub const DEBUG_ROOT: &str = "/usr/lib/debug";

/// The GNU build-id of an ELF file, if it has one.
pub fn build_id(path: &std::path::Path) -> Option<Vec<u8>> {
    use object::Object;
    let file = std::fs::File::open(path).ok()?;
    let cache = ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    obj.build_id().ok()?.map(<[u8]>::to_vec)
}

/// Lower-case hex of a build-id.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// `<root>/.build-id/xx/yyyy.debug` for a build-id (None for an id too short to split).
pub fn debug_file_path(root: &std::path::Path, id: &[u8]) -> Option<std::path::PathBuf> {
    let h = hex(id);
    (h.len() > 2).then(|| {
        root.join(".build-id")
            .join(&h[..2])
            .join(format!("{}.debug", &h[2..]))
    })
}

/// Function symbols of a debug file (or an unstripped binary), by address, demangled.
pub struct Symbols {
    /// (start, size, name), sorted by start.
    funcs: Vec<(u64, u64, String)>,
}

impl Symbols {
    /// The function symbols of the ELF file at `path`; `None` when it has none or is not ELF.
    pub fn open(path: &std::path::Path) -> Option<Symbols> {
        use object::{Object, ObjectSymbol};
        let file = std::fs::File::open(path).ok()?;
        let cache = ReadCache::new(file);
        let obj = object::File::parse(&cache).ok()?;
        let mut funcs: Vec<(u64, u64, String)> = obj
            .symbols()
            .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
            .filter_map(|s| Some((s.address(), s.size(), demangle(s.name().ok()?))))
            .collect();
        if funcs.is_empty() {
            return None;
        }
        funcs.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        Some(Symbols { funcs })
    }

    /// The address of the function called `name` (tests).
    #[cfg(test)]
    pub(crate) fn address_of(&self, name: &str) -> Option<u64> {
        self.funcs.iter().find(|f| f.2 == name).map(|f| f.0)
    }

    /// The function whose range holds `vaddr`.
    pub fn name_at(&self, vaddr: u64) -> Option<&str> {
        let i = self
            .funcs
            .partition_point(|f| f.0 <= vaddr)
            .checked_sub(1)?;
        let (start, size, name) = &self.funcs[i];
        (vaddr - start < (*size).max(1)).then_some(name.as_str())
    }
}

/// A C++ symbol as perf shows it (`srw_mutex_impl<true>::wait_and_lock(unsigned int)`); other
/// names unchanged.
fn demangle(name: &str) -> String {
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle(&cpp_demangle::DemangleOptions::default()).ok())
        .unwrap_or_else(|| name.to_string())
}

/// What separate debug symbols were found for a binary without symbols.
pub enum DebugLookup {
    /// The debug file at this path, with its symbols.
    Found(std::path::PathBuf, Symbols),
    /// The binary has this build-id but no (readable) debug file is installed under the root.
    Missing(String),
    /// The binary carries no build-id: nothing to look up.
    NoBuildId,
}

/// Look for the separate debug file of `binary` under `root` (normally [`DEBUG_ROOT`]).
pub fn find_debug_symbols(binary: &std::path::Path, root: &std::path::Path) -> DebugLookup {
    let Some(id) = build_id(binary) else {
        return DebugLookup::NoBuildId;
    };
    match debug_file_path(root, &id).and_then(|p| Some((Symbols::open(&p)?, p))) {
        Some((syms, p)) => DebugLookup::Found(p, syms),
        None => DebugLookup::Missing(hex(&id)),
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
pub(crate) mod tests {
    use super::*;

    /// A small C program built in `dir`, stripped, and its debug file beside it (`t.debug`);
    /// `None` (with a line saying why) where no C compiler or binutils are installed.
    pub(crate) fn stripped_test_binary(
        dir: &std::path::Path,
    ) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
        let src = dir.join("t.c");
        std::fs::write(
            &src,
            "int spin_here(int n){volatile int x=0;while(n--)x++;return x;}\n\
             int main(int c,char**v){(void)v;return spin_here(c);}\n",
        )
        .unwrap();
        let bin = dir.join("t");
        let run = |cmd: &str, args: &[&std::ffi::OsStr]| {
            std::process::Command::new(cmd)
                .args(args)
                .status()
                .is_ok_and(|s| s.success())
        };
        let (b, s) = (bin.as_os_str(), src.as_os_str());
        if !run(
            "cc",
            &[
                "-O1".as_ref(),
                "-Wl,--build-id".as_ref(),
                "-o".as_ref(),
                b,
                s,
            ],
        ) {
            eprintln!("skipped: no C compiler (cc) to build a test binary");
            return None;
        }
        let dbg = dir.join("t.debug");
        if !run(
            "objcopy",
            &["--only-keep-debug".as_ref(), b, dbg.as_os_str()],
        ) || !run("strip", &[b])
        {
            eprintln!("skipped: objcopy/strip (binutils) not installed");
            return None;
        }
        Some((bin, dbg))
    }

    /// The stripped test binary's names come from its debug file once that is placed under a
    /// temporary debug root by build-id.
    #[test]
    fn stripped_binary_named_from_its_build_id_debug_file() {
        let dir = tempfile::tempdir().unwrap();
        let Some((bin, dbg)) = stripped_test_binary(dir.path()) else {
            return;
        };
        let root = dir.path().join("debug");
        let id = build_id(&bin).expect("a build-id note");
        assert!(id.len() >= 8, "{id:?}");
        assert!(
            Symbols::open(&bin).is_none(),
            "stripped: no function symbols"
        );
        match find_debug_symbols(&bin, &root) {
            DebugLookup::Missing(h) => assert_eq!(h, hex(&id)),
            _ => panic!("nothing installed yet"),
        }
        let place = debug_file_path(&root, &id).unwrap();
        std::fs::create_dir_all(place.parent().unwrap()).unwrap();
        std::fs::copy(&dbg, &place).unwrap();
        let DebugLookup::Found(p, syms) = find_debug_symbols(&bin, &root) else {
            panic!("the debug file is installed");
        };
        assert_eq!(p, place);
        // The address of spin_here, from the debug file's own table, is named; one past the
        // last function is not.
        let at = syms
            .funcs
            .iter()
            .find(|f| f.2 == "spin_here")
            .expect("spin_here")
            .0;
        assert_eq!(syms.name_at(at + 1), Some("spin_here"));
        assert_eq!(syms.name_at(0), None);
        // The binary's loadable segments give the same file offset for that address as
        // before stripping: offsets stay comparable with or without the debug file.
        let stripped = Binary::open(&bin).unwrap();
        assert!(stripped.file_offset(at).is_some());
    }

    #[test]
    fn debug_paths_and_demangling() {
        let p = debug_file_path(
            std::path::Path::new("/usr/lib/debug"),
            &[0x43, 0x9d, 0xa8, 0xd9],
        );
        assert_eq!(
            p.unwrap(),
            std::path::Path::new("/usr/lib/debug/.build-id/43/9da8d9.debug")
        );
        assert!(debug_file_path(std::path::Path::new("/x"), &[1]).is_none());
        assert_eq!(demangle("_Z8ut_delayj"), "ut_delay(unsigned int)");
        assert_eq!(demangle("main"), "main");
    }

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
