//! The event client: a worker OS thread owns a share of the step's connections and drives them
//! all from one epoll set, each connection a small state machine over nonblocking sockets
//! speaking [`super::codec`]. A worker sleeps once for whichever of its sockets answers first
//! instead of every connection's thread blocking and waking once per query. The requests of one
//! round (after the ready sockets were read) go out in one io_uring submission: each send wakes
//! a server thread, and sent one by one every wake-up preempted the worker on return from
//! `send`; submitted together the worker is preempted once per round. A round of one request,
//! and every request without io_uring (an older kernel, a seccomp filter, `SPINSCOPE_NO_URING`
//! set), is a plain `send`. No send is left queued between rounds: a round is submitted and its
//! completions reaped before the worker does anything else.
//!
//! What a step measures is the thread client's, line for line (see `load::driver`): one
//! outstanding transaction per connection (closed loop) or the same per-client schedule (open
//! loop), the same plans (`Workload::plan_txn`), the statement store with its capacity and
//! LRU eviction (COM_STMT_CLOSE) and late prepares, the retry rule (1213/1205/1020: ROLLBACK
//! and run again, cut off after the end), error classes, reconnects, and the counting through
//! `ClientResult`. A transaction in flight at the end is awaited (up to [`DRAIN`]) and not
//! counted, as the thread client's last one is.

use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::codec::{self, Expect, Outcome, Reader, Step};
use super::conn::{WireConn, WireError};
use crate::load::driver::{ClientResult, Ctx, RETRY_CODES};
use crate::load::workload::{Op, Prepared};
use crate::load::{stopped, WireConnector};

/// Longest wait for the transactions in flight at the end of a step.
pub const DRAIN: Duration = Duration::from_secs(10);
/// Pause between reconnect attempts (as the thread client's).
const RECONNECT_PAUSE: Duration = Duration::from_millis(200);
/// Fewest requests of a round sent through io_uring; smaller rounds use plain `send`.
const URING_MIN: usize = 2;
/// Longest sleep in one wait, so the end and the stop flag are seen soon.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// One epoll instance.
struct Epoll(RawFd);

impl Epoll {
    fn new() -> io::Result<Epoll> {
        // SAFETY: plain system call; the descriptor is owned by the returned value.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll(fd))
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: usize, out: bool) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | if out { libc::EPOLLOUT } else { 0 }) as u32,
            u64: token as u64,
        };
        // SAFETY: `ev` is a valid epoll_event for the call's duration.
        if unsafe { libc::epoll_ctl(self.0, op, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn wait(&self, evs: &mut [libc::epoll_event], timeout: Duration) -> usize {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
        };
        // SAFETY: `evs` is writable for `evs.len()` entries; `ts` lives through the call.
        let mut n = unsafe {
            libc::epoll_pwait2(
                self.0,
                evs.as_mut_ptr(),
                evs.len() as libc::c_int,
                &ts,
                std::ptr::null(),
            )
        };
        if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            // Kernels before 5.11: millisecond timeouts, rounded up.
            let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
            // SAFETY: as above.
            n = unsafe { libc::epoll_wait(self.0, evs.as_mut_ptr(), evs.len() as libc::c_int, ms) };
        }
        n.max(0) as usize
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

/// What the rollback after an error leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// A retryable error: run the transaction again (a new draw, the same start).
    Retry,
    /// A retryable error after the end: the transaction was cut off, not counted.
    CutOff,
    /// Any other error (already counted).
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between transactions (open loop: until the next intended start; also done).
    Idle,
    /// `plan[at]` was sent (execute, BEGIN or COMMIT).
    Op,
    /// The prepare of `plan[at]`'s statement was sent.
    Prepare,
    /// ROLLBACK was sent after an error.
    Rollback(After),
    /// No connection: reconnect at `retry_at`.
    Down,
}

struct Cl {
    idx: u32,
    conn: Option<WireConn>,
    store: Option<Prepared<u32>>,
    rng: SmallRng,
    r: ClientResult,
    seen_late: u64,
    plan: Vec<Op>,
    at: usize,
    start: Instant,
    state: State,
    reader: Reader,
    out: Vec<u8>,
    out_at: usize,
    want_out: bool,
    next_intended: Option<Instant>,
    retry_at: Instant,
    /// The error a retry or the rollback after it answers to.
    retry_err: Option<WireError>,
    /// The server closed the connection while no request was out.
    lost: bool,
    /// Its request waits in the worker's round of sends (`Worker::pending`).
    send_queued: bool,
    /// Bumped with every new connection, so a completion of an old one's send is ignored.
    generation: u32,
}

