//! The wait view as a pprof profile (pure): every on-CPU sample and every off-CPU interval of the
//! server's threads as a stack with two values, on-CPU time (`cpu/nanoseconds`) and off-CPU time
//! (`off_cpu/nanoseconds`), so a continuous-profiling server shows both flame graphs of one
//! recording. A stack that has a site ends at the site's function, named as the table names it;
//! what happened below it (a spin loop, a latch sleep, another wait) is the `class` label, and
//! the site (`function <- caller`) the `site` label. So `go tool pprof -sample_index=off_cpu
//! -tagfocus=class=^latch_sleep$ -top` lists the table's sites by sleep time.

use std::collections::BTreeMap;

use super::join::{OffKind, StackKey, StackValue, What};
use super::WaitDoc;
use crate::profile::pprof::{Frame, Profile, Sample, ValueType};

/// Label keys.
pub const LABEL_CLASS: &str = "class";
pub const LABEL_SITE: &str = "site";

/// The `class` label of an off-CPU interval.
pub fn off_class(k: OffKind) -> &'static str {
    match k {
        OffKind::Latch => "latch_sleep",
        OffKind::Pthread => "pthread_wait",
        OffKind::Io => "io_wait",
        OffKind::Other => "other_sleep",
        OffKind::Preempted => "preempted",
    }
}

/// Nanoseconds of CPU per on-CPU sample when the event's period is not in nanoseconds: one
/// sampling period at the recording's frequency (0 when unknown).
fn ns_per_sample(doc: &WaitDoc) -> Option<u64> {
    let event = doc.source.on_cpu_event.as_deref();
    if super::ns_event(event) {
        return None;
    }
    Some(
        doc.source
            .frequency_hz
            .filter(|&hz| hz > 0)
            .map_or(0, |hz| 1_000_000_000 / u64::from(hz)),
    )
}

/// A frame named `binary+0xOFFSET` (code without a symbol) keeps its binary and offset, so a
/// reader maps it to the same place in every run of the build.
fn frame(name: &str) -> Frame {
    let parsed = name.rsplit_once("+0x").and_then(|(bin, off)| {
        (!bin.is_empty() && !bin.contains(' '))
            .then(|| u64::from_str_radix(off, 16).ok())
            .flatten()
            .map(|o| (bin.to_string(), o))
    });
    Frame {
        function: name.to_string(),
        binary: parsed.as_ref().map(|(b, _)| b.clone()),
        file_offset: parsed.map(|(_, o)| o),
    }
}

fn clamp(x: u64) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

