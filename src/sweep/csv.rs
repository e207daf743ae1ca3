//! The sweep's CSV: one row per step, written beside the JSON after every step (pure:
//! document in, text out; `report::sweep` re-exports it).

use std::fmt::Write;

use super::doc::SweepDoc;

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// One CSV row per step.
pub fn csv(doc: &SweepDoc) -> String {
    let mut s = String::from(
        "threads,variant,repeat,interrupted,elapsed_s,txns,queries,tps,qps,mean_us,p50_us,p95_us,p99_us,p999_us,max_us,errors,reconnects,little_ratio,valid,invalid_reason\n",
    );
    for st in &doc.steps {
        let l = &st.latency_us;
        let _ = writeln!(
            s,
            "{},{},{},{},{:.3},{},{},{:.1},{:.1},{:.1},{},{},{},{},{},{},{},{:.3},{},{}",
            st.threads,
            st.variant,
            st.repeat,
            st.interrupted,
            st.elapsed_s,
            st.txns,
            st.queries,
            st.tps,
            st.qps,
            l.mean,
            l.p50,
            l.p95,
            l.p99,
            l.p999,
            l.max,
            st.errors.values().sum::<u64>(),
            st.reconnects,
            st.little.ratio,
            st.invalid.is_none(),
            csv_field(st.invalid.as_deref().unwrap_or(""))
        );
    }
    s
}
