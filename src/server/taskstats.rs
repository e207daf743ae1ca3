//! One question to the kernel per sample: has any thread of a process been on a CPU since
//! the last time we asked? Linux's taskstats interface (generic netlink family `TASKSTATS`,
//! command `TASKSTATS_CMD_GET` with `TASKSTATS_CMD_ATTR_TGID`) answers for a whole thread
//! group at once with sums over its threads; the burst sampler's group gate
//! ([`super::proc_threads::Gate::Group`]) compares them between samples so that a sample of an
//! idle server reads no per-thread file at all.
//!
//! What the sums are (kernel `fill_stats_for_tgid` and `delayacct_add_tsk`): over the live
//! threads, plus what exited threads left in the group's total, `cpu_count` is the number of
//! times a thread was put on a CPU (the scheduler's `pcount`, the third field of
//! `schedstat`), `cpu_run_virtual_total` the ns on a CPU, `nvcsw`/`nivcsw` the context
//! switches. They are filled whether or not delay accounting is switched on
//! (`kernel.task_delayacct`); a kernel without scheduler statistics leaves `cpu_count` at 0,
//! and the gate is then not used.
//!
//! What it needs: a kernel with `CONFIG_TASKSTATS` and `CAP_NET_ADMIN` in the initial user
//! namespace (the command is admin-only; without it the kernel answers EPERM). On the
//! benchmark VM (Linux 6.18) the family also answers from a separate network namespace.
//! Each request is two system calls and no allocation (about 1 us on the benchmark VM); the
//! kernel builds the answer while the request is sent, so the reply is read without waiting.
//!
//! The parsers are pure and take the reply bytes as the kernel sends them (native byte
//! order, as netlink is); the socket part is [`GroupStats`].

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Netlink message header length (`struct nlmsghdr`).
const NLMSG_HDRLEN: usize = 16;
/// Generic netlink header length (`struct genlmsghdr`).
const GENL_HDRLEN: usize = 4;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_ATTR_TGID: u16 = 2;
const TASKSTATS_TYPE_TGID: u16 = 2;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_TGID: u16 = 5;
/// Byte offsets in `struct taskstats` (linux/taskstats.h; checked with `offsetof` against
/// the header of the benchmark VM, tests/fixtures/taskstats/README.md).
const OFF_CPU_COUNT: usize = 16;
const OFF_CPU_DELAY_TOTAL: usize = 24;
const OFF_CPU_RUN_VIRTUAL_TOTAL: usize = 72;
const OFF_NVCSW: usize = 272;
const OFF_NIVCSW: usize = 280;

/// A thread group's sums, as the kernel reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupSums {
    /// The thread group id the answer is for.
    pub tgid: u32,
    /// `struct taskstats` version.
    pub version: u16,
    /// Times a thread of the group was put on a CPU.
    pub cpu_count: u64,
    /// ns the group's threads waited runnable in a run queue (credited when they next ran).
    pub cpu_delay_ns: u64,
    /// ns the group's threads were on a CPU.
    pub cpu_run_ns: u64,
    /// Voluntary and involuntary context switches.
    pub nvcsw: u64,
    pub nivcsw: u64,
}

/// Why a reply was not usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyError {
    /// The kernel answered with an error (a negative errno, e.g. -1 EPERM, -3 ESRCH).
    Errno(i32),
    /// Not the message expected (short, truncated, a field missing).
    Malformed,
}

/// The netlink attributes of `b`, as (type without its flag bits, payload); stops at the
/// first attribute whose length does not fit.
fn attrs(b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut rest = b;
    std::iter::from_fn(move || {
        if rest.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let kind = u16::from_ne_bytes([rest[2], rest[3]]) & 0x3fff;
        if len < 4 || len > rest.len() {
            return None;
        }
        let payload = &rest[4..len];
        rest = &rest[((len + 3) & !3).min(rest.len())..];
        Some((kind, payload))
    })
}

