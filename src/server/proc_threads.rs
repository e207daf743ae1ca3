//! The server's running threads counted from `/proc` on a local server, for the burst
//! sampler: a series the server does not compute, so it costs the server nothing.
//!
//! What is counted: the server's threads in state R (on a CPU, or runnable and waiting in the
//! run queue) at the sample instant, from each thread's `/proc/PID/task/TID/stat`. Every `stat`
//! stays open and is re-read at offset 0 (the kernel formats it anew on each read); the task
//! directory stays open and is listed again whenever its link count (the kernel's thread count)
//! changes or a thread is gone, so threads started for new connections count at once. (`schedstat`'s on-CPU + run-queue times would be 5x cheaper to
//! read, but the kernel credits a queued thread's wait only when it next runs, so a 10 ms
//! interval's mean from them comes in lumps; docs/PERFORMANCE.md.)

use std::collections::HashMap;
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

/// Counts one process's threads in state R.
pub struct ProcThreads {
    pid: u32,
    dir: Dir,
    /// Per thread: its open stat.
    open: HashMap<u32, File>,
    seen: Vec<u32>,
    /// The task directory's link count at the last listing (see [`Dir::nlink`]).
    listed_nlink: Option<u64>,
    exclude: Option<u32>,
}

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// Threads in state R.
    pub running: u32,
    /// Threads in all.
    pub threads: u32,
}

impl ProcThreads {
    /// None when the process's task directory cannot be read (not local, gone, no access).
    pub fn open(pid: u32) -> Option<ProcThreads> {
        let mut p = ProcThreads {
            pid,
            dir: Dir::open(&format!("/proc/{pid}/task"))?,
            open: HashMap::new(),
            seen: Vec::new(),
            listed_nlink: None,
            exclude: None,
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

    /// Sample now. None when the process is gone. The task directory is listed again only
    /// when its link count (the thread count) changed or a thread's stat could not be read
    /// (it exited, maybe replaced by a new one): listing costs more than reading ten stats.
    pub fn count(&mut self) -> Option<Count> {
        let nlink = self.dir.nlink()?;
        if self.listed_nlink != Some(nlink) {
            if !self.dir.list(&mut self.seen) {
                return None;
            }
            self.listed_nlink = Some(nlink);
            let seen = &self.seen;
            self.open.retain(|tid, _| seen.contains(tid));
        }
        let mut buf = [0u8; 512];
        let mut c = Count {
            running: 0,
            threads: 0,
        };
        for &tid in &self.seen {
            if Some(tid) == self.exclude {
                continue;
            }
            let f = match self.open.entry(tid) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    match File::open(format!("/proc/{}/task/{tid}/stat", self.pid)) {
                        Ok(f) => v.insert(f),
                        Err(_) => continue, // exited between the listing and the open
                    }
                }
            };
            let state = match f.read_at(&mut buf, 0) {
                Ok(n) if n > 0 => parse_state(&buf[..n]),
                _ => None,
            };
            let Some(state) = state else {
                // Gone: list again next time.
                self.open.remove(&tid);
                self.listed_nlink = None;
                continue;
            };
            c.threads += 1;
            if state == b'R' {
                c.running += 1;
            }
        }
        Some(c)
    }
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
    fn schedstat_fields() {
        assert_eq!(parse_schedstat(b"123456 789 10\n"), Some((123456, 789)));
        assert_eq!(parse_schedstat(b"123456"), None);
        assert_eq!(parse_schedstat(b""), None);
        assert_eq!(parse_schedstat(b"x 1 2"), None);
    }

    #[test]
    fn a_process_that_starts_spinning_is_seen_running_on_reread() {
        // A child of its own (this test binary runs other tests' threads beside this one):
        // asleep first, then spinning; the same open files must show the change.
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", "sleep 0.4; while :; do :; done"])
            .spawn()
            .expect("/bin/sh");
        let mut p = ProcThreads::open(child.id()).expect("child's /proc");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let asleep = p.count().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(700));
        let mut spinning = Vec::new();
        for _ in 0..10 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            spinning.push(p.count().unwrap());
        }
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            asleep,
            Count {
                running: 0,
                threads: 1
            }
        );
        // Spinning: in state R (on a CPU or queued) at every read.
        assert!(
            spinning.iter().all(|c| *c
                == Count {
                    running: 1,
                    threads: 1
                }),
            "{spinning:?}"
        );
        assert!(p.count().is_none(), "a reaped process still counted");
    }

    #[test]
    fn a_missing_process_is_none() {
        assert!(ProcThreads::open(u32::MAX - 1).is_none());
    }
}
