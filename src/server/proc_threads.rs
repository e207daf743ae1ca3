//! The server's running threads counted from `/proc` on a local server, for the burst
//! sampler: a series the server does not compute, so it costs the server nothing.
//!
//! What is counted: the server's threads in state R (on a CPU, or runnable and waiting in the
//! run queue) at the sample instant, from each thread's `/proc/PID/task/TID/stat`. Every file
//! stays open and is re-read at offset 0 (the kernel formats it anew on each read; a shorter
//! read buffer does not shorten that); the task directory stays open and is listed again
//! whenever its link count (the kernel's thread count) changes or a thread is gone, so threads
//! started for new connections count at once.
//!
//! The client's cost is per thread per sample, so by default ([`DEFAULT_GATE`]) a sample first
//! asks the kernel's taskstats interface one question for the whole process
//! ([`super::taskstats`]): when no thread was in state R at the last sample and no thread has
//! been put on a CPU since, no thread file is read at all (an idle server). Otherwise a thread's
//! `stat` is read only when its `schedstat` (cheaper) changed since the last sample, or it was
//! in state R at its last read; and every thread's `stat` every 10th sample when the host has
//! more runnable tasks than CPUs (`/proc/loadavg`): a thread asleep at its last read that has
//! not been on a CPU since is asleep still, unless it was woken and is queued for its first
//! slice (which needs a run queue), which the next full read counts. Costs per read on the
//! benchmark VMs are in docs/PERFORMANCE.md. (`schedstat`'s on-CPU + run-queue times alone would be cheaper still,
//! but the kernel credits a queued thread's wait only when it next runs, so a 10 ms interval's
//! mean from them comes in lumps; docs/PERFORMANCE.md.)

use std::ffi::CStr;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The state letter of a `/proc/.../stat` line: the first field after the `(comm)`, which may
/// itself hold spaces and parentheses (hence the last `)`). None when the line has none.
pub fn parse_state(stat: &[u8]) -> Option<u8> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    stat[close + 1..]
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace())
}

/// The first two fields of `/proc/.../schedstat`: ns on a CPU, and ns waiting in the run
/// queue.
pub fn parse_schedstat(text: &[u8]) -> Option<(u64, u64)> {
    let s = std::str::from_utf8(text).ok()?;
    let mut f = s.split_ascii_whitespace();
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

/// ns on a CPU of one thread of a process (`/proc/PID/task/TID/schedstat`).
pub fn thread_cpu_ns(pid: u32, tid: u32) -> Option<u64> {
    let s = std::fs::read(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    parse_schedstat(&s).map(|(cpu, _)| cpu)
}

/// An open directory stream, rewound before each listing.
struct Dir(*mut libc::DIR);

impl Dir {
    fn open(path: &str) -> Option<Dir> {
        let c = std::ffi::CString::new(path).ok()?;
        // SAFETY: a valid NUL-terminated path; a null result is handled.
        let d = unsafe { libc::opendir(c.as_ptr()) };
        (!d.is_null()).then_some(Dir(d))
    }

    /// The directory's link count: the kernel gives a task directory its thread count + 2,
    /// so a change says threads came or went without listing it. None when gone.
    fn nlink(&self) -> Option<u64> {
        // SAFETY: a valid open DIR*; fstat writes one stat into a zeroed local.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            (libc::fstat(libc::dirfd(self.0), &mut st) == 0).then_some(st.st_nlink as u64)
        }
    }

    /// The numeric entries (thread ids), into `out`. False when the directory is gone.
    fn list(&mut self, out: &mut Vec<u32>) -> bool {
        out.clear();
        // SAFETY: self.0 is an open DIR* owned by self; readdir's entry is read before the
        // next call.
        unsafe {
            libc::rewinddir(self.0);
            *libc::__errno_location() = 0;
            loop {
                let e = libc::readdir(self.0);
                if e.is_null() {
                    break;
                }
                let name = CStr::from_ptr((*e).d_name.as_ptr());
                if let Some(t) = name.to_str().ok().and_then(|s| s.parse::<u32>().ok()) {
                    out.push(t);
                }
            }
            *libc::__errno_location() == 0 && !out.is_empty()
        }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: self.0 came from opendir and is closed once.
        unsafe { libc::closedir(self.0) };
    }
}

/// How a sample decides which threads' `stat` to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Every thread's `stat` at every sample (exact; about 3-6 us per thread).
    Every,
    /// Every thread's `schedstat` (about 0.8 us) at every sample, and its `stat` only when the
    /// thread was in state R at its last read or has been on a CPU since (its `schedstat`
    /// changed); every `full_every`-th sample reads every `stat` (0 = never). What it misses: a thread
    /// woken since its last read that has not yet had a CPU (queued since the wake-up) is
    /// counted at the next full sample or once it has run.
    Schedstat { full_every: u32 },

    /// Before the schedstat gate, one taskstats request for the whole process
    /// ([`super::taskstats`], about 1 us): when no thread was in state R at the last sample
    /// and the process's sums (times put on a CPU, ns on a CPU, context switches) are what
    /// they were then, no thread has been on a CPU since, and no per-thread file is read;
    /// otherwise the sample goes through the schedstat gate; every `full_every`-th sample
    /// (0 = never) reads every thread's `stat` unless /proc/loadavg shows nothing else
    /// runnable on the host. What it misses: a thread woken since the last sample and still
    /// queued for its first slice at the sample instant, counted once it has run or at the
    /// next full read (on a busy host such a wait can last many samples). Falls back
    /// to the schedstat gate where taskstats cannot be used (no `CAP_NET_ADMIN`, a kernel
    /// without it); [`ProcThreads::gate_note`] says why.
    Group { full_every: u32 },
}