/// The first netlink message of `b`: its type and payload. Errors when it is an error message.
fn message(b: &[u8]) -> Result<(u16, &[u8]), ReplyError> {
    if b.len() < NLMSG_HDRLEN {
        return Err(ReplyError::Malformed);
    }
    let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let kind = u16::from_ne_bytes([b[4], b[5]]);
    if len < NLMSG_HDRLEN || len > b.len() {
        return Err(ReplyError::Malformed);
    }
    let payload = &b[NLMSG_HDRLEN..len];
    if kind == NLMSG_ERROR {
        let e = payload.get(..4).ok_or(ReplyError::Malformed)?;
        return Err(ReplyError::Errno(i32::from_ne_bytes([
            e[0], e[1], e[2], e[3],
        ])));
    }
    Ok((kind, payload))
}

/// The sequence number of the first netlink message of `b`.
pub fn reply_seq(b: &[u8]) -> Option<u32> {
    b.get(8..12)
        .map(|s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// The family id in the controller's answer to `CTRL_CMD_GETFAMILY`.
pub fn parse_family_reply(b: &[u8]) -> Result<u16, ReplyError> {
    let (_, payload) = message(b)?;
    let a = payload.get(GENL_HDRLEN..).ok_or(ReplyError::Malformed)?;
    attrs(a)
        .find(|(k, _)| *k == CTRL_ATTR_FAMILY_ID)
        .and_then(|(_, v)| Some(u16::from_ne_bytes([*v.first()?, *v.get(1)?])))
        .ok_or(ReplyError::Malformed)
}

fn u64_at(s: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(s.get(off..off + 8)?.try_into().ok()?))
}

/// The sums in the kernel's answer to `TASKSTATS_CMD_GET` with `TASKSTATS_CMD_ATTR_TGID`.
pub fn parse_tgid_reply(b: &[u8]) -> Result<GroupSums, ReplyError> {
    let (_, payload) = message(b)?;
    let a = payload.get(GENL_HDRLEN..).ok_or(ReplyError::Malformed)?;
    let (_, aggr) = attrs(a)
        .find(|(k, _)| *k == TASKSTATS_TYPE_AGGR_TGID)
        .ok_or(ReplyError::Malformed)?;
    let mut tgid = None;
    let mut stats = None;
    for (k, v) in attrs(aggr) {
        match k {
            TASKSTATS_TYPE_TGID if v.len() >= 4 => {
                tgid = Some(u32::from_ne_bytes([v[0], v[1], v[2], v[3]]))
            }
            TASKSTATS_TYPE_STATS => stats = Some(v),
            _ => {}
        }
    }
    let (tgid, s) = tgid.zip(stats).ok_or(ReplyError::Malformed)?;
    let get = |off| u64_at(s, off).ok_or(ReplyError::Malformed);
    Ok(GroupSums {
        tgid,
        version: s
            .get(..2)
            .map(|v| u16::from_ne_bytes([v[0], v[1]]))
            .ok_or(ReplyError::Malformed)?,
        cpu_count: get(OFF_CPU_COUNT)?,
        cpu_delay_ns: get(OFF_CPU_DELAY_TOTAL)?,
        cpu_run_ns: get(OFF_CPU_RUN_VIRTUAL_TOTAL)?,
        nvcsw: get(OFF_NVCSW)?,
        nivcsw: get(OFF_NIVCSW)?,
    })
}

/// A generic netlink request with one attribute (`nlmsghdr`, `genlmsghdr`, the attribute
/// padded to 4 bytes).
pub fn request(family: u16, cmd: u8, seq: u32, attr: u16, value: &[u8]) -> Vec<u8> {
    let attr_len = 4 + value.len();
    let len = NLMSG_HDRLEN + GENL_HDRLEN + ((attr_len + 3) & !3);
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(&family.to_ne_bytes());
    b.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes()); // to the kernel
    b.extend_from_slice(&[cmd, 1, 0, 0]); // command, version 1, reserved
    b.extend_from_slice(&(attr_len as u16).to_ne_bytes());
    b.extend_from_slice(&attr.to_ne_bytes());
    b.extend_from_slice(value);
    b.resize(len, 0);
    b
}

