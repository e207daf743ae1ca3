//! Which function an address is in, for binaries without symbols: the start addresses of
//! every function from the binary's `.eh_frame_hdr` search table (one entry per unwind
//! record; kept in stripped binaries, since C++ exceptions and unwinders need it). Two return
//! addresses in the same function then name the same site, which is how a spin sample and a
//! sleep at one latch are joined when the server has no symbols.

use object::{Object, ObjectSection};

/// Function start addresses (virtual addresses, as perf prints them for the DSO), sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Starts(Vec<u64>);

impl Starts {
    /// The start of the function holding `vaddr`: the last start at or below it.
    pub fn function_of(&self, vaddr: u64) -> Option<u64> {
        let i = self.0.partition_point(|&s| s <= vaddr);
        (i > 0).then(|| self.0[i - 1])
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The function starts of the ELF file at `path`, or `None` when it cannot be read or has no
/// usable `.eh_frame_hdr`. Only that section is read (through `object`'s read cache).
pub fn read(path: &std::path::Path) -> Option<Starts> {
    let file = std::fs::File::open(path).ok()?;
    let cache = object::read::ReadCache::new(file);
    let elf = object::File::parse(&cache).ok()?;
    let s = elf.section_by_name(".eh_frame_hdr")?;
    parse_eh_frame_hdr(s.data().ok()?, s.address())
}

/// A pointer encoding's size in bytes and whether it is signed (DW_EH_PE_* low nibble).
fn format(enc: u8) -> Option<(usize, bool)> {
    match enc & 0x0f {
        0x02 => Some((2, false)),
        0x03 => Some((4, false)),
        0x04 => Some((8, false)),
        0x0a => Some((2, true)),
        0x0b => Some((4, true)),
        0x0c => Some((8, true)),
        _ => None,
    }
}

fn read_enc(data: &[u8], at: usize, enc: u8, here: u64, base: u64) -> Option<(u64, usize)> {
    let (n, signed) = format(enc)?;
    let b = data.get(at..at.checked_add(n)?)?;
    let mut raw = [0u8; 8];
    raw[..n].copy_from_slice(b);
    let mut v = u64::from_le_bytes(raw);
    if signed && n < 8 && b[n - 1] & 0x80 != 0 {
        v |= !0u64 << (8 * n);
    }
    let v = match enc & 0x70 {
        0x00 => v,
        0x10 => here.wrapping_add(at as u64).wrapping_add(v),
        0x30 => base.wrapping_add(v),
        _ => return None,
    };
    Some((v, n))
}

/// The search table of an `.eh_frame_hdr` section at address `addr` (little-endian ELF):
/// version 1, the encodings of the `.eh_frame` pointer, the count and the table, then the
/// table of (initial location, FDE address) pairs sorted by location. `None` when the
/// section has no table or an encoding this reader does not know.
pub fn parse_eh_frame_hdr(data: &[u8], addr: u64) -> Option<Starts> {
    let (&version, rest) = data.split_first()?;
    if version != 1 || rest.len() < 3 {
        return None;
    }
    let (ptr_enc, count_enc, table_enc) = (data[1], data[2], data[3]);
    if ptr_enc == 0xff || count_enc == 0xff || table_enc == 0xff {
        return None;
    }
    let mut at = 4;
    let (_, n) = read_enc(data, at, ptr_enc, addr, addr)?;
    at += n;
    let (count, n) = read_enc(data, at, count_enc, addr, addr)?;
    at += n;
    let (entry, _) = format(table_enc)?;
    let count = usize::try_from(count).ok()?;
    // The table must fit in the section: a corrupt count is refused, not allocated.
    if count.checked_mul(2 * entry)? > data.len().saturating_sub(at) {
        return None;
    }
    let mut starts = Vec::with_capacity(count);
    for _ in 0..count {
        let (loc, n) = read_enc(data, at, table_enc, addr, addr)?;
        at += 2 * n;
        starts.push(loc);
    }
    starts.sort_unstable();
    starts.dedup();
    Some(Starts(starts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A header as GCC and LLVM write it: pcrel|sdata4, udata4, datarel|sdata4.
    fn hdr(addr: u64, funcs: &[u64]) -> Vec<u8> {
        let mut v = vec![1u8, 0x1b, 0x03, 0x3b];
        v.extend_from_slice(&100i32.to_le_bytes());
        v.extend_from_slice(&(funcs.len() as u32).to_le_bytes());
        for f in funcs {
            v.extend_from_slice(&((*f as i64 - addr as i64) as i32).to_le_bytes());
            v.extend_from_slice(&0i32.to_le_bytes());
        }
        v
    }

    #[test]
    fn addresses_map_to_their_function() {
        let s =
            parse_eh_frame_hdr(&hdr(0x14e56f8, &[0xde2920, 0xe11480, 0x1000]), 0x14e56f8).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s.function_of(0xde2972), Some(0xde2920));
        assert_eq!(s.function_of(0xe114d3), Some(0xe11480));
        assert_eq!(s.function_of(0xe11501), Some(0xe11480));
        assert_eq!(s.function_of(0x10), None);
    }

    #[test]
    fn the_installed_server_binary_when_there_is_one() {
        let p = std::path::Path::new("/usr/sbin/mariadbd");
        if !p.exists() {
            return;
        }
        let s = read(p).expect("mariadbd has an .eh_frame_hdr");
        assert!(s.len() > 10_000, "{} functions", s.len());
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        assert_eq!(parse_eh_frame_hdr(&[], 0), None);
        assert_eq!(parse_eh_frame_hdr(&[2, 0x1b, 3, 0x3b], 0), None);
        let mut h = hdr(0, &[1, 2]);
        h[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            parse_eh_frame_hdr(&h, 0),
            None,
            "a count larger than the section"
        );
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..200), addr: u64) {
            let _ = parse_eh_frame_hdr(&data, addr);
        }
    }
}
