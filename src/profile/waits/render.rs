//! The terminal report of a `spinscope.profile-waits/1` document (pure).

use super::{site_name, WaitDoc};
use crate::units::table;

fn grid(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut t = table(header);
    for r in rows {
        t.add_row(r);
    }
    format!("{t}\n")
}

fn us(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{:.0} ms", x / 1000.0)
    } else {
        format!("{x:.0} us")
    }
}

/// The report: headline, totals, the sites' table, the advice, notes.
pub fn text(d: &WaitDoc) -> String {
    let mut s = String::new();
    let src = &d.source;
    s.push_str(&format!(
        "waits of {} (pid {}) over {:.1} s; off-CPU from {}\n",
        src.comm.as_deref().unwrap_or("the server"),
        src.pid,
        src.seconds,
        src.off_cpu_method
    ));
    if let Some(c) = &d.cost {
        s.push_str(&format!(
            "cost check: {:.0} switches/s and {:.1} CPUs idle before recording, expected cost \
             {:.1}% (bound {}%): {}\n",
            c.switches_per_s, c.idle_cpus, c.expected_cost_pct, c.bound_pct, c.decision
        ));
    }
    s.push_str(&format!("\n{}\n\n", d.headline));
    s.push_str(&format!(
        "on CPU: {:.2} CPU-s/s ({} samples), spinning {:.2} CPU-s/s ({} samples)\n",
        d.cpu_seconds_per_s, d.samples, d.spin_cpu_seconds_per_s, d.spin_samples
    ));
    s.push_str(&format!(
        "latch sleeps: {:.0}/s, {:.3} s/s ({} sleeps)\n",
        d.latch_sleeps_per_s, d.latch_sleep_seconds_per_s, d.latch_sleeps
    ));
    if !d.off_cpu.is_empty() {
        s.push_str("\noff CPU, by kind\n");
        let rows: Vec<Vec<String>> = d
            .off_cpu
            .iter()
            .map(|o| {
                vec![
                    o.kind.clone(),
                    format!("{:.0}", o.per_s),
                    format!("{:.3}", o.seconds_per_s),
                ]
            })
            .collect();
        s.push_str(&grid(&["kind", "per s", "s/s"], rows));
    }
    if !d.sites.is_empty() {
        s.push_str("\nlatch sites (spin CPU beside sleeps)\n");
        let rows: Vec<Vec<String>> = d
            .sites
            .iter()
            .map(|x| {
                let l = x.sleep_lengths.as_ref();
                vec![
                    site_name(x),
                    format!("{:.3}", x.spin_cpu_seconds_per_s),
                    format!("{:.0}", x.sleeps_per_s),
                    format!("{:.3}", x.sleep_seconds_per_s),
                    l.map_or("-".into(), |l| {
                        format!("{} / {} / {}", us(l.p50_us), us(l.p90_us), us(l.p99_us))
                    }),
                    x.slept_share_at_most
                        .map_or("-".into(), |p| format!("{:.0}%", 100.0 * p)),
                    x.advice.direction.word().to_string(),
                ]
            })
            .collect();
        s.push_str(&grid(
            &[
                "site (function <- caller)",
                "spin CPU-s/s",
                "sleeps/s",
                "sleep s/s",
                "sleep p50/p90/p99",
                "slept, at most",
                "advice",
            ],
            rows,
        ));
        for x in d.sites.iter().take(3) {
            s.push_str(&format!("  {}: {}\n", site_name(x), x.advice.reason));
        }
    }
    s.push_str(&format!(
        "\nadvice for the server: {} ({})\n",
        d.advice.direction.word(),
        d.advice.reason
    ));
    for m in &d.settings {
        s.push_str(&format!("  {}: {}\n", m.variable, m.what));
    }
    if !d.notes.is_empty() {
        s.push_str("\nnotes\n");
        for n in &d.notes {
            s.push_str(&format!("- {n}\n"));
        }
    }
    s
}
