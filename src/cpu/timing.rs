//! Timing shared by the probe and the lab: the counter read in hot loops, its rate (calibrated
//! once per process by [`measure::calibrate`]), tick/ns conversions, busy waiting, the cost of
//! one read, and spin hints executed as a given server would execute them.
//!
//! The serialized reads and unrolled batches the probe times live in [`arch`]; this module is
//! for code that needs cheap reads and a rate (the lab's latches and harness).

use std::sync::OnceLock;
use std::time::Duration;

use super::{arch, calc, measure};
use crate::spin::cpus::Hint;
use crate::spin::model::Arch;

/// Read the counter (TSC, CNTVCT_EL0; nanoseconds elsewhere) without serialization.
#[inline(always)]
pub fn ticks() -> u64 {
    arch::ticks_fast()
}

/// True when [`ticks`] reads a hardware counter (x86_64 TSC, aarch64 CNTVCT_EL0).
pub const HAS_COUNTER: bool = arch::SUPPORTED;

/// Ticks per nanosecond, calibrated once per process against CLOCK_MONOTONIC_RAW (7 ms
/// windows, median; the probe's own calibration). 1.0 where the ticks are nanoseconds.
pub fn ticks_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        if !HAS_COUNTER {
            return 1.0;
        }
        measure::calibrate(Duration::from_millis(7))
            .map(|(ghz, _)| ghz)
            .or_else(|| arch::counter_nominal_hz().map(|hz| hz as f64 / 1e9))
            .filter(|g| g.is_finite() && *g > 0.0)
            .unwrap_or(1.0)
    })
}

/// The architecture this program runs on, as the spin model names it (x86_64 elsewhere).
pub fn host_arch() -> Arch {
    if cfg!(target_arch = "aarch64") {
        Arch::Aarch64
    } else {
        Arch::X86_64
    }
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

/// Execute `hint` `scale` times: one emulated hint of a CPU whose hint is `scale` times slower.
#[inline(always)]
pub fn relax_scaled(hint: Hint, scale: u32) {
    for _ in 0..scale {
        arch::relax(hint);
    }
}

/// Reads per sample of [`timer_cost_ns`]: enough that a coarse counter (aarch64's ticks at
/// tens of MHz) advances within one sample.
const READS_PER_SAMPLE: u64 = 64;

/// The cost of one [`ticks`] read in ns: the median over 101 samples of 64 back-to-back reads.
/// Positive on any counter that advances.
pub fn timer_cost_ns() -> f64 {
    let mut v: Vec<u64> = (0..101)
        .map(|_| {
            let a = ticks();
            let mut last = a;
            for _ in 0..READS_PER_SAMPLE {
                last = std::hint::black_box(ticks());
            }
            last.wrapping_sub(a)
        })
        .collect();
    v.sort_unstable();
    ticks_to_ns(v[v.len() / 2]) / READS_PER_SAMPLE as f64
}

/// Latency of one unscaled `hint` in ns, measured the probe's way (serialized reads around
/// unrolled batches of about 1 us with gaps, timer cost subtracted, the lower quartile of the
/// medians of groups without a context switch) over 400 batches after a 5 ms warm-up. None
/// where the hint cannot be timed.
pub fn hint_ns(hint: Hint) -> Option<f64> {
    let ghz = ticks_per_ns();
    let gap = (measure::BATCH_GAP_NS * ghz).ceil() as u64;
    let s = measure::time_hint(hint, 400, 1_000.0 * ghz, (5e6 * ghz) as u64, gap)?;
    let oh = calc::overhead(&s.overhead);
    let hints = s.iters as u64 * arch::UNROLL as u64;
    calc::series_figure(&s.groups, &s.pair_clocks, oh, hints).map(|f| f.ticks / ghz)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn rate_is_plausible_and_conversions_round_trip() {
        let r = ticks_per_ns();
        assert!(r > 0.001 && r < 10.0, "ticks/ns {r}");
        let t = ns_to_ticks(1_000_000);
        assert!((ticks_to_ns(t) - 1e6).abs() < 1e3);
    }

    #[test]
    fn busy_wait_waits() {
        let t0 = Instant::now();
        busy_ticks(ns_to_ticks(2_000_000));
        assert!(t0.elapsed() >= Duration::from_micros(1900));
    }

    /// The timer cost agrees with a wall-clock count of the same reads: a wrong rate, a counter
    /// that does not advance, or a cost computed per sample instead of per read all fail here.
    #[test]
    fn timer_cost_agrees_with_the_wall_clock() {
        let cost = timer_cost_ns();
        assert!(cost > 0.0 && cost < 2_000.0, "timer cost {cost} ns");
        // The best of 200 short runs (about 50 us each): a preemption only makes a run longer,
        // and on a busy host (stress-ng --cpu 4 on 2 CPUs) a long run is preempted every time.
        let n = 2_000u32;
        let wall = (0..200)
            .map(|_| {
                let t0 = Instant::now();
                for _ in 0..n {
                    std::hint::black_box(ticks());
                }
                t0.elapsed().as_nanos() as f64 / n as f64
            })
            .fold(f64::INFINITY, f64::min);
        let ratio = cost / wall;
        assert!(
            (0.33..=3.0).contains(&ratio),
            "timer cost {cost:.2} ns, wall clock {wall:.2} ns per read"
        );
    }

    /// The unscaled hint time matches the elapsed time of many hints read from the wall clock,
    /// and scaling by K makes the wall-clock time about K times longer.
    #[test]
    fn hint_time_matches_the_wall_clock_and_scales() {
        let hint = arch::primary_hint();
        if !arch::SUPPORTED {
            return;
        }
        let ns = hint_ns(hint).expect("the primary hint is timed on a supported architecture");
        let wall = |scale: u32, n: u32| {
            (0..200)
                .map(|_| {
                    let t0 = Instant::now();
                    for _ in 0..n {
                        relax_scaled(hint, scale);
                    }
                    t0.elapsed().as_nanos() as f64 / (n as f64 * scale as f64)
                })
                .fold(f64::INFINITY, f64::min)
        };
        // Short runs (about 25 us), best of 200: see the timer test above.
        let w1 = wall(1, 2_000);
        assert!(
            (0.5..=2.0).contains(&(ns / w1)),
            "hint {ns:.2} ns, wall clock {w1:.2} ns"
        );
        let w4 = wall(4, 500);
        assert!(
            (0.5..=2.0).contains(&(w4 / w1)),
            "per-hint time at scale 4 {w4:.2} ns vs {w1:.2} ns"
        );
    }

    /// `Hint::None` (MariaDB's relax on aarch64) executes no instruction: a long run of them
    /// takes a small fraction of the time of as many real hints.
    #[test]
    fn no_hint_executes_nothing() {
        if !arch::SUPPORTED {
            return;
        }
        let time = |h: Hint| {
            (0..5)
                .map(|_| {
                    let t0 = Instant::now();
                    relax_scaled(h, 200_000);
                    t0.elapsed()
                })
                .min()
                .unwrap()
        };
        let (none, real) = (time(Hint::None), time(arch::primary_hint()));
        assert!(
            none * 5 < real,
            "200k empty hints took {none:?}, 200k {} took {real:?}",
            arch::primary_hint().name()
        );
    }
}
