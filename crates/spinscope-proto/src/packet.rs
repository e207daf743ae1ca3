//! Packet framing: a 3-byte payload length and a 1-byte sequence id before each frame; a
//! payload of 16 MiB - 1 or more continues in the next frame (the sequence id counting on),
//! and a frame shorter than that ends it. [`PacketReader`] reads this from a byte stream fed
//! in pieces of any size and hands out whole logical packets: frames joined, sequence ids
//! checked when the caller knows which one comes next, the payload length capped, and only
//! the first `keep` bytes of each payload kept (so a row of any size costs no memory).

use mysql_common::io::{BufMutExt, ParseBuf};

use super::Malformed;

/// Largest payload of one frame; a frame this long continues in the next one.
pub const MAX_FRAME: usize = 0xff_ffff;
/// Largest payload a server sends (its `max_allowed_packet` cannot be set higher).
pub const MAX_PAYLOAD: usize = 1 << 30;

/// The length-encoded integer at the start of `b`: (value, bytes it took). None when `b` is
/// too short or does not start with one (0xfb is NULL and 0xff an error header, not integers).
pub fn read_lenenc(b: &[u8]) -> Option<(u64, usize)> {
    if matches!(b.first(), Some(0xfb | 0xff)) {
        return None;
    }
    let mut p = ParseBuf(b);
    let v = p.checked_eat_lenenc_int()?;
    Some((v, b.len() - p.0.len()))
}

/// Append `v` as a length-encoded integer.
pub fn put_lenenc(out: &mut Vec<u8>, v: u64) {
    out.put_lenenc_int(v);
}

/// Append `payload` as packets starting at sequence id `seq` (split at 16 MiB); returns the
/// next sequence id.
pub fn put_packet(out: &mut Vec<u8>, mut seq: u8, payload: &[u8]) -> u8 {
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_FRAME);
        out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        out.push(seq);
        out.extend_from_slice(&rest[..n]);
        seq = seq.wrapping_add(1);
        rest = &rest[n..];
        if n < MAX_FRAME {
            return seq;
        }
    }
}

/// One logical packet read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Sequence id of its first frame.
    pub seq: u8,
    /// Payload length over all its frames.
    pub len: usize,
    /// The payload's first bytes (all of it when `len` is at most the reader's `keep`).
    pub head: &'a [u8],
}

impl Packet<'_> {
    /// Whether `head` is the whole payload.
    pub fn whole(&self) -> bool {
        self.head.len() == self.len
    }
}

/// Whether [`PacketReader::feed`] goes on after a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Go,
    /// Stop after this packet; the bytes after it are left to the caller.
    Stop,
}

/// Reads packets from a byte stream (see the module doc).
#[derive(Debug, Clone)]
pub struct PacketReader {
    keep: usize,
    max_len: usize,
    hdr: [u8; 4],
    hdr_have: usize,
    /// Body bytes of the current frame still to come.
    frame_left: usize,
    /// The current frame is [`MAX_FRAME`] long: the packet continues in the next one.
    continues: bool,
    /// Inside a packet (its first header was read).
    in_packet: bool,
    first_seq: u8,
    len: usize,
    head: Vec<u8>,
    /// The sequence id the next frame must carry (None: not checked).
    expect: Option<u8>,
    /// The sequence id after the last frame read.
    next: u8,
}

impl PacketReader {
    /// A reader keeping the first `keep` bytes of each payload and refusing payloads over
    /// `max_len` bytes.
    pub fn new(keep: usize, max_len: usize) -> PacketReader {
        PacketReader {
            keep,
            max_len,
            hdr: [0; 4],
            hdr_have: 0,
            frame_left: 0,
            continues: false,
            in_packet: false,
            first_seq: 0,
            len: 0,
            head: Vec::new(),
            expect: None,
            next: 0,
        }
    }