/// The profile of a join's stacks, for the document built from the same join.
pub fn build(stacks: &BTreeMap<StackKey, StackValue>, doc: &WaitDoc) -> Profile {
    let per_sample = ns_per_sample(doc);
    let mut frames: Vec<Frame> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = Default::default();
    let mut samples = Vec::with_capacity(stacks.len());
    for (k, v) in stacks {
        let idx = k
            .frames
            .iter()
            .map(|n| {
                *index.entry(n.clone()).or_insert_with(|| {
                    frames.push(frame(n));
                    frames.len() - 1
                })
            })
            .collect();
        let cpu_ns = match per_sample {
            None => v.weight,
            Some(ns) => v.samples.saturating_mul(ns),
        };
        let class = match k.what {
            What::OnCpu(c) => c,
            What::Off(o) => off_class(o),
        };
        let mut labels = vec![(LABEL_CLASS.to_string(), class.to_string())];
        if let Some(s) = &k.site {
            labels.push((LABEL_SITE.to_string(), s.clone()));
        }
        samples.push(Sample {
            frames: idx,
            values: vec![clamp(cpu_ns), clamp(v.off_ns)],
            labels,
        });
    }
    let period = match per_sample {
        Some(ns) => ns,
        None => doc
            .source
            .frequency_hz
            .filter(|&hz| hz > 0)
            .map_or(0, |hz| 1_000_000_000 / u64::from(hz)),
    };
    let mut comments = vec![
        format!(
            "spinscope profile --waits of pid {}: on-CPU samples of {} and off-CPU intervals \
             from {}",
            doc.source.pid,
            doc.source.on_cpu_event.as_deref().unwrap_or("no event"),
            doc.source.off_cpu_method
        ),
        format!(
            "labels: {LABEL_CLASS} (spinscope's class of an on-CPU stack, or the kind of an \
             off-CPU interval: latch_sleep, pthread_wait, io_wait, other_sleep, preempted), \
             {LABEL_SITE} (the latch site, function <- caller); a stack with a site ends at the \
             site's function"
        ),
        doc.headline.clone(),
    ];
    if doc.open_at_end > 0 {
        comments.push(format!(
            "{} intervals still open at the end of the window are not counted",
            doc.open_at_end
        ));
    }
    Profile {
        sample_types: vec![
            ValueType::new("cpu", "nanoseconds"),
            ValueType::new("off_cpu", "nanoseconds"),
        ],
        default_sample_type: Some(1),
        frames,
        samples,
        period_type: Some(ValueType::new("cpu", "nanoseconds")),
        period: clamp(period),
        duration_ns: (doc.source.seconds * 1e9).round() as i64,
        // perf's times are since boot, not a wall clock: left unknown, as profile's pprof.
        time_ns: 0,
        comments,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::waits::join::{join_with, Code};
    use crate::profile::waits::script::Events;
    use crate::profile::waits::{build as build_doc, Build};

    /// The real capture's stripped server (as join's tests): function starts by table.
    struct Table;

    impl Code for Table {
        fn function_start(&mut self, dso: &str, ip: u64) -> Option<u64> {
            if !dso.ends_with("mariadbd") {
                return None;
            }
            [0xe11480, 0xde2920, 0xda6e00, 0x72d000]
                .into_iter()
                .filter(|&s| s <= ip)
                .max()
        }
        fn file_offset(&mut self, _: &str, ip: u64) -> Option<u64> {
            Some(ip)
        }
        fn is_spin_loop(&mut self, dso: &str, ip: u64) -> bool {
            dso.ends_with("mariadbd") && (0xde2970..=0xde2975).contains(&ip)
        }
    }

    fn analysed(name: &str) -> super::super::Analysed {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/perf/waits")
            .join(name);
        let text = std::fs::read(p).unwrap();
        let j = join_with(Events::new(&text[..], u64::MAX), 19298, &mut Table, true);
        build_doc(
            j,
            Build {
                pid: 19298,
                kind: "perf-script".into(),
                file: None,
                comm: None,
                seconds: None,
                frequency_hz: None,
                off_cpu_method: "sched:sched_switch".into(),
                cost: None,
                server: None,
                pprof: true,
            },
        )
    }

    /// The profile's sums are the table's: on-CPU time, latch sleep time, and per site.
    #[test]
    fn the_profile_adds_up_to_the_table() {
        for f in ["mariadbd-waits-d6000-l1.perf", "mariadbd-waits-d4-l1.perf"] {
            let a = analysed(f);
            let (d, p) = (&a.doc, a.pprof.as_ref().unwrap());
            let secs = d.source.seconds;
            let sum = |class: Option<&str>, i: usize| -> i64 {
                p.samples
                    .iter()
                    .filter(|s| class.is_none_or(|c| s.labels[0].1 == c))
                    .map(|s| s.values[i])
                    .sum()
            };
            let near = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
            assert!(
                near(sum(None, 0) as f64 / 1e9 / secs, d.cpu_seconds_per_s),
                "{f}: cpu"
            );
            assert!(
                near(
                    sum(Some("innodb_spin"), 0) as f64 / 1e9 / secs,
                    d.spin_cpu_seconds_per_s
                ),
                "{f}: spin"
            );
            assert!(
                near(
                    sum(Some("latch_sleep"), 1) as f64 / 1e9 / secs,
                    d.latch_sleep_seconds_per_s
                ),
                "{f}: latch sleeps"
            );
            let off_total: f64 = d.off_cpu.iter().map(|o| o.seconds_per_s).sum();
            assert!(near(sum(None, 1) as f64 / 1e9 / secs, off_total), "{f}");
            // Each site's latch sleep time, by its label; its stacks end at its function.
            for site in &d.sites {
                let name = match &site.caller {
                    Some(c) => format!("{} <- {c}", site.function),
                    None => site.function.clone(),
                };
                let of_site: Vec<&Sample> = p
                    .samples
                    .iter()
                    .filter(|s| s.labels.get(1).is_some_and(|l| l.1 == name))
                    .collect();
                let sleep: i64 = of_site
                    .iter()
                    .filter(|s| s.labels[0].1 == "latch_sleep")
                    .map(|s| s.values[1])
                    .sum();
                assert!(
                    near(sleep as f64 / 1e9 / secs, site.sleep_seconds_per_s),
                    "{f}: {name}"
                );
                for s in of_site {
                    let leaf = &p.frames[*s.frames.last().unwrap()];
                    assert_eq!(leaf.function, site.function, "{f}: {name}");
                }
            }
        }
    }

    #[test]
    fn unnamed_frames_keep_their_binary_and_offset() {
        let f = frame("mariadbd+0xe11480");
        assert_eq!(
            (f.binary.as_deref(), f.file_offset),
            (Some("mariadbd"), Some(0xe11480))
        );
        let g = frame("mtr_t::page_lock");
        assert_eq!((g.binary, g.file_offset), (None, None));
        let h = frame("mariadbd+0x1234 (no function start)");
        assert_eq!(h.file_offset, None);
    }
}
