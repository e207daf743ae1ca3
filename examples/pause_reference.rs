//! An independent PAUSE measurement to check `probe` against (docs/PERFORMANCE.md, issue 17):
//! a plain RDTSC loop around 20,000 PAUSEs, 40 batches, their median in TSC ticks per PAUSE.
//! It shares no code with the probe (no serialized reads, no unrolled batches, no warm-up).
//! Usage: `cargo run --release --example pause_reference [BATCHES [PAUSES]]`. x86_64 only.

fn main() {
    let mut args = std::env::args().skip(1);
    let batches: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(40);
    let pauses: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_pause, _rdtsc};
        let mut v: Vec<f64> = (0..batches)
            .map(|_| {
                // SAFETY: RDTSC and PAUSE have no preconditions on x86_64.
                unsafe {
                    let t0 = _rdtsc();
                    for _ in 0..pauses {
                        _mm_pause();
                    }
                    (_rdtsc() - t0) as f64 / pauses as f64
                }
            })
            .collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        println!("{median:.3}");
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (batches, pauses);
        eprintln!("pause_reference: x86_64 only");
        std::process::exit(3);
    }
}
