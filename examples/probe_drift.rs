//! How the spin hint's latency drifts during one long measurement: the medians of successive
//! blocks of 500 batches (20 us each), after the probe's usual 30 ms warm-up. Evidence for
//! docs/PERFORMANCE.md (run-to-run spread of `probe`). Usage:
//! `cargo run --release --example probe_drift [BATCHES]`.

use spinscope::cpu::{arch, calc, measure};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let Some((ghz, _)) = measure::calibrate(std::time::Duration::from_millis(25)) else {
        eprintln!("probe_drift: cannot calibrate the counter");
        std::process::exit(3);
    };
    if let Some(cpu) = measure::current_cpu() {
        let _ = measure::pin_to(cpu);
    }
    let hint = arch::primary_hint();
    let Some(s) = measure::time_hint(hint, n, 20_000.0 * ghz, (30e6 * ghz) as u64, 0) else {
        eprintln!("probe_drift: timing spin hints is not supported here");
        std::process::exit(3);
    };
    let oh = calc::overhead(&s.overhead);
    let per = calc::per_hint(&s.batches, oh, s.iters as u64 * arch::UNROLL as u64);
    println!(
        "block  p10  median  p90   (ticks per {}, {ghz:.4} GHz)",
        hint.name()
    );
    for (i, ch) in per.chunks(500).enumerate() {
        let mut v = ch.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let q = |f: f64| v[((v.len() - 1) as f64 * f) as usize];
        println!("{i:5}  {:.2}  {:.2}  {:.2}", q(0.1), q(0.5), q(0.9));
    }
}
