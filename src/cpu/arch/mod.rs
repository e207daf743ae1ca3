//! Per-architecture primitives: serialized reads of the timestamp counter, batches of unrolled
//! spin hints timed between them, MariaDB's startup measurement, and the hypervisor CPUID leaf.
//!
//! Everything here touches the hardware; the arithmetic around it lives in the parent module's
//! pure functions. Other architectures compile but report that probing is unsupported.

use crate::spin::cpus::Hint;

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "x86_64")]
mod x86_64;

#[cfg(target_arch = "aarch64")]
use aarch64 as imp;
#[cfg(target_arch = "x86_64")]
use x86_64 as imp;

/// Hints executed per loop iteration inside a timed batch (the loop is unrolled this far).
pub const UNROLL: u32 = 32;

/// True where spin hints can be timed (x86_64 and aarch64).
pub const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// The hint servers use on this architecture (PAUSE on x86, ISB on aarch64: MySQL's UT_RELAX_CPU).
pub fn primary_hint() -> Hint {
    if cfg!(target_arch = "aarch64") {
        Hint::Isb
    } else {
        Hint::Pause
    }
}

/// Every hint worth timing here: aarch64 also times YIELD (Linux cpu_relax, Go procyield).
pub fn hints_to_measure() -> Vec<Hint> {
    if cfg!(target_arch = "aarch64") {
        vec![Hint::Isb, Hint::Yield]
    } else {
        vec![Hint::Pause]
    }
}

/// Name of the counter the "ticks" come from.
pub fn counter_name() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "CNTVCT_EL0"
    } else {
        "TSC"
    }
}

/// Read the counter, serialized so earlier instructions finish before it is read.
#[inline(always)]
pub fn ticks_now() -> u64 {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        imp::ts_begin()
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        0
    }
}

/// Read the counter without serialization (the lab's hot loops). Where hints cannot be timed,
/// nanoseconds since the first call stand in for ticks (rate 1 per ns).
#[inline(always)]
pub fn ticks_fast() -> u64 {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        imp::ticks_plain()
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        ORIGIN
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
}

/// Execute one spin hint as given (`Hint::None`: no instruction, only a compiler barrier).
#[inline(always)]
pub fn relax(hint: Hint) {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    imp::relax(hint);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    if hint != Hint::None {
        core::hint::spin_loop();
    }
}

/// Time `iters * UNROLL` hints between two serialized counter reads; returns elapsed ticks.
/// `iters = 0` measures the cost of the two reads themselves. None for hints this
/// architecture does not have.
pub fn timed_batch(hint: Hint, iters: u32) -> Option<u64> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        imp::timed_batch(hint, iters)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (hint, iters);
        None
    }
}

/// Dependent one-cycle adds per iteration of [`add_chain_ticks`].
pub const ADD_CHAIN_UNROLL: u32 = 64;

/// Time `iters * ADD_CHAIN_UNROLL` dependent integer adds between two serialized counter
/// reads (core cycles against the counter: the core clock). None where hints cannot be timed.
pub fn add_chain_ticks(iters: u32) -> Option<u64> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        Some(imp::add_chain_ticks(iters))
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = iters;
        None
    }
}

/// Run `iters * UNROLL` hints without timing them (used between hardware-counter reads).
pub fn run_hints(hint: Hint, iters: u32) {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    imp::run_hints(hint, iters);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = (hint, iters);
}

/// MariaDB's `my_cpu_init()` measurement: plain counter reads around 16 unrolled PAUSEs, twice
/// (each PAUSE executed `scale` times when the lab emulates a slower hint). Returns the two
/// tick deltas; None off x86 (MariaDB does not measure there).
pub fn mariadb_startup_sample(scale: u32) -> Option<(u64, u64)> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(imp::mariadb_startup_sample(scale.max(1)))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = scale;
        None
    }
}

/// The hypervisor vendor string of CPUID leaf 0x40000000 (e.g. "KVMKVMKVM"), when CPUID.1
/// says a hypervisor is present. None off x86 or on bare metal.
pub fn hypervisor_cpuid_vendor() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        imp::hypervisor_cpuid_vendor()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// The counter's nominal frequency in Hz where the architecture publishes it (CNTFRQ_EL0).
pub fn counter_nominal_hz() -> Option<u64> {
    #[cfg(target_arch = "aarch64")]
    {
        Some(imp::cntfrq_hz())
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        None
    }
}

/// Keep a core busy with integer work until `stop` is set (the SMT-sibling load). Not a spin
/// hint: a hint would hand the core's resources back to the measured sibling.
pub fn busy_until(stop: &std::sync::atomic::AtomicBool) {
    use std::sync::atomic::Ordering;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1024 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        x = std::hint::black_box(x);
    }
}
