//! One interrupt handler for every command that changes or watches a server: SIGINT, SIGTERM,
//! SIGHUP (a dropped SSH session) and SIGQUIT all ask the command to stop, put back what it
//! changed (the message promises that only when the journal holds changes) and exit 130. A
//! second signal exits at once after printing the statements still needed (the journal records
//! stay open for `spinscope restore`). If the first stop does not finish within [`GRACE`] (a
//! hung server), the same happens without a second signal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::error::EXIT_INTERRUPTED;

/// How long the first signal waits for a clean stop before exiting anyway.
pub const GRACE: Duration = Duration::from_secs(15);

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGQUIT => "SIGQUIT",
        _ => "a signal",
    }
}

/// Print what is still changed and exit 130 now, leaving the journal open.
fn exit_now(why: &str) -> ! {
    exit_with(why, EXIT_INTERRUPTED)
}

static QUERY_TIMEOUT_S: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(60);

/// The connections' `--query-timeout`, for [`step_deadline`].
pub fn set_query_timeout(d: Duration) {
    QUERY_TIMEOUT_S.store(d.as_secs().max(1), Ordering::Relaxed);
}

/// How long after a step's planned end its load and checks may still take before the server
/// counts as hung: the clients' reads time out (one query timeout), the checks around the
/// step time out (another), plus 10 s.
pub fn step_deadline() -> Duration {
    Duration::from_secs(2 * QUERY_TIMEOUT_S.load(Ordering::Relaxed) + 10)
}

/// A deadline that exits the process (code 3, the journal left open with the statements still
/// needed printed) unless dropped first: the last resort for a server that stops answering
/// where no timeout reaches (a full listen backlog, a client thread stuck in connect).
pub struct Deadline {
    cancel: Arc<AtomicBool>,
}

impl Deadline {
    pub fn arm(after: Duration, why: String) -> Deadline {
        Deadline::then(after, move || exit_with(&why, crate::error::EXIT_RUNTIME))
    }

    /// Not an exit: `line` printed on stderr after `after` unless dropped first (a wait that
    /// lasts longer than it should is said while it lasts).
    pub fn note(after: Duration, line: String) -> Deadline {
        Deadline::then(after, move || eprintln!("{line}"))
    }

    fn then(after: Duration, action: impl FnOnce() + Send + 'static) -> Deadline {
        let cancel = Arc::new(AtomicBool::new(false));
        let c = Arc::clone(&cancel);
        let _ = std::thread::Builder::new()
            .name("deadline".into())
            .spawn(move || {
                let end = std::time::Instant::now() + after;
                while std::time::Instant::now() < end {
                    if c.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                if !c.load(Ordering::SeqCst) {
                    action();
                }
            });
        Deadline { cancel }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::SeqCst);
    }
}

fn exit_with(why: &str, code: i32) -> ! {
    let pending = crate::journal::pending_statements();
    if pending.is_empty() {
        eprintln!("spinscope: {why}; exiting");
    } else {
        eprintln!(
            "spinscope: {why}; exiting with the server still changed. Run `spinscope restore` with the same connection flags, or these statements:\n{}",
            pending
                .iter()
                .map(|s| format!("  {s};"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    std::process::exit(code)
}

/// What the first signal prints: only a command with changes registered in the journal (a
/// sweep's or doctor's settings) has something to put back; lab and probe change nothing.
fn first_signal_line(sig: &str, changed: bool) -> String {
    if changed {
        format!("spinscope: {sig}: stopping and putting back what was changed (press Ctrl-C again to exit at once)")
    } else {
        format!("spinscope: {sig}: stopping (press Ctrl-C again to exit at once)")
    }
}

/// A terminal that hung up makes every write fail; send output to /dev/null instead so the
/// restore still runs (its outcome is in the journal).
fn detach_from_dead_terminal() {
    // SAFETY: plain fd syscalls on this process's own descriptors.
    unsafe {
        if libc::isatty(2) == 1 || libc::isatty(1) == 1 {
            let fd = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            if fd >= 0 {
                if libc::isatty(1) == 1 {
                    libc::dup2(fd, 1);
                }
                if libc::isatty(2) == 1 {
                    libc::dup2(fd, 2);
                }
                libc::close(fd);
            }
        }
    }
}

/// Install the handler once; returns the stop flag every loop polls.
pub fn install() -> crate::Result<Arc<AtomicBool>> {
    if let Some(f) = FLAG.get() {
        return Ok(Arc::clone(f));
    }
    let flag = Arc::new(AtomicBool::new(false));
    let mut signals = signal_hook::iterator::Signals::new([
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
    ])
    .map_err(|e| crate::Error::runtime(format!("installing the signal handler: {e}")))?;
    let f2 = Arc::clone(&flag);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut seen = 0;
            for sig in signals.forever() {
                seen += 1;
                if sig == libc::SIGHUP {
                    detach_from_dead_terminal();
                }
                if seen > 1 {
                    exit_now(&format!("{} again", name(sig)));
                }
                f2.store(true, Ordering::SeqCst);
                let changed = !crate::journal::pending_statements().is_empty();
                eprintln!("{}", first_signal_line(name(sig), changed));
                std::thread::spawn(|| {
                    std::thread::sleep(GRACE);
                    exit_now(&format!(
                        "no clean stop within {} s (is the server hanging?)",
                        GRACE.as_secs()
                    ));
                });
            }
        })
        .map_err(|e| crate::Error::runtime(format!("starting the signal thread: {e}")))?;
    let _ = FLAG.set(Arc::clone(&flag));
    Ok(FLAG.get().map(Arc::clone).unwrap_or(flag))
}

/// Whether a stop was requested (false before `install`).
pub fn stopped() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// Sleep up to `d`, waking early (within 50 ms) when `stop` is set. Returns false if stopped.
pub fn sleep(d: Duration, stop: &AtomicBool) -> bool {
    let end = std::time::Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_signal_line_mentions_restoring_only_when_something_changed() {
        let plain = first_signal_line("SIGINT", false);
        assert!(plain.starts_with("spinscope: SIGINT: stopping"), "{plain}");
        assert!(!plain.contains("putting back"), "{plain}");
        let restoring = first_signal_line("SIGTERM", true);
        assert!(restoring.contains("SIGTERM"), "{restoring}");
        assert!(
            restoring.contains("putting back what was changed"),
            "{restoring}"
        );
    }

    #[test]
    fn sleep_wakes_on_stop() {
        let stop = AtomicBool::new(true);
        let t = std::time::Instant::now();
        assert!(!sleep(Duration::from_secs(100), &stop));
        assert!(t.elapsed() < Duration::from_secs(1));
        let go = AtomicBool::new(false);
        assert!(sleep(Duration::from_millis(20), &go));
    }
}