/// An open taskstats socket asking about one thread group.
pub struct GroupStats {
    fd: OwnedFd,
    /// The TGID request, sent as is but for its sequence number.
    req: Vec<u8>,
    seq: u32,
    buf: Vec<u8>,
}

impl GroupStats {
    /// Resolve the family and ask once; Err says why the interface cannot be used here.
    pub fn open(tgid: u32) -> Result<GroupStats, String> {
        // SAFETY: plain socket(2); the result is checked before it is owned.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            )
        };
        if raw < 0 {
            return Err(format!(
                "no generic netlink socket ({})",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: `raw` is a fresh descriptor owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: a zeroed sockaddr_nl is valid; nl_pid 0 addresses the kernel.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: a valid socket and address of the given length.
        let rc = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(format!(
                "netlink connect failed ({})",
                std::io::Error::last_os_error()
            ));
        }
        let mut g = GroupStats {
            fd,
            req: Vec::new(),
            seq: 1,
            buf: vec![0; 2048],
        };
        let ask = request(
            GENL_ID_CTRL,
            CTRL_CMD_GETFAMILY,
            g.seq,
            CTRL_ATTR_FAMILY_NAME,
            b"TASKSTATS\0",
        );
        let family = match g.exchange(&ask).map(parse_family_reply) {
            Some(Ok(f)) => f,
            Some(Err(ReplyError::Errno(e))) => {
                return Err(format!(
                    "no taskstats family in this kernel ({})",
                    std::io::Error::from_raw_os_error(-e)
                ))
            }
            _ => return Err("no answer from the netlink controller".into()),
        };
        g.req = request(
            family,
            TASKSTATS_CMD_GET,
            0,
            TASKSTATS_CMD_ATTR_TGID,
            &tgid.to_ne_bytes(),
        );
        match g.ask() {
            Ok(s) if s.cpu_count == 0 => {
                Err("taskstats reports no scheduler counts (cpu_count 0)".into())
            }
            Ok(_) => Ok(g),
            Err(ReplyError::Errno(-1)) => Err("taskstats needs CAP_NET_ADMIN (EPERM)".into()),
            Err(ReplyError::Errno(e)) => Err(format!(
                "taskstats refused ({})",
                std::io::Error::from_raw_os_error(-e)
            )),
            Err(ReplyError::Malformed) => Err("taskstats answer not understood".into()),
        }
    }

    /// Send `req` and read the answer with the same sequence number (the kernel queues it
    /// before send returns, so the read does not wait). None on any failure.
    fn exchange(&mut self, req: &[u8]) -> Option<&[u8]> {
        let want = reply_seq(req)?;
        // SAFETY: a valid socket and a buffer of the given length.
        let sent = unsafe { libc::send(self.fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
        if sent != req.len() as isize {
            return None;
        }
        let len = loop {
            // SAFETY: a valid socket and buffer; MSG_DONTWAIT: never block the sampler.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n <= 0 {
                return None;
            }
            if reply_seq(&self.buf[..n as usize]) == Some(want) {
                break n as usize;
            }
            // A late answer to an earlier request: skip it.
        };
        Some(&self.buf[..len])
    }

    fn ask(&mut self) -> Result<GroupSums, ReplyError> {
        self.seq = self.seq.wrapping_add(1);
        let mut req = std::mem::take(&mut self.req);
        req[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        let r = self
            .exchange(&req)
            .ok_or(ReplyError::Malformed)
            .and_then(parse_tgid_reply);
        self.req = req;
        r
    }

    /// The group's sums now; None when the kernel did not answer (the process is gone).
    pub fn read(&mut self) -> Option<GroupSums> {
        self.ask().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured on the benchmark VM (Linux 6.18, x86_64): see the fixtures' README.
    const FAMILY: &[u8] = include_bytes!("../../tests/fixtures/taskstats/family_reply.bin");
    const TGID_IDLE: &[u8] = include_bytes!("../../tests/fixtures/taskstats/tgid_reply_a.bin");
    const TGID_LATER: &[u8] = include_bytes!("../../tests/fixtures/taskstats/tgid_reply_b.bin");
    const EPERM: &[u8] = include_bytes!("../../tests/fixtures/taskstats/tgid_reply_eperm.bin");

    #[test]
    fn family_id_from_a_real_controller_answer() {
        assert_eq!(parse_family_reply(FAMILY), Ok(31));
    }

    #[test]
    fn sums_from_a_real_tgid_answer() {
        let a = parse_tgid_reply(TGID_IDLE).unwrap();
        let b = parse_tgid_reply(TGID_LATER).unwrap();
        assert_eq!(a.version, 16);
        assert_eq!(a.tgid, b.tgid);
        // The values the capture tool printed (fixtures README).
        assert_eq!(
            (a.cpu_count, a.cpu_run_ns, a.nvcsw, a.nivcsw),
            include!("../../tests/fixtures/taskstats/tgid_reply_a.expect")
        );
        // The second answer was taken after the server ran a statement: it counts more.
        assert!(
            b.cpu_count > a.cpu_count && b.cpu_run_ns > a.cpu_run_ns,
            "{a:?} {b:?}"
        );
        assert!(b.nvcsw + b.nivcsw > a.nvcsw + a.nivcsw);
    }

    #[test]
    fn an_error_answer_is_its_errno() {
        assert_eq!(parse_tgid_reply(EPERM), Err(ReplyError::Errno(-1)));
        assert_eq!(parse_family_reply(EPERM), Err(ReplyError::Errno(-1)));
    }

    #[test]
    fn truncated_answers_are_malformed() {
        for n in [0, 15, 16, 20, 40, 300, TGID_IDLE.len() - 1] {
            assert_eq!(
                parse_tgid_reply(&TGID_IDLE[..n]),
                Err(ReplyError::Malformed),
                "{n}"
            );
        }
        // The family answer is not a taskstats answer, and the other way round.
        assert_eq!(parse_tgid_reply(FAMILY), Err(ReplyError::Malformed));
        assert!(parse_family_reply(TGID_IDLE).is_err());
    }

    #[test]
    fn a_request_is_what_the_kernel_expects() {
        let r = request(
            31,
            TASKSTATS_CMD_GET,
            7,
            TASKSTATS_CMD_ATTR_TGID,
            &42u32.to_ne_bytes(),
        );
        assert_eq!(r.len(), 28);
        assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 28);
        assert_eq!(reply_seq(&r), Some(7));
        let f = request(
            GENL_ID_CTRL,
            CTRL_CMD_GETFAMILY,
            1,
            CTRL_ATTR_FAMILY_NAME,
            b"TASKSTATS\0",
        );
        assert_eq!(f.len(), 36, "10 bytes of name padded to 12");
    }

    #[test]
    fn this_process_answers_or_says_why_not() {
        // As root (CI, the benchmark VM) the kernel answers for our own process and its
        // counts grow as this thread sleeps and wakes; otherwise the reason is given.
        match GroupStats::open(std::process::id()) {
            Ok(mut g) => {
                let a = g.read().expect("an answer");
                std::thread::sleep(std::time::Duration::from_millis(5));
                let b = g.read().expect("an answer");
                assert_eq!(a.tgid, std::process::id());
                assert!(b.cpu_count > a.cpu_count, "{a:?} {b:?}");
            }
            Err(why) => assert!(!why.is_empty()),
        }
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..700)) {
            let _ = parse_tgid_reply(&b);
            let _ = parse_family_reply(&b);
            let _ = reply_seq(&b);
        }

        #[test]
        fn a_real_answer_with_bytes_changed_never_panics(at in 0usize..596, v in proptest::prelude::any::<u8>()) {
            let mut b = TGID_IDLE.to_vec();
            if at < b.len() {
                b[at] = v;
            }
            let _ = parse_tgid_reply(&b);
        }
    }
}
