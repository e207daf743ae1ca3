//! x86_64: `lfence; rdtsc` / `rdtscp; lfence` around unrolled `pause`, MariaDB's measurement,
//! CPUID leaf 0x40000000.

use core::arch::asm;
use core::arch::x86_64::{__cpuid, __rdtscp, _mm_lfence, _rdtsc};

use super::UNROLL;
use crate::spin::cpus::Hint;

// The asm blocks below repeat `pause` 32 times; keep UNROLL in step.
const _: () = assert!(UNROLL == 32);

/// Start-of-interval read: LFENCE keeps RDTSC from running before earlier instructions, the
/// second LFENCE keeps later ones from starting before it.
#[inline(always)]
pub fn ts_begin() -> u64 {
    // SAFETY: LFENCE and RDTSC have no memory effects; SSE2 is part of the x86_64 baseline.
    #[allow(unused_unsafe)]
    unsafe {
        _mm_lfence();
        let t = _rdtsc();
        _mm_lfence();
        t
    }
}

/// End-of-interval read: RDTSCP waits for earlier instructions; LFENCE keeps later ones out.
#[inline(always)]
pub fn ts_end() -> u64 {
    let mut aux = 0u32;
    // SAFETY: `aux` is a valid writable u32; RDTSCP is present on every x86_64 CPU Linux runs
    // the probe on (flag `rdtscp`; checked by the caller's report of cpu flags).
    #[allow(unused_unsafe)]
    unsafe {
        let t = __rdtscp(&mut aux);
        _mm_lfence();
        t
    }
}

/// A plain RDTSC, not serialized: cheap enough for the lab's hot loops, where reordering by a
/// few instructions does not matter.
#[inline(always)]
pub fn ticks_plain() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86_64.
    #[allow(unused_unsafe)]
    unsafe {
        _rdtsc()
    }
}

/// Execute one spin hint. x86 has only PAUSE; `Hint::None` is an empty asm statement the
/// compiler must keep (a loop of them costs about a cycle each, like MariaDB's barrier).
#[inline(always)]
pub fn relax(hint: Hint) {
    match hint {
        // SAFETY: an empty asm statement has no effects.
        Hint::None => unsafe { asm!("", options(nomem, nostack, preserves_flags)) },
        // SAFETY: PAUSE only hints the core.
        _ => unsafe { asm!("pause", options(nomem, nostack, preserves_flags)) },
    }
}

#[inline(always)]
fn pause32() {
    // SAFETY: PAUSE only hints the core; no memory, stack or flag effects.
    unsafe {
        asm!(
            ".rept 32",
            "pause",
            ".endr",
            options(nomem, nostack, preserves_flags)
        )
    }
}

#[inline(never)]
fn pause_batch(iters: u32) -> u64 {
    let t0 = ts_begin();
    for _ in 0..iters {
        pause32();
    }
    let t1 = ts_end();
    t1.wrapping_sub(t0)
}

/// `iters` x 64 dependent register-register adds (one core cycle each) between two serialized
/// reads: the core's clock against the counter, whatever a hypervisor or a power limit set it
/// to. Register operands on purpose: Golden Cove (Sapphire Rapids) and later eliminate chains
/// of adds of small immediates at rename (measured here: 5.6 "adds" per cycle).
#[inline(never)]
pub fn add_chain_ticks(iters: u32) -> u64 {
    let mut x: u64 = 0;
    let one: u64 = std::hint::black_box(1);
    let t0 = ts_begin();
    for _ in 0..iters {
        // SAFETY: register-only arithmetic; flags are clobbered (not declared preserved).
        unsafe {
            asm!(
                ".rept 64",
                "add {x}, {one}",
                ".endr",
                x = inout(reg) x,
                one = in(reg) one,
                options(nomem, nostack)
            )
        }
    }
    let t1 = ts_end();
    std::hint::black_box(x);
    t1.wrapping_sub(t0)
}

pub fn timed_batch(hint: Hint, iters: u32) -> Option<u64> {
    match hint {
        Hint::Pause => Some(pause_batch(iters)),
        _ => None,
    }
}

pub fn run_hints(hint: Hint, iters: u32) {
    if hint == Hint::Pause {
        for _ in 0..iters {
            pause32();
        }
    }
}

#[inline(always)]
fn pause16_times(scale: u32) {
    for _ in 0..scale {
        // SAFETY: PAUSE only hints the core.
        unsafe {
            asm!(
                ".rept 16",
                "pause",
                ".endr",
                options(nomem, nostack, preserves_flags)
            )
        }
    }
}

/// As `my_cpu_init()` in MariaDB's mysys/my_cpu.c: `my_timer_cycles()` (a plain RDTSC), 16
/// PAUSEs, RDTSC, 16 PAUSEs, RDTSC. With `scale` K > 1 each PAUSE is executed K times, as the
/// lab emulates a slower hint.
#[inline(never)]
pub fn mariadb_startup_sample(scale: u32) -> (u64, u64) {
    let t0 = ticks_plain();
    pause16_times(scale);
    let t1 = ticks_plain();
    pause16_times(scale);
    let t2 = ticks_plain();
    (t1.wrapping_sub(t0), t2.wrapping_sub(t1))
}

pub fn hypervisor_cpuid_vendor() -> Option<String> {
    // SAFETY: CPUID is available on every x86_64 CPU; leaves 1 and 0x40000000 only read.
    #[allow(unused_unsafe)]
    let (leaf1, hv) = unsafe { (__cpuid(1), __cpuid(0x4000_0000)) };
    // CPUID.1:ECX bit 31 is reserved for hypervisors; leaf 0x40000000 is only meaningful then.
    if leaf1.ecx & (1 << 31) == 0 {
        return None;
    }
    let mut bytes = Vec::with_capacity(12);
    for r in [hv.ebx, hv.ecx, hv.edx] {
        bytes.extend_from_slice(&r.to_le_bytes());
    }
    let s: String = bytes
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as char)
        .collect();
    Some(s)
}
