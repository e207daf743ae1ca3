//! aarch64 host with 128-byte cache lines under a server padded for 64 (docs/REFERENCE.md §7).

use crate::doctor::{ev, Facts, Finding, Severity};

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(h) = &f.snap.host else { return vec![] };
    if h.arch != "aarch64" || h.cache_line_bytes != Some(128) {
        return vec![];
    }
    vec![Finding {
        option_file: vec![],
        id: "arm-128-byte-cache-lines".into(),
        severity: Severity::Warning,
        title: "aarch64 host with 128-byte cache lines; MySQL pads hot structures to 64".into(),
        evidence: vec![ev("cache_line", 128.0, "bytes")],
        why: "Two latches or counters padded to 64 bytes share one 128-byte line: false sharing makes spin-lock \
              contention heavier on many-core ARM such as Kunpeng 920 (docs/REFERENCE.md §7)."
            .into(),
        what_to_do: "Tune innodb_spin_wait_delay, innodb_sync_spin_loops and innodb_thread_concurrency (to the core count) \
                     with `spinscope sweep`; prefer builds with 128-byte padding for ARM."
            .into(),
        statements: vec![],
    }]
}
