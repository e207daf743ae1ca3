//! A futex-backed lock word (Drepper's "mutex3": 0 free, 1 locked, 2 locked with sleepers) and
//! the raw FUTEX_WAIT_PRIVATE / FUTEX_WAKE_PRIVATE calls. Every spinning latch of the lab ends
//! in `wait_lock`, as MySQL ends in an OS event and MariaDB 10.6+ in a futex (docs/REFERENCE.md §1).

use std::sync::atomic::{AtomicU32, Ordering};

/// Sleep while `*word == expected` (spurious wake-ups are fine: callers re-check).
pub fn futex_wait(word: &AtomicU32, expected: u32) {
    #[cfg(target_os = "linux")]
    // SAFETY: `word` is a live, aligned u32 for the duration of the call; a null timeout means
    // "no timeout"; the kernel only reads the word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (word, expected);
        std::thread::yield_now();
    }
}

/// Wake up to `n` threads sleeping on `word`.
pub fn futex_wake(word: &AtomicU32, n: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE only uses its address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (word, n);
}

const FREE: u32 = 0;
const LOCKED: u32 = 1;
/// Locked and maybe someone sleeps: the unlocker must wake one.
const CONTENDED: u32 = 2;

/// The lock word shared by the spin-then-sleep latches.
#[derive(Debug, Default)]
pub struct FutexWord {
    state: AtomicU32,
}

impl FutexWord {
    pub const fn new() -> Self {
        FutexWord {
            state: AtomicU32::new(FREE),
        }
    }

    /// The "test" of test-and-test-and-set: a plain load, no cache-line ownership taken.
    #[inline]
    pub fn is_free(&self) -> bool {
        self.state.load(Ordering::Relaxed) == FREE
    }

    /// One compare-and-swap attempt. A thread that has slept once must take the lock as
    /// CONTENDED (`after_sleep`), otherwise a wake-up for other sleepers could be lost.
    #[inline]
    pub fn try_lock(&self, after_sleep: bool) -> bool {
        let v = if after_sleep { CONTENDED } else { LOCKED };
        self.state
            .compare_exchange(FREE, v, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Mark the word contended and sleep once unless that acquired it. Returns true when the
    /// lock was acquired (the word was free), false after a wake-up (caller retries).
    pub fn sleep_once(&self) -> bool {
        if self.state.swap(CONTENDED, Ordering::Acquire) == FREE {
            return true;
        }
        futex_wait(&self.state, CONTENDED);
        false
    }

    /// Drepper's wait loop: sleep until acquired; returns the number of futex waits.
    pub fn wait_lock(&self) -> u64 {
        let mut waits = 0;
        while !self.sleep_once() {
            waits += 1;
        }
        waits
    }

    /// True once a waiter has marked the word contended (it is about to sleep or sleeps): lets
    /// a test release the lock only after the waiter has given up spinning, with no sleep.
    #[cfg(test)]
    pub fn has_sleepers(&self) -> bool {
        self.state.load(Ordering::Acquire) == CONTENDED
    }

    /// Release; wake one sleeper if anyone may sleep.
    #[inline]
    pub fn unlock(&self) {
        if self.state.swap(FREE, Ordering::Release) == CONTENDED {
            futex_wake(&self.state, 1);
        }
    }
}