/// Prepare the workload's statements on a blocking connection (before the step, or after a
/// reconnect).
fn prepare_all(x: &Ctx<'_>, c: &mut WireConn) -> Result<Prepared<u32>, WireError> {
    let mut p = Prepared::new(x.cap);
    for (t, w) in x.wl.prepare_order(x.cap) {
        let (id, _) = c.prepare(&x.wl.sql(t, w))?;
        p.insert_early(t, w, id);
    }
    Ok(p)
}

struct Worker<'a, 'b> {
    x: &'a Ctx<'b>,
    wc: &'a WireConnector,
    ep: Epoll,
    cls: Vec<Cl>,
    end: Instant,
    period: Option<Duration>,
    scratch: Vec<u8>,
    /// The round's sends are submitted on it in one system call before the worker waits
    /// (None: a plain `send` per request, also where io_uring is not available).
    ring: Option<io_uring::IoUring>,
    /// Clients whose request waits for the end of the round.
    pending: Vec<usize>,
}

/// Run a worker's share of the clients for one step; returns their results in share order.
pub(crate) fn worker(
    x: &Ctx<'_>,
    wc: &WireConnector,
    share: Vec<(u32, WireConn)>,
) -> Vec<ClientResult> {
    let mut cls = Vec::with_capacity(share.len());
    for (idx, mut conn) in share {
        let mut r = ClientResult::new(x.n_windows);
        let store = match prepare_all(x, &mut conn) {
            Ok(p) => Some(p),
            Err(e) => {
                r.first_error = Some(format!("preparing statements: {e}"));
                *r.errors.entry(e.key()).or_default() += 1;
                None
            }
        };
        cls.push(Cl {
            idx,
            reader: Reader::new(Expect::Result, conn.deprecate_eof),
            conn: Some(conn),
            store,
            rng: SmallRng::seed_from_u64(x.cfg.seed ^ (u64::from(idx) << 32)),
            r,
            seen_late: 0,
            plan: Vec::new(),
            at: 0,
            start: Instant::now(),
            state: State::Idle,
            out: Vec::with_capacity(256),
            out_at: 0,
            want_out: false,
            next_intended: None,
            retry_at: Instant::now(),
            retry_err: None,
            lost: false,
            send_queued: false,
            generation: 0,
        });
    }
    let ep = Epoll::new();
    // Everyone prepared: the watcher fixes the start time, then all go together.
    let t0 = x.start_together();
    let ep = match ep {
        Ok(ep) => ep,
        Err(e) => {
            for c in &mut cls {
                c.r.first_error = Some(format!("epoll: {e}"));
                *c.r.errors.entry("driver".into()).or_default() += 1;
            }
            return cls.into_iter().map(|c| c.r).collect();
        }
    };
    let end = t0 + x.cfg.warmup + x.cfg.duration;
    let period = x.period();
    let cls_len = cls.len();
    let mut w = Worker {
        x,
        wc,
        ep,
        cls,
        end,
        period,
        scratch: vec![0u8; 65536],
        ring: if std::env::var_os("SPINSCOPE_NO_URING").is_some() {
            None
        } else {
            io_uring::IoUring::new((cls_len * 2).next_power_of_two().clamp(8, 4096) as u32).ok()
        },
        pending: Vec::with_capacity(cls_len),
    };
    for i in 0..w.cls.len() {
        let c = &mut w.cls[i];
        c.next_intended =
            period.map(|p| t0 + p.mul_f64(f64::from(c.idx) / f64::from(x.cfg.threads)));
        if c.store.is_none() {
            c.conn = None;
            c.state = State::Down;
            c.retry_at = t0;
        } else if let Err(e) = w.register(i) {
            w.cls[i].r.first_error = Some(format!("epoll: {e}"));
            w.down(i);
        }
    }
    w.run();
    let now = Instant::now().min(end);
    w.cls
        .into_iter()
        .map(|mut c| {
            if let Some(t) = c.next_intended {
                if t < now {
                    c.r.lag_s = (now - t).as_secs_f64();
                }
            }
            c.r
        })
        .collect()
}