    /// Forget a partly read packet (the stream starts anew at a packet boundary) and stop
    /// checking sequence ids.
    pub fn reset(&mut self) {
        self.expect = None;
        self.hdr_have = 0;
        self.frame_left = 0;
        self.continues = false;
        self.in_packet = false;
        self.len = 0;
        self.head.clear();
    }

    /// The next frame must carry sequence id `seq` (and the ones after it count on); None
    /// stops checking.
    pub fn expect_seq(&mut self, seq: Option<u8>) {
        self.expect = seq;
    }

    /// The sequence id after the last frame read (what an answer to it starts with).
    pub fn next_seq(&self) -> u8 {
        self.next
    }

    /// Whether the stream stopped inside a packet.
    pub fn mid_packet(&self) -> bool {
        self.in_packet || self.hdr_have > 0
    }

    fn frame_header(&mut self, seq: u8, n: usize) -> Result<(), Malformed> {
        if let Some(want) = self.expect {
            if seq != want {
                return Err(Malformed("packet sequence id out of order"));
            }
            self.expect = Some(seq.wrapping_add(1));
        }
        self.next = seq.wrapping_add(1);
        if !self.in_packet {
            self.in_packet = true;
            self.first_seq = seq;
            self.len = 0;
            self.head.clear();
        }
        self.len += n;
        if self.len > self.max_len {
            return Err(Malformed("packet larger than the protocol allows here"));
        }
        self.frame_left = n;
        self.continues = n == MAX_FRAME;
        Ok(())
    }

    /// Read the packets `b` completes, calling `on` with each. Returns how many bytes were
    /// used: all of `b` unless `on` said [`Flow::Stop`].
    ///
    /// Generic over `on` (not `&mut dyn FnMut`): `rt` calls this for every captured segment,
    /// and a callback the compiler can inline costs no indirect call per packet.
    pub fn feed<F: FnMut(Packet<'_>) -> Flow>(
        &mut self,
        b: &[u8],
        mut on: F,
    ) -> Result<usize, Malformed> {
        let mut at = 0;
        while at < b.len() {
            let rest = &b[at..];
            if !self.mid_packet() && rest.len() >= 4 {
                // The common case: a whole small packet in the input, read in place. The same
                // checks as `frame_header`, without the state a packet split over several
                // inputs needs (nothing of it outlives this packet).
                let n = u24(rest);
                if n < MAX_FRAME && rest.len() >= 4 + n {
                    let seq = rest[3];
                    if let Some(want) = self.expect {
                        if seq != want {
                            return Err(Malformed("packet sequence id out of order"));
                        }
                        self.expect = Some(seq.wrapping_add(1));
                    }
                    self.next = seq.wrapping_add(1);
                    if n > self.max_len {
                        return Err(Malformed("packet larger than the protocol allows here"));
                    }
                    at += 4 + n;
                    let p = Packet {
                        seq,
                        len: n,
                        head: &rest[4..4 + n.min(self.keep)],
                    };
                    if on(p) == Flow::Stop {
                        return Ok(at);
                    }
                    continue;
                }
            }
            if self.hdr_have < 4 {
                let k = (4 - self.hdr_have).min(rest.len());
                self.hdr[self.hdr_have..self.hdr_have + k].copy_from_slice(&rest[..k]);
                self.hdr_have += k;
                at += k;
                if self.hdr_have < 4 {
                    continue;
                }
                self.frame_header(self.hdr[3], u24(&self.hdr))?;
            } else {
                let k = self.frame_left.min(rest.len());
                let want = self.keep.saturating_sub(self.head.len()).min(k);
                self.head.extend_from_slice(&rest[..want]);
                self.frame_left -= k;
                at += k;
            }
            if self.frame_left == 0 {
                self.hdr_have = 0;
                if !self.continues {
                    self.in_packet = false;
                    let p = Packet {
                        seq: self.first_seq,
                        len: self.len,
                        head: &self.head,
                    };
                    if on(p) == Flow::Stop {
                        return Ok(at);
                    }
                }
            }
        }
        Ok(at)
    }
}

