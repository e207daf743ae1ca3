//! aarch64: the virtual counter CNTVCT_EL0 read behind ISB, around unrolled `isb sy` or `yield`.

use core::arch::asm;

use super::UNROLL;
use crate::spin::cpus::Hint;

// The asm blocks below repeat the hint 32 times; keep UNROLL in step.
const _: () = assert!(UNROLL == 32);

/// ISB before the read keeps it from being taken early (the counter read is not ordered).
#[inline(always)]
pub fn ts_begin() -> u64 {
    let t: u64;
    // SAFETY: reading CNTVCT_EL0 is permitted at EL0 on Linux (CNTKCTL_EL1.EL0VCTEN); ISB has
    // no memory effects.
    unsafe {
        asm!("isb", "mrs {t}, cntvct_el0", t = out(reg) t, options(nomem, nostack, preserves_flags))
    };
    t
}

/// ISB before the read waits for the hints to retire; ISB after keeps later work out.
#[inline(always)]
pub fn ts_end() -> u64 {
    let t: u64;
    // SAFETY: as in ts_begin.
    unsafe {
        asm!("isb", "mrs {t}, cntvct_el0", "isb", t = out(reg) t, options(nomem, nostack, preserves_flags))
    };
    t
}

/// A plain CNTVCT_EL0 read (no ISB): cheap enough for the lab's hot loops.
#[inline(always)]
pub fn ticks_plain() -> u64 {
    let t: u64;
    // SAFETY: as in ts_begin.
    unsafe {
        asm!("mrs {t}, cntvct_el0", t = out(reg) t, options(nomem, nostack, preserves_flags))
    };
    t
}

/// Execute one spin hint: `isb sy`, `yield`, or for `Hint::None` an empty asm statement the
/// compiler must keep (MariaDB's relax off x86 is a compiler barrier only, REFERENCE.md §7).
#[inline(always)]
pub fn relax(hint: Hint) {
    // SAFETY: ISB, YIELD and an empty statement have no memory or flag effects.
    unsafe {
        match hint {
            Hint::Yield => asm!("yield", options(nomem, nostack, preserves_flags)),
            Hint::None => asm!("", options(nomem, nostack, preserves_flags)),
            _ => asm!("isb sy", options(nomem, nostack, preserves_flags)),
        }
    }
}

pub fn cntfrq_hz() -> u64 {
    let f: u64;
    // SAFETY: CNTFRQ_EL0 is readable at EL0.
    unsafe {
        asm!("mrs {f}, cntfrq_el0", f = out(reg) f, options(nomem, nostack, preserves_flags))
    };
    f
}

#[inline(always)]
fn isb32() {
    // SAFETY: ISB flushes the pipeline; no memory or flag effects.
    unsafe {
        asm!(
            ".rept 32",
            "isb sy",
            ".endr",
            options(nomem, nostack, preserves_flags)
        )
    }
}

#[inline(always)]
fn yield32() {
    // SAFETY: YIELD is a hint; no memory or flag effects.
    unsafe {
        asm!(
            ".rept 32",
            "yield",
            ".endr",
            options(nomem, nostack, preserves_flags)
        )
    }
}

#[inline(never)]
fn isb_batch(iters: u32) -> u64 {
    let t0 = ts_begin();
    for _ in 0..iters {
        isb32();
    }
    ts_end().wrapping_sub(t0)
}

#[inline(never)]
fn yield_batch(iters: u32) -> u64 {
    let t0 = ts_begin();
    for _ in 0..iters {
        yield32();
    }
    ts_end().wrapping_sub(t0)
}

/// `iters` x 64 dependent integer adds (one core cycle each) between two serialized reads:
/// the core's clock against the counter.
#[inline(never)]
pub fn add_chain_ticks(iters: u32) -> u64 {
    let mut x: u64 = 0;
    let one: u64 = std::hint::black_box(1);
    let t0 = ts_begin();
    for _ in 0..iters {
        // SAFETY: register-only arithmetic.
        unsafe {
            asm!(
                ".rept 64",
                "add {x}, {x}, {one}",
                ".endr",
                x = inout(reg) x,
                one = in(reg) one,
                options(nomem, nostack, preserves_flags)
            )
        }
    }
    let t1 = ts_end();
    std::hint::black_box(x);
    t1.wrapping_sub(t0)
}

pub fn timed_batch(hint: Hint, iters: u32) -> Option<u64> {
    match hint {
        Hint::Isb => Some(isb_batch(iters)),
        Hint::Yield => Some(yield_batch(iters)),
        _ => None,
    }
}

pub fn run_hints(hint: Hint, iters: u32) {
    match hint {
        Hint::Isb => (0..iters).for_each(|_| isb32()),
        Hint::Yield => (0..iters).for_each(|_| yield32()),
        _ => {}
    }
}