/// The gate the sampler uses: the group gate with a full read every 10th sample (10 Hz at
/// 100 Hz) while the host has more runnable tasks than CPUs.
pub const DEFAULT_GATE: Gate = Gate::Group { full_every: 10 };

/// One thread's open files and what its last reads said.
struct Task {
    tid: u32,
    stat: File,
    sched: Option<File>,
    /// The last `schedstat` text (on-CPU ns, run-queue ns, times run), compared as bytes.
    sched_last: [u8; 64],
    sched_len: u8,
    /// State R at the last `stat` read.
    running: bool,
}

/// Counts one process's threads in state R.
pub struct ProcThreads {
    pid: u32,
    dir: Dir,
    /// Per thread, sorted by tid.
    tasks: Vec<Task>,
    seen: Vec<u32>,
    /// The task directory's link count at the last listing (see [`Dir::nlink`]).
    listed_nlink: Option<u64>,
    exclude: Option<u32>,
    gate: Gate,
    samples: u64,
    /// `/proc/loadavg`, whose fourth field starts with the host's runnable tasks.
    loadavg: Option<File>,
    /// Samples that `/proc/loadavg` answered alone (nothing else runnable on the host).
    host_idle_samples: u64,
    /// The group gate's taskstats socket.
    group: Option<super::taskstats::GroupStats>,
    /// The group's sums read just before the last sample's per-thread reads, kept while
    /// those reads found no thread in state R (the group gate compares against them).
    quiet: Option<super::taskstats::GroupSums>,
    /// Samples that the group's sums answered alone.
    group_quiet_samples: u64,
    /// Threads in state R at the last sample.
    last_running: u32,
    /// Per-thread files read so far: (`schedstat`, `stat`).
    reads: (u64, u64),
    /// Why the gate asked for is not the one in use.
    gate_note: Option<String>,
    /// The host's online CPUs (for the run-queue test of a full read).
    cpus: u32,
    /// Full reads left out because nothing was queued for a CPU on the host.
    fulls_skipped: u64,
}

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// Threads in state R.
    pub running: u32,
    /// Threads in all.
    pub threads: u32,
}

/// The host's runnable tasks (on a CPU or queued) from a `/proc/loadavg` line
/// (`0.12 0.10 0.05 2/345 6789`), the reader itself included.
pub fn parse_loadavg_running(text: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(text).ok()?;
    let (running, _) = s.split_ascii_whitespace().nth(3)?.split_once('/')?;
    running.parse().ok()
}

