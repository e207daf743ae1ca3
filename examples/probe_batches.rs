//! How many probe batches buy which confidence on this machine: one long series of 20 us PAUSE
//! batches (after the probe's warm-up), then for several batch counts n
//! - `sampling`: the 95% range of the median of n batches drawn at random from the whole series
//!   (what the batch count alone buys if the clock did not move);
//! - `drift`: the range of the medians of consecutive blocks of n batches (what n buys when the
//!   clock moves, as it does between a probe and a measurement taken before or after it).
//!
//! Both in percent of the series median. Evidence for docs/PERFORMANCE.md. Usage:
//! `cargo run --release --example probe_batches [BATCHES [WARMUP_MS [BATCH_NS [GAP_NS]]]]`
//! (defaults 20000, the probe's 15 ms, 20 us batches as before issue 25 and the probe's gap;
//! `20000 15 1000` times the probe's present 1 us batches). The first ten blocks of 100 batches (2 ms each) are printed
//! too, to see what the warm-up removes.

use spinscope::cpu::{arch, calc, measure};

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let total: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let warmup_ms: f64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(15.0);
    let batch_ns: f64 = std::env::args()
        .nth(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000.0);
    let gap_ns: f64 = std::env::args()
        .nth(4)
        .and_then(|s| s.parse().ok())
        .unwrap_or(measure::BATCH_GAP_NS);
    let Some((ghz, _)) = measure::calibrate(std::time::Duration::from_millis(3)) else {
        eprintln!("probe_batches: cannot calibrate the counter");
        std::process::exit(3);
    };
    if let Some(cpu) = measure::current_cpu() {
        let _ = measure::pin_to(cpu);
    }
    let hint = arch::primary_hint();
    let Some(s) = measure::time_hint(
        hint,
        total,
        batch_ns * ghz,
        (warmup_ms * 1e6 * ghz) as u64,
        (gap_ns * ghz) as u64,
    ) else {
        eprintln!("probe_batches: timing spin hints is not supported here");
        std::process::exit(3);
    };
    let oh = calc::overhead(&s.overhead);
    let per = calc::per_hint(&s.batches, oh, s.iters as u64 * arch::UNROLL as u64);
    let whole = median(&mut per.clone());
    println!(
        "{} batches, median {whole:.3} ticks per {} ({ghz:.4} GHz)",
        per.len(),
        hint.name()
    );
    let first: Vec<String> = per
        .chunks_exact(100)
        .take(10)
        .map(|c| format!("{:+.1}", (median(&mut c.to_vec()) - whole) / whole * 100.0))
        .collect();
    println!(
        "first 10 blocks of 100 batches after a {warmup_ms} ms warm-up, % from the median: {}",
        first.join(" ")
    );
    println!("    n   sampling 95% range (%)   drift: block medians min..max (%)  blocks");
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for n in [250usize, 500, 1000, 1500, 2000, 4000] {
        if n > per.len() {
            break;
        }
        let mut meds: Vec<f64> = (0..400)
            .map(|_| {
                let mut v: Vec<f64> = (0..n)
                    .map(|_| per[(rnd() % per.len() as u64) as usize])
                    .collect();
                median(&mut v)
            })
            .collect();
        meds.sort_by(|a, b| a.total_cmp(b));
        let (lo, hi) = (meds[10], meds[389]);
        let blocks: Vec<f64> = per
            .chunks_exact(n)
            .map(|c| median(&mut c.to_vec()))
            .collect();
        let (bmin, bmax) = blocks
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        let pct = |x: f64| (x - whole) / whole * 100.0;
        println!(
            "{n:5}   {:+.2} .. {:+.2}              {:+.2} .. {:+.2}                {}",
            pct(lo),
            pct(hi),
            pct(bmin),
            pct(bmax),
            blocks.len()
        );
    }
}