impl Worker<'_, '_> {
    fn register(&mut self, i: usize) -> io::Result<()> {
        let c = &mut self.cls[i];
        if let Some(conn) = &c.conn {
            conn.stream.set_nonblocking(true)?;
            self.ep
                .ctl(libc::EPOLL_CTL_ADD, conn.stream.as_raw_fd(), i, false)?;
        }
        Ok(())
    }

    /// Whether no new transaction may start.
    fn over(&self, now: Instant) -> bool {
        now >= self.end || self.x.over()
    }

    fn run(&mut self) {
        let mut evs = vec![libc::epoll_event { events: 0, u64: 0 }; self.cls.len().clamp(1, 256)];
        let mut drain_until: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let over = self.over(now);
            if over {
                let busy = self
                    .cls
                    .iter()
                    .any(|c| !matches!(c.state, State::Idle | State::Down));
                let until = *drain_until.get_or_insert(now + DRAIN);
                if !busy || now >= until {
                    return;
                }
            }
            // Due timers: intended starts (open loop, and closed-loop clients between
            // transactions) and reconnects.
            let mut wake = if over { now + MAX_WAIT } else { self.end };
            for i in 0..self.cls.len() {
                let c = &self.cls[i];
                match c.state {
                    State::Idle if !over => match c.next_intended {
                        Some(t) if t > now => wake = wake.min(t),
                        Some(t) if t >= self.end => {}
                        _ => self.begin(i),
                    },
                    State::Down if !over => {
                        if c.retry_at <= now {
                            self.reconnect(i);
                        }
                        let c = &self.cls[i];
                        if c.state == State::Down {
                            wake = wake.min(c.retry_at);
                        } else if c.state == State::Idle {
                            wake = now;
                        }
                    }
                    _ => {}
                }
            }
            self.submit_sends();
            let timeout = wake.saturating_duration_since(Instant::now()).min(MAX_WAIT);
            let n = self.ep.wait(&mut evs, timeout);
            for ev in &evs[..n] {
                let (i, bits) = (ev.u64 as usize, ev.events);
                if i >= self.cls.len() {
                    continue;
                }
                if bits & libc::EPOLLOUT as u32 != 0 && self.cls[i].want_out {
                    self.flush(i);
                }
                self.readable(i);
            }
        }
    }

    /// Start client `i`'s next transaction (its start: the intended one, else now).
    fn begin(&mut self, i: usize) {
        let now = Instant::now();
        if self.over(now) {
            return;
        }
        let c = &mut self.cls[i];
        c.start = c.next_intended.unwrap_or(now);
        self.x.wl.plan_txn(&mut c.rng, &mut c.plan);
        c.at = 0;
        if c.lost || c.conn.is_none() {
            self.txn_error(
                i,
                WireError::Io(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                )),
            );
            return;
        }
        self.send_op(i);
    }

    /// Send `plan[at]`, or finish the transaction when the plan is done.
    fn send_op(&mut self, i: usize) {
        let x = self.x;
        let c = &mut self.cls[i];
        let Some(op) = c.plan.get(c.at) else {
            let fin = Instant::now();
            let mine = &x.shared.clients[c.idx as usize];
            let nq = c.plan.len() as u64;
            c.r.finished(x, mine, c.start, fin, nq);
            self.end_txn(i, false);
            return;
        };
        let deprecate_eof = c.conn.as_ref().is_some_and(|k| k.deprecate_eof);
        c.out.clear();
        c.out_at = 0;
        let mut expect = Expect::Result;
        match op {
            Op::Begin => codec::com_query(&mut c.out, "BEGIN"),
            Op::Commit => codec::com_query(&mut c.out, "COMMIT"),
            Op::Exec { table, which, args } => {
                let store = c
                    .store
                    .as_mut()
                    .expect("a running client has its statements");
                match store.get(*table, *which) {
                    Some(id) => {
                        codec::com_execute(&mut c.out, id, args);
                        c.r.executes += 1;
                    }
                    None => {
                        if let Some(old) = store.evict_if_full() {
                            codec::com_close(&mut c.out, old);
                        }
                        codec::com_prepare(&mut c.out, &x.wl.sql(*table, *which));
                        expect = Expect::Prepare;
                    }
                }
            }
        }
        c.state = if expect == Expect::Prepare {
            State::Prepare
        } else {
            State::Op
        };
        c.reader = Reader::new(expect, deprecate_eof);
        self.flush(i);
    }

    fn send_rollback(&mut self, i: usize, after: After) {
        let c = &mut self.cls[i];
        let deprecate_eof = c.conn.as_ref().is_some_and(|k| k.deprecate_eof);
        c.out.clear();
        c.out_at = 0;
        codec::com_query(&mut c.out, "ROLLBACK");
        c.state = State::Rollback(after);
        c.reader = Reader::new(Expect::Result, deprecate_eof);
        self.flush(i);
    }

    /// Write what is left of the request; wait for writability when the socket is full.
    fn flush(&mut self, i: usize) {
        self.flush_with(i, true);
    }

    /// [`Worker::flush`], queuing on the io_uring only when `ring` (not after the kernel said
    /// the socket is full: then the bytes wait for epoll's writability).
    fn flush_with(&mut self, i: usize, ring: bool) {
        let c = &mut self.cls[i];
        let Some(conn) = c.conn.as_mut() else {
            return;
        };
        if ring && self.ring.is_some() && !c.want_out && c.out_at < c.out.len() {
            // Sent at the end of the round, with the others.
            if !c.send_queued {
                c.send_queued = true;
                self.pending.push(i);
            }
            return;
        }
        while c.out_at < c.out.len() {
            match conn.stream.write(&c.out[c.out_at..]) {
                Ok(0) => {
                    let e = io::Error::new(ErrorKind::WriteZero, "the socket took no bytes");
                    return self.failed_io(i, e);
                }
                Ok(n) => c.out_at += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if !c.want_out {
                        let fd = conn.stream.as_raw_fd();
                        if let Err(e) = self.ep.ctl(libc::EPOLL_CTL_MOD, fd, i, true) {
                            return self.failed_io(i, e);
                        }
                        self.cls[i].want_out = true;
                    }
                    return;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return self.failed_io(i, e),
            }
        }
        if c.want_out {
            c.want_out = false;
            let fd = conn.stream.as_raw_fd();
            if let Err(e) = self.ep.ctl(libc::EPOLL_CTL_MOD, fd, i, false) {
                self.failed_io(i, e);
            }
        }
    }

    fn failed_io(&mut self, i: usize, e: io::Error) {
        self.on_error(i, WireError::Io(e));
    }

    /// Send the round's requests: one alone with a plain `send`, more in one `io_uring_enter`
    /// (each send wakes a server thread; sent one by one, every wake-up can preempt the worker
    /// on its way back from the system call). Completions may start new requests, which are
    /// sent the same way until none is left.
    fn submit_sends(&mut self) {
        let mut done: Vec<(u64, i32)> = Vec::new();
        let mut round: Vec<usize> = Vec::new();
        while !self.pending.is_empty() {
            std::mem::swap(&mut round, &mut self.pending);
            round.retain(|&i| std::mem::replace(&mut self.cls[i].send_queued, false));
            if round.len() < URING_MIN || self.ring.is_none() {
                for i in round.drain(..) {
                    self.flush_with(i, false);
                }
                continue;
            }
            done.clear();
            if let Some(ring) = self.ring.as_mut() {
                let cap = ring.params().sq_entries() as usize;
                for chunk in round.chunks(cap) {
                    let mut pushed = 0;
                    for &i in chunk {
                        let c = &self.cls[i];
                        let Some(conn) = c.conn.as_ref() else {
                            continue;
                        };
                        let rest = &c.out[c.out_at..];
                        let fd = io_uring::types::Fd(conn.stream.as_raw_fd());
                        let sqe = io_uring::opcode::Send::new(fd, rest.as_ptr(), rest.len() as u32)
                            .flags(libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
                            .build()
                            .user_data(u64::from(c.generation) << 32 | i as u64);
                        // SAFETY: the buffer and the socket stay as they are until the
                        // completions below are reaped: nothing else runs in between, and a
                        // nonblocking send completes within the submitting call.
                        if unsafe { ring.submission().push(&sqe) }.is_ok() {
                            pushed += 1;
                        }
                    }
                    let mut waited = ring.submit_and_wait(pushed);
                    while matches!(&waited, Err(e) if e.kind() == ErrorKind::Interrupted) {
                        waited = ring.submit_and_wait(pushed);
                    }
                    done.extend(ring.completion().map(|c| (c.user_data(), c.result())));
                }
            }
            for &(ud, res) in &done {
                let (generation, i) = ((ud >> 32) as u32, (ud & 0xffff_ffff) as usize);
                let Some(c) = self.cls.get_mut(i) else {
                    continue;
                };
                if c.generation != generation {
                    continue;
                }
                if res < 0 {
                    if -res == libc::EAGAIN {
                        // The socket is full: the plain path waits for writability.
                        self.flush_with(i, false);
                    } else {
                        self.failed_io(i, io::Error::from_raw_os_error(-res));
                    }
                } else {
                    c.out_at += res as usize;
                    if c.out_at < c.out.len() {
                        self.flush_with(i, false);
                    }
                }
            }
            // Requests whose completion never came (not expected): sent plainly.
            for &i in &round {
                let c = &self.cls[i];
                if c.conn.is_some()
                    && c.out_at < c.out.len()
                    && !c.want_out
                    && !c.send_queued
                    && !done.iter().any(|&(ud, _)| (ud & 0xffff_ffff) as usize == i)
                {
                    self.flush_with(i, false);
                }
            }
            round.clear();
        }
    }

    /// Read what the socket has and act on a complete response.
    fn readable(&mut self, i: usize) {
        loop {
            let c = &mut self.cls[i];
            let Some(conn) = c.conn.as_mut() else {
                return;
            };
            let n = match conn.stream.read(&mut self.scratch) {
                Ok(0) => {
                    let e = io::Error::new(
                        ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    );
                    if matches!(c.state, State::Idle) {
                        // Found when the next transaction starts, as a blocking client would.
                        c.lost = true;
                        c.conn = None;
                        return;
                    }
                    return self.on_error(i, WireError::Io(e));
                }
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    if matches!(c.state, State::Idle) {
                        c.lost = true;
                        c.conn = None;
                        return;
                    }
                    return self.on_error(i, WireError::Io(e));
                }
            };
            if matches!(c.state, State::Idle | State::Down) {
                // Nothing was asked: an unsolicited packet (e.g. the server's goodbye).
                continue;
            }
            let step = if conn.inbuf.is_empty() {
                match c.reader.feed(&self.scratch[..n]) {
                    Ok(Step::More(used)) => {
                        conn.inbuf.extend_from_slice(&self.scratch[used..n]);
                        Ok(None)
                    }
                    Ok(Step::Done(used, o)) => {
                        conn.inbuf.extend_from_slice(&self.scratch[used..n]);
                        Ok(Some(o))
                    }
                    Err(m) => Err(m),
                }
            } else {
                conn.inbuf.extend_from_slice(&self.scratch[..n]);
                match c.reader.feed(&conn.inbuf) {
                    Ok(Step::More(used)) => {
                        conn.inbuf.drain(..used);
                        Ok(None)
                    }
                    Ok(Step::Done(used, o)) => {
                        conn.inbuf.drain(..used);
                        Ok(Some(o))
                    }
                    Err(m) => Err(m),
                }
            };
            match step {
                // One request is out at a time: a complete answer means nothing more is due
                // now, so the socket is not read again until epoll says so.
                Ok(Some(o)) => return self.on_response(i, o),
                Ok(None) => {}
                Err(m) => return self.on_error(i, WireError::Protocol(m)),
            }
        }
    }

    fn on_response(&mut self, i: usize, o: Outcome) {
        let c = &mut self.cls[i];
        let state = c.state;
        match (state, o) {
            (_, Outcome::Err(e)) => self.on_error(i, WireError::Server(e)),
            (State::Op, Outcome::Done { .. }) => {
                c.at += 1;
                self.send_op(i);
            }
            (State::Prepare, Outcome::Prepared { id, .. }) => {
                if let (Some(Op::Exec { table, which, args }), Some(store)) =
                    (c.plan.get(c.at), c.store.as_mut())
                {
                    store.insert_late(*table, *which, id);
                    let deprecate_eof = c.conn.as_ref().is_some_and(|k| k.deprecate_eof);
                    c.out.clear();
                    c.out_at = 0;
                    codec::com_execute(&mut c.out, id, args);
                    c.r.executes += 1;
                    c.state = State::Op;
                    c.reader = Reader::new(Expect::Result, deprecate_eof);
                    self.flush(i);
                }
            }
            (State::Rollback(After::Retry), _) => {
                let code = c.retry_err.take().and_then(|e| e.code());
                c.r.retried(self.x, code);
                self.x.wl.plan_txn(&mut c.rng, &mut c.plan);
                c.at = 0;
                self.send_op(i);
            }
            (State::Rollback(_), _) => self.end_txn(i, false),
            (_, other) => self.on_error(
                i,
                WireError::Protocol(codec::Malformed(match other {
                    Outcome::Prepared { .. } => "a statement id where none was asked for",
                    _ => "an answer where none was asked for",
                })),
            ),
        }
    }

    fn on_error(&mut self, i: usize, e: WireError) {
        match self.cls[i].state {
            State::Op | State::Prepare => self.txn_error(i, e),
            State::Rollback(After::Retry) => {
                // The rollback before a retry failed: the retryable error stands.
                let x = self.x;
                let c = &mut self.cls[i];
                let orig = c.retry_err.take().unwrap_or(e);
                let mine = &x.shared.clients[c.idx as usize];
                c.r.failed(x, mine, orig.key(), || orig.to_string());
                self.end_txn(i, true);
            }
            State::Rollback(After::CutOff) => self.end_txn(i, e.is_connection_error()),
            State::Rollback(After::Failed) => self.end_txn(i, true),
            State::Idle | State::Down => {
                self.drop_conn(i);
                self.cls[i].lost = true;
            }
        }
    }

    /// An error of the running transaction (a statement, BEGIN/COMMIT, or a late prepare).
    fn txn_error(&mut self, i: usize, e: WireError) {
        let x = self.x;
        let code = e.code();
        if code.is_some_and(|c| RETRY_CODES.contains(&c)) {
            let cut_off = Instant::now() >= self.end || stopped(x.stop);
            self.cls[i].retry_err = Some(e);
            return self.send_rollback(i, if cut_off { After::CutOff } else { After::Retry });
        }
        let c = &mut self.cls[i];
        let mine = &x.shared.clients[c.idx as usize];
        c.r.failed(x, mine, e.key(), || e.to_string());
        if e.is_connection_error() || c.conn.is_none() {
            self.end_txn(i, true);
        } else {
            self.send_rollback(i, After::Failed);
        }
    }

    /// The transaction is over (counted or not): late prepares, the next intended start, and
    /// the next transaction or a reconnect.
    fn end_txn(&mut self, i: usize, down: bool) {
        let x = self.x;
        let period = self.period;
        let c = &mut self.cls[i];
        if let Some(p) = c.store.as_ref() {
            c.r.late(x, p.late_prepares, &mut c.seen_late);
        }
        if let (Some(t), Some(p)) = (c.next_intended.as_mut(), period) {
            *t += p;
        }
        if down {
            self.down(i);
            return;
        }
        c.state = State::Idle;
        if c.next_intended.is_none_or(|t| t <= Instant::now()) {
            self.begin(i);
        }
    }

    fn down(&mut self, i: usize) {
        self.drop_conn(i);
        let c = &mut self.cls[i];
        c.store = None;
        c.lost = false;
        c.want_out = false;
        c.state = State::Down;
        c.retry_at = Instant::now();
    }

    /// Close client `i`'s connection (a request still waiting for the round is dropped).
    fn drop_conn(&mut self, i: usize) {
        let c = &mut self.cls[i];
        c.send_queued = false;
        c.generation = c.generation.wrapping_add(1);
        c.conn = None;
    }

    /// Reconnect client `i` (blocking: connect, authenticate, prepare) and go on.
    fn reconnect(&mut self, i: usize) {
        let x = self.x;
        let attempt = (self.wc)().and_then(|mut conn| {
            let p = prepare_all(x, &mut conn)?;
            Ok((conn, p))
        });
        let c = &mut self.cls[i];
        match attempt {
            Ok((conn, p)) => {
                c.seen_late = p.late_prepares;
                c.r.late_prepares += p.len() as u64;
                c.r.reconnects += 1;
                c.conn = Some(conn);
                c.store = Some(p);
                c.state = State::Idle;
                if let Err(e) = self.register(i) {
                    self.cls[i]
                        .r
                        .first_error
                        .get_or_insert(format!("epoll: {e}"));
                    self.down(i);
                    self.cls[i].retry_at = Instant::now() + RECONNECT_PAUSE;
                }
            }
            Err(_) => c.retry_at = Instant::now() + RECONNECT_PAUSE,
        }
    }
}