/// A frame header's payload length.
fn u24(b: &[u8]) -> usize {
    usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(r: &mut PacketReader, b: &[u8]) -> Result<Vec<(u8, usize, Vec<u8>)>, Malformed> {
        let mut got = Vec::new();
        r.feed(b, |p| {
            got.push((p.seq, p.len, p.head.to_vec()));
            Flow::Go
        })?;
        Ok(got)
    }

    #[test]
    fn frames_split_and_join_at_16mib() {
        let big = vec![7u8; MAX_FRAME + 10];
        let mut v = Vec::new();
        assert_eq!(put_packet(&mut v, 3, &big), 5);
        assert_eq!(v.len(), big.len() + 8);
        v.extend_from_slice(&[1, 0, 0, 5, 9]);
        // Whole, and in pieces of every size up to 7 around the frame boundary.
        let mut r = PacketReader::new(4, MAX_PAYLOAD);
        r.expect_seq(Some(3));
        let got = collect(&mut r, &v).unwrap();
        assert_eq!(got, vec![(3, big.len(), vec![7; 4]), (5, 1, vec![9])]);
        for cut in (0..9)
            .chain(MAX_FRAME..MAX_FRAME + 10)
            .chain(v.len() - 6..v.len())
        {
            let mut r = PacketReader::new(4, MAX_PAYLOAD);
            let mut got = collect(&mut r, &v[..cut]).unwrap();
            got.extend(collect(&mut r, &v[cut..]).unwrap());
            assert_eq!(
                got,
                vec![(3, big.len(), vec![7; 4]), (5, 1, vec![9])],
                "{cut}"
            );
        }
        // Exactly 16 MiB - 1 needs an empty second frame.
        let mut w = Vec::new();
        assert_eq!(put_packet(&mut w, 0, &vec![1u8; MAX_FRAME]), 2);
        assert_eq!(w.len(), MAX_FRAME + 8);
        let got = collect(&mut PacketReader::new(0, MAX_PAYLOAD), &w).unwrap();
        assert_eq!(got, vec![(0, MAX_FRAME, vec![])]);
    }

    #[test]
    fn sequence_ids_and_the_size_cap_are_checked() {
        let mut v = Vec::new();
        put_packet(&mut v, 1, b"ab");
        put_packet(&mut v, 3, b"cd");
        let mut r = PacketReader::new(16, 100);
        r.expect_seq(Some(1));
        assert_eq!(
            collect(&mut r, &v),
            Err(Malformed("packet sequence id out of order"))
        );
        let mut r = PacketReader::new(16, 100);
        assert_eq!(collect(&mut r, &v).unwrap().len(), 2);
        assert_eq!(r.next_seq(), 4);
        let mut r = PacketReader::new(16, 1);
        assert!(collect(&mut r, &v).is_err());
    }

    #[test]
    fn a_stop_leaves_the_rest_to_the_caller() {
        let mut v = Vec::new();
        put_packet(&mut v, 1, b"ab");
        put_packet(&mut v, 2, b"cd");
        let mut r = PacketReader::new(16, 100);
        let used = r.feed(&v, |_| Flow::Stop).unwrap();
        assert_eq!(used, 6);
        // Split inside the first packet: the stop comes with the byte that ends it.
        let mut r = PacketReader::new(16, 100);
        assert_eq!(r.feed(&v[..3], |_| Flow::Stop).unwrap(), 3);
        assert_eq!(r.feed(&v[3..], |_| Flow::Stop).unwrap(), 3);
    }

    #[test]
    fn lenenc_round_trips() {
        for v in [
            0u64,
            250,
            251,
            65535,
            65536,
            0xff_ffff,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc(&mut out, v);
            assert_eq!(read_lenenc(&out), Some((v, out.len())));
        }
        assert_eq!(read_lenenc(&[0xff]), None);
        assert_eq!(read_lenenc(&[0xfb]), None);
        assert_eq!(read_lenenc(&[0xfc, 1]), None);
    }
}