/// Read `f` from offset 0 into `buf`; the bytes read, or None when the thread is gone.
fn reread<'a>(f: &File, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    match f.read_at(buf, 0) {
        Ok(n) if n > 0 => Some(&buf[..n]),
        _ => None,
    }
}

impl ProcThreads {
    /// None when the process's task directory cannot be read (not local, gone, no access).
    /// Reads every thread's `stat` at every sample until [`ProcThreads::set_gate`].
    pub fn open(pid: u32) -> Option<ProcThreads> {
        let mut p = ProcThreads {
            pid,
            dir: Dir::open(&format!("/proc/{pid}/task"))?,
            tasks: Vec::new(),
            seen: Vec::new(),
            listed_nlink: None,
            exclude: None,
            gate: Gate::Every,
            samples: 0,
            loadavg: File::open("/proc/loadavg").ok(),
            host_idle_samples: 0,
            group: None,
            quiet: None,
            group_quiet_samples: 0,
            last_running: 0,
            reads: (0, 0),
            gate_note: None,
            // SAFETY: sysconf has no preconditions.
            cpus: u32::try_from(unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) })
                .unwrap_or(1)
                .max(1),
            fulls_skipped: 0,
        };
        p.count()?;
        Some(p)
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Leave one thread out (the server thread serving the sampler's own session).
    pub fn exclude(&mut self, tid: Option<u32>) {
        self.exclude = tid;
    }

    /// Choose how samples read. A `schedstat` gate falls back to [`Gate::Every`] when the
    /// kernel keeps no scheduler statistics (its `schedstat` then reads `0 0 0`).
    pub fn set_gate(&mut self, gate: Gate) {
        self.gate = gate;
        self.group = None;
        self.quiet = None;
        self.gate_note = None;
        if let Gate::Group { full_every } = gate {
            match super::taskstats::GroupStats::open(self.pid) {
                Ok(g) => self.group = Some(g),
                Err(why) => {
                    self.gate = Gate::Schedstat { full_every };
                    self.gate_note = Some(why);
                }
            }
        }
        if let Gate::Schedstat { .. } | Gate::Group { .. } = gate {
            let mut buf = [0u8; 64];
            let off = self
                .tasks
                .iter()
                .filter_map(|t| t.sched.as_ref())
                .filter_map(|f| reread(f, &mut buf).map(|b| b.starts_with(b"0 0 0")))
                .any(|zero| zero);
            if off {
                self.gate = Gate::Every;
                self.group = None;
                self.gate_note = Some("no scheduler statistics in schedstat".into());
            }
        }
    }

    pub fn gate(&self) -> Gate {
        self.gate
    }

    /// Why the gate in use is not the one asked for (taskstats refused, no schedstat).
    pub fn gate_note(&self) -> Option<&str> {
        self.gate_note.as_deref()
    }

    /// (samples taken, samples that `/proc/loadavg` answered alone).
    pub fn samples(&self) -> (u64, u64) {
        (self.samples, self.host_idle_samples)
    }

    /// Per-thread files read so far: (`schedstat`, `stat`).
    pub fn reads(&self) -> (u64, u64) {
        self.reads
    }

    /// Whether tasks wait for a CPU on the host: more runnable than CPUs in /proc/loadavg
    /// (true when it cannot be read).
    fn host_queued(&mut self) -> bool {
        let mut buf = [0u8; 128];
        self.loadavg
            .as_ref()
            .and_then(|f| reread(f, &mut buf))
            .and_then(parse_loadavg_running)
            .is_none_or(|r| r > self.cpus)
    }

    /// Full reads left out because no task was queued for a CPU on the host.
    pub fn fulls_skipped(&self) -> u64 {
        self.fulls_skipped
    }

    /// Samples that the group gate's taskstats sums answered alone.
    pub fn group_quiet_samples(&self) -> u64 {
        self.group_quiet_samples
    }

    /// A sample that read no thread file: every thread known asleep.
    fn all_asleep(&mut self) -> Count {
        let mut c = Count {
            running: 0,
            threads: 0,
        };
        for t in self
            .tasks
            .iter_mut()
            .filter(|t| Some(t.tid) != self.exclude)
        {
            t.running = false;
            c.threads += 1;
        }
        self.last_running = 0;
        c
    }

    /// List the task directory again and keep the open files of threads still there.
    fn relist(&mut self) -> Option<()> {
        if !self.dir.list(&mut self.seen) {
            return None;
        }
        self.seen.sort_unstable();
        let seen = &self.seen;
        self.tasks.retain(|t| seen.binary_search(&t.tid).is_ok());
        for &tid in &self.seen {
            if let Err(at) = self.tasks.binary_search_by_key(&tid, |t| t.tid) {
                let path = format!("/proc/{}/task/{tid}/", self.pid);
                let Ok(stat) = File::open(format!("{path}stat")) else {
                    continue; // exited between the listing and the open
                };
                self.tasks.insert(
                    at,
                    Task {
                        tid,
                        stat,
                        sched: File::open(format!("{path}schedstat")).ok(),
                        sched_last: [0; 64],
                        sched_len: 0,
                        // Unknown yet: read at the first sample.
                        running: true,
                    },
                );
            }
        }
        Some(())
    }

    /// Sample now. None when the process is gone. The task directory is listed again only
    /// when its link count (the thread count) changed or a thread's stat could not be read
    /// (it exited, maybe replaced by a new one): listing costs more than reading ten stats.
    pub fn count(&mut self) -> Option<Count> {
        let mut full = match self.gate {
            Gate::Every => true,
            Gate::Schedstat { full_every } | Gate::Group { full_every } => {
                full_every > 0 && self.samples % u64::from(full_every) == 0
            }
        };
        self.samples += 1;
        // What a full read is for, a thread woken and still queued for its first slice, needs
        // a run queue: /proc/loadavg showing more runnable tasks than the host has CPUs.
        if full && !matches!(self.gate, Gate::Every) && !self.host_queued() {
            full = false;
            self.fulls_skipped += 1;
        }
        // The group gate: one request for the whole process, made before any per-thread
        // read, so that a thread put on a CPU after it shows in the next sample's sums. Asked
        // only when the last sample found no thread R (under a load the sums always change).
        // When they have not changed, no thread ran, so none started or exited either: the
        // task list is still right without looking at the directory.
        let before = match self.group.as_mut() {
            Some(g) if self.last_running == 0 => g.read(),
            _ => None,
        };
        // A full sample still reads (unless /proc/loadavg shows the host idle): a thread
        // woken and still queued for a CPU does not move the sums, and on a busy host it can
        // wait there for many samples (docs/PERFORMANCE.md measured such misses without it).
        if !full
            && before
                .zip(self.quiet)
                .is_some_and(|(b, q)| same_activity(&b, &q))
        {
            // The comparison stays with the older sums: a thread put on a CPU since them
            // changes the sums still.
            self.group_quiet_samples += 1;
            return Some(self.all_asleep());
        }
        let nlink = self.dir.nlink()?;
        if self.listed_nlink != Some(nlink) {
            self.relist()?;
            self.listed_nlink = Some(nlink);
        }
        let gated = !matches!(self.gate, Gate::Every);
        let mut buf = [0u8; 512];
        let mut c = Count {
            running: 0,
            threads: 0,
        };
        // Nothing on the host wants a CPU but this reader: no server thread is in state R,
        // and one read told it (an idle dedicated host, most of the time).
        let host_idle = gated
            && self
                .loadavg
                .as_ref()
                .and_then(|f| reread(f, &mut buf))
                .and_then(parse_loadavg_running)
                .is_some_and(|r| r <= 1);
        if host_idle {
            self.host_idle_samples += 1;
            // Sums read before this instant, with no thread R at it, serve as well.
            if before.is_some() {
                self.quiet = before;
            }
            return Some(self.all_asleep());
        }
        let mut gone = false;
        for t in self.tasks.iter_mut() {
            if Some(t.tid) == self.exclude {
                continue;
            }
            // Has it been on a CPU since the last sample? (A failed read: ask `stat`.) Not
            // asked of a thread that was R: its `stat` is read anyway, and its `schedstat`
            // is compared again from its next read on.
            let mut ran = true;
            if gated && t.running {
                t.sched_len = 0;
            } else if gated {
                self.reads.0 += 1;
                if let Some(b) = t.sched.as_ref().and_then(|f| reread(f, &mut buf)) {
                    let n = b.len().min(64);
                    ran = t.sched_last[..t.sched_len as usize] != b[..n];
                    t.sched_last[..n].copy_from_slice(&b[..n]);
                    t.sched_len = n as u8;
                }
            }
            if full || ran || t.running {
                self.reads.1 += 1;
                let Some(state) = reread(&t.stat, &mut buf).and_then(parse_state) else {
                    gone = true; // list again next time
                    continue;
                };
                t.running = state == b'R';
            }
            c.threads += 1;
            if t.running {
                c.running += 1;
            }
        }
        if gone {
            self.listed_nlink = None;
        }
        // The next samples' comparison: the sums read just before reads that found no
        // thread R (None when they found one, or none were read).
        self.quiet = before.filter(|_| c.running == 0 && !gone);
        self.last_running = c.running;
        Some(c)
    }
}

