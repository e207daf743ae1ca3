//! Clocks and the spin hint of the lab: TSC reads, a brief TSC-rate calibration, the timer's
//! own cost, and `hint()` executed `K` times for `--pause-scale K`.
//!
//! The lab calibrates the TSC itself (against `CLOCK_MONOTONIC_RAW`) so it does not depend on
//! the `probe` module. On targets without a TSC the "ticks" are nanoseconds since a process-wide
//! origin, so the rate is exactly 1 tick per ns.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Read the time-stamp counter (x86_64) or the monotonic clock in ns elsewhere.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions and is available on every x86_64 CPU.
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// True when `ticks()` reads a hardware TSC.
pub const HAS_TSC: bool = cfg!(target_arch = "x86_64");

/// Nanoseconds from the raw monotonic clock (not slewed by NTP), falling back to `Instant`.
fn mono_raw_ns() -> u128 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_RAW exists on Linux >= 2.6.28.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
        if rc == 0 {
            return ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128;
        }
    }
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos()
}

/// One (ns, ticks) pair read as close together as this machine allows: the TSC is read on both
/// sides of the clock call, and of 5 tries the one with the narrowest bracket is kept. A
/// preemption between the two reads (common on a loaded machine) would otherwise shift one end
/// of a 7 ms window by a whole time slice and the rate by tens of percent.
fn paired_read() -> (u128, u64) {
    (0..5)
        .map(|_| {
            let a = ticks();
            let n = mono_raw_ns();
            let b = ticks();
            (b.wrapping_sub(a), n, a + b.wrapping_sub(a) / 2)
        })
        .min_by_key(|&(bracket, _, _)| bracket)
        .map(|(_, n, t)| (n, t))
        .expect("5 tries")
}

/// Ticks per nanosecond, calibrated once per process over about 20 ms (3 windows, median).
pub fn ticks_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        if !HAS_TSC {
            return 1.0;
        }
        let mut rates: Vec<f64> = (0..3)
            .map(|_| {
                let (n0, t0) = paired_read();
                let end = Instant::now() + Duration::from_millis(7);
                while Instant::now() < end {
                    std::hint::spin_loop();
                }
                let (n1, t1) = paired_read();
                t1.wrapping_sub(t0) as f64 / (n1 - n0).max(1) as f64
            })
            .collect();
        rates.sort_by(|a, b| a.total_cmp(b));
        rates[1]
    })
}

/// Convert nanoseconds to ticks with the calibrated rate.
pub fn ns_to_ticks(ns: u64) -> u64 {
    (ns as f64 * ticks_per_ns()).round() as u64
}

/// Convert ticks to nanoseconds with the calibrated rate.
pub fn ticks_to_ns(t: u64) -> f64 {
    t as f64 / ticks_per_ns()
}

/// Busy-wait (no hint, like real work) for `n` ticks.
#[inline]
pub fn busy_ticks(n: u64) {
    if n == 0 {
        return;
    }
    let start = ticks();
    while ticks().wrapping_sub(start) < n {}
}

/// One emulated spin hint: `core::hint::spin_loop()` (PAUSE on x86, ISB on aarch64) executed
/// `scale` times, emulating a CPU whose hint is `scale` times slower (spin-facts.md §1: K = 14
/// is Broadwell -> Skylake-SP).
#[inline(always)]
pub fn hint(scale: u32) {
    for _ in 0..scale {
        core::hint::spin_loop();
    }
}

/// The cost of one `ticks()` read, in ns: median of back-to-back differences. Subtract it
/// mentally from small acquire latencies; the lab reports it with every run.
pub fn timer_cost_ns() -> f64 {
    let mut d: Vec<u64> = (0..2001)
        .map(|_| {
            let a = ticks();
            let b = ticks();
            b.wrapping_sub(a)
        })
        .collect();
    d.sort_unstable();
    ticks_to_ns(d[d.len() / 2])
}

/// Latency of one spin hint (`scale` = 1), in ns: the best of 5 batches of 20,000.
pub fn hint_ns() -> f64 {
    (0..5)
        .map(|_| {
            let t0 = ticks();
            for _ in 0..20_000 {
                hint(1);
            }
            ticks_to_ns(ticks().wrapping_sub(t0)) / 20_000.0
        })
        .fold(f64::INFINITY, f64::min)
}

/// Ticks one hint takes, measured like MariaDB's `my_cpu_init()` (16 unrolled hints between
/// two TSC reads, best of two), used to pick `my_cpu_relax_multiplier` (spin-facts.md §2).
pub fn hint_ticks_like_mariadb(scale: u32) -> f64 {
    (0..2)
        .map(|_| {
            let t0 = ticks();
            for _ in 0..16 {
                hint(scale);
            }
            ticks().wrapping_sub(t0) as f64 / 16.0
        })
        .fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_plausible_and_conversions_round_trip() {
        let r = ticks_per_ns();
        assert!(r > 0.1 && r < 10.0, "ticks/ns {r}");
        let t = ns_to_ticks(1_000_000);
        assert!((ticks_to_ns(t) - 1e6).abs() < 1e3);
    }

    #[test]
    fn busy_wait_waits() {
        let t0 = Instant::now();
        busy_ticks(ns_to_ticks(2_000_000));
        assert!(t0.elapsed() >= Duration::from_micros(1900));
    }

    #[test]
    fn timer_and_hint_costs_are_positive() {
        assert!(timer_cost_ns() >= 0.0);
        assert!(hint_ns() > 0.0);
    }
}