/// Whether two reads of a group's sums say that no thread of it has been put on a CPU, run,
/// or switched between them.
fn same_activity(a: &super::taskstats::GroupSums, b: &super::taskstats::GroupSums) -> bool {
    (a.cpu_count, a.cpu_run_ns, a.nvcsw, a.nivcsw) == (b.cpu_count, b.cpu_run_ns, b.nvcsw, b.nivcsw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_after_a_comm_with_spaces_and_parens() {
        assert_eq!(parse_state(b"42 (mariadbd) S 1 42 42 0"), Some(b'S'));
        assert_eq!(parse_state(b"43 (my (odd) name) R 1 42"), Some(b'R'));
        assert_eq!(parse_state(b"43 (no close paren R"), None);
        assert_eq!(parse_state(b"43 (x)"), None);
    }

    #[test]
    fn loadavg_running_field() {
        assert_eq!(
            parse_loadavg_running(b"0.12 0.10 0.05 2/345 6789\n"),
            Some(2)
        );
        assert_eq!(parse_loadavg_running(b"0.00 0.00 0.00 1/80 1"), Some(1));
        assert_eq!(parse_loadavg_running(b"0.12 0.10 0.05 2 345"), None);
        assert_eq!(parse_loadavg_running(b""), None);
    }

    #[test]
    fn schedstat_fields() {
        assert_eq!(parse_schedstat(b"123456 789 10\n"), Some((123456, 789)));
        assert_eq!(parse_schedstat(b"123456"), None);
        assert_eq!(parse_schedstat(b""), None);
        assert_eq!(parse_schedstat(b"x 1 2"), None);
    }

    /// A child of its own (this test binary runs other tests' threads beside this one),
    /// asleep in `read` until [`go`] writes a line to it, then spinning; killed and reaped on
    /// drop, so a failed assertion leaves no spinning shell behind.
    fn sleeper() -> (Spinner, std::process::ChildStdin) {
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", "read x; while :; do :; done"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("/bin/sh");
        let stdin = child.stdin.take().unwrap();
        (Spinner(child), stdin)
    }

    struct Spinner(std::process::Child);

    impl Spinner {
        fn id(&self) -> u32 {
            self.0.id()
        }

        fn kill(&mut self) -> std::io::Result<()> {
            self.0.kill()
        }

        fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
            self.0.wait()
        }
    }

    impl Drop for Spinner {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn go(stdin: &mut std::process::ChildStdin) {
        use std::io::Write;
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Poll `f` every 5 ms until it holds, for at most 20 s (a loaded host can keep a woken
    /// process off a CPU for a long time): whether it held.
    fn wait_until(mut f: impl FnMut() -> bool) -> bool {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_secs(20) {
            if f() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        false
    }

    /// The child's own state letter, read independently of the counter under test.
    fn state_of(pid: u32) -> Option<u8> {
        std::fs::read(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| parse_state(&s))
    }

    const IDLE: Count = Count {
        running: 0,
        threads: 1,
    };
    const BUSY: Count = Count {
        running: 1,
        threads: 1,
    };

    #[test]
    fn a_process_that_starts_spinning_is_seen_running_on_reread() {
        let (mut child, mut stdin) = sleeper();
        let pid = child.id();
        let mut p = ProcThreads::open(pid).expect("child's /proc");
        assert!(wait_until(|| state_of(pid) == Some(b'S')), "never asleep");
        let asleep = p.count().unwrap();
        go(&mut stdin);
        // The same open files show the change once it runs.
        assert!(
            wait_until(|| p.count().unwrap() == BUSY),
            "the spin was never seen"
        );
        let spinning: Vec<Count> = (0..10)
            .map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                p.count().unwrap()
            })
            .collect();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(asleep, IDLE);
        // Spinning: in state R (on a CPU or queued) at every read.
        assert!(spinning.iter().all(|c| *c == BUSY), "{spinning:?}");
        assert!(p.count().is_none(), "a reaped process still counted");
    }

    #[test]
    fn the_schedstat_gate_sees_a_thread_that_starts_spinning() {
        let (mut child, mut stdin) = sleeper();
        let pid = child.id();
        let mut p = ProcThreads::open(pid).expect("child's /proc");
        p.set_gate(Gate::Schedstat { full_every: 1000 });
        let gated = p.gate();
        assert!(wait_until(|| state_of(pid) == Some(b'S')), "never asleep");
        let asleep: Vec<Count> = (0..5).map(|_| p.count().unwrap()).collect();
        go(&mut stdin);
        // Not a full read after the first: the schedstat change (or the last R) made it read.
        assert!(
            wait_until(|| p.count().unwrap() == BUSY),
            "{gated:?}: the spin was never seen"
        );
        let spinning: Vec<Count> = (0..10)
            .map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                p.count().unwrap()
            })
            .collect();
        let _ = child.kill();
        let _ = child.wait();
        assert!(asleep.iter().all(|c| *c == IDLE), "{asleep:?}");
        assert!(
            spinning.iter().all(|c| *c == BUSY),
            "{gated:?} {spinning:?}"
        );
    }

    #[test]
    fn the_group_gate_reads_nothing_while_asleep_and_sees_the_spin() {
        let (mut child, mut stdin) = sleeper();
        let pid = child.id();
        let mut p = ProcThreads::open(pid).expect("child's /proc");
        assert!(wait_until(|| state_of(pid) == Some(b'S')), "never asleep");
        p.set_gate(Gate::Group { full_every: 0 });
        let gate = p.gate();
        let asleep: Vec<Count> = (0..20)
            .map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                p.count().unwrap()
            })
            .collect();
        let answered = p.group_quiet_samples() + p.samples().1;
        go(&mut stdin);
        // With no full reads at all, the spin is seen through the sums.
        assert!(
            wait_until(|| p.count().unwrap() == BUSY),
            "{gate:?}: the spin was never seen"
        );
        let spinning: Vec<Count> = (0..10)
            .map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                p.count().unwrap()
            })
            .collect();
        let _ = child.kill();
        let _ = child.wait();
        assert!(asleep.iter().all(|c| *c == IDLE), "{asleep:?}");
        match p.gate_note() {
            // taskstats answered (root): after the first two samples of the sleeping child,
            // the sums (or /proc/loadavg) answer alone.
            None => {
                assert_eq!(gate, Gate::Group { full_every: 0 });
                assert!(answered >= 15, "{answered} of 20 samples without reads");
            }
            // Not root: the schedstat gate, and it says why.
            Some(why) => assert!(matches!(gate, Gate::Schedstat { .. }), "{why}"),
        }
        assert!(spinning.iter().all(|c| *c == BUSY), "{spinning:?}");
    }

    #[test]
    fn a_missing_process_is_none() {
        assert!(ProcThreads::open(u32::MAX - 1).is_none());
    }
}
