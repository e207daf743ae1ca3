//! `profile`: where a server's CPU goes. Owns perf collection (`collect`), a lenient
//! perf-script reader (`parse`), spin loops found from instruction bytes when symbols are
//! missing (`elf`), the class rules (`rules`), stack folding via inferno, the
//! `spinscope.profile/1` document and the flame graph (`svg`).

pub mod collect;
pub mod elf;
pub mod parse;
pub mod rules;
pub mod svg;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use rules::Class;

pub const SCHEMA: &str = "spinscope.profile/1";

/// Where the samples came from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Source {
    /// "perf-script" (offline file) or "perf-record" (live).
    pub kind: String,
    pub file: Option<String>,
    pub pid: Option<u32>,
    pub comm: Option<String>,
    pub seconds: Option<f64>,
    pub frequency_hz: Option<u32>,
    pub event: Option<String>,
}

/// One folded stack and its samples.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StackCount {
    pub stack: String,
    pub samples: u64,
    pub share: f64,
}

/// One class's shares and its Amdahl bounds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClassShare {
    pub class: String,
    pub label: String,
    /// Samples whose nearest-to-leaf classified frame is of this class.
    pub self_samples: u64,
    pub self_share: f64,
    /// Samples with a frame of this class anywhere on the stack (named classes only).
    pub inclusive_samples: u64,
    pub inclusive_share: f64,
    /// Whole-program speedup bound if this class's self share were halved: 1/((1-p)+p/2).
    pub amdahl_speedup_if_halved: f64,
    /// ... or removed: 1/(1-p).
    pub amdahl_speedup_if_removed: f64,
    pub top_stacks: Vec<StackCount>,
}

/// A spin loop found from instruction bytes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SpinLoop {
    /// "spin loop at mariadbd+0x1234"
    pub name: String,
    pub binary: String,
    pub file_offset: u64,
    pub samples: u64,
    pub share: f64,
}

/// The `spinscope.profile/1` document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProfileDoc {
    pub schema: String,
    pub source: Source,
    pub samples: u64,
    /// Samples whose sampled IP had no symbol.
    pub no_symbol_samples: u64,
    /// Of those, samples found to sit in a spin loop from instruction bytes.
    pub spin_loop_samples: u64,
    pub classes: Vec<ClassShare>,
    pub spin_loops: Vec<SpinLoop>,
    pub notes: Vec<String>,
}

/// The analysis: the document plus the folded stacks (for `--folded` and `--svg`).
#[derive(Debug, Clone)]
pub struct Analysis {
    pub doc: ProfileDoc,
    /// inferno's folded lines, `comm;frame;...;leaf count`, sorted.
    pub folded: Vec<(String, u64)>,
}

/// Options of the analysis.
#[derive(Debug, Clone)]
pub struct Options {
    pub top_stacks: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { top_stacks: 5 }
    }
}

/// Amdahl bound: speedup of the whole if a share `p` became `s` times faster.
pub fn amdahl(p: f64, s: f64) -> f64 {
    let p = p.clamp(0.0, 1.0);
    let rest = if s.is_infinite() { 0.0 } else { p / s };
    let d = (1.0 - p) + rest;
    if d <= 0.0 {
        f64::INFINITY
    } else {
        1.0 / d
    }
}

/// Analyse a perf-script text.
pub fn analyse(text: &str, source: Source, opts: &Options) -> Result<Analysis> {
    if text.trim().is_empty() {
        return Err(Error::bad_input(
            "the perf script is empty: record with `perf record -g` and export with `perf script`",
        ));
    }
    let scan = parse::scan(text);
    if scan.samples == 0 {
        return Err(Error::bad_input(format!(
            "no samples with stacks in the perf script ({} event headers, {} unreadable lines): \
             is it `perf script` text from `perf record -g`?",
            scan.headers, scan.bad_lines
        )));
    }
    let mut notes = Vec::new();

    // Spin loops without symbols.
    let (names, unreadable) = find_spin_loops(&scan);
    for d in &unreadable {
        notes.push(format!(
            "{d}: not readable here, so its unsymbolized samples could not be examined for spin loops"
        ));
    }
    let edits = parse::edits(text, &scan, &names);

    // An explicit event filter: inferno asserts (panics) when it cannot find one itself.
    let event = scan
        .first_event
        .clone()
        .unwrap_or_else(|| "cpu-clock".to_string());
    let folded = fold(parse::Edited::new(text, &edits), event)?;
    if folded.is_empty() {
        return Err(Error::bad_input(
            "the perf script folded to no stacks: is it `perf script` text?",
        ));
    }
    let doc = classify(&folded, &scan, &names, source, notes, opts);
    Ok(Analysis { doc, folded })
}

/// Fold with inferno's perf collapser; kernel frames get `_[k]`.
fn fold(text: parse::Edited<'_>, event: String) -> Result<Vec<(String, u64)>> {
    use inferno::collapse::Collapse;
    let mut o = inferno::collapse::perf::Options::default();
    o.event_filter = Some(event);
    o.annotate_kernel = true;
    // inferno folds on one thread unless built with its `multithreaded` feature, which this
    // crate leaves off (on 2 vCPUs its own CLI gains ~10% wall time for ~70% more CPU);
    // the result is sorted below either way, so it does not depend on the thread count.
    o.nthreads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut folder = inferno::collapse::perf::Folder::from(o);
    let mut out = Vec::with_capacity(64 * 1024);
    folder
        .collapse(text, &mut out)
        .map_err(|e| Error::bad_input(format!("folding the perf script failed: {e}")))?;
    let out = String::from_utf8_lossy(&out);
    let mut v: Vec<(String, u64)> = out
        .lines()
        .filter_map(|l| {
            let (stack, n) = l.rsplit_once(' ')?;
            Some((stack.to_string(), n.parse().ok()?))
        })
        .collect();
    v.sort();
    Ok(v)
}

fn binary_name(dso: &str) -> &str {
    dso.rsplit('/').next().unwrap_or(dso)
}

/// Examine unsymbolized leaf IPs; returns names for the spin loops and DSOs not readable.
fn find_spin_loops(scan: &parse::Scan) -> (BTreeMap<(String, u64), String>, BTreeSet<String>) {
    let mut names = BTreeMap::new();
    let mut unreadable = BTreeSet::new();
    let mut cache: BTreeMap<&str, Option<elf::Binary>> = BTreeMap::new();
    for (dso, ip) in scan.unknown_leaves.keys() {
        let bin = cache
            .entry(dso.as_str())
            .or_insert_with(|| elf::Binary::open(std::path::Path::new(dso)));
        let Some(bin) = bin else {
            unreadable.insert(dso.clone());
            continue;
        };
        if bin.is_spin_loop(*ip) {
            if let Some(off) = bin.file_offset(*ip) {
                names.insert(
                    (dso.clone(), *ip),
                    format!("[spin loop at {}+0x{:x}]", binary_name(dso), off),
                );
            }
        }
    }
    (names, unreadable)
}

fn share(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        n as f64 / total as f64
    }
}

/// Class of one folded stack (frames after the comm root): nearest-to-leaf rule match, else
/// the leaf's subsystem.
pub fn stack_class(frames: &[&str]) -> Class {
    frames
        .iter()
        .rev()
        .find_map(|f| rules::frame_class(f))
        .unwrap_or_else(|| {
            let leaf = frames.last().copied().unwrap_or("");
            rules::rest_class(leaf, leaf.ends_with("_[k]"))
        })
}

fn classify(
    folded: &[(String, u64)],
    scan: &parse::Scan,
    names: &BTreeMap<(String, u64), String>,
    source: Source,
    mut notes: Vec<String>,
    opts: &Options,
) -> ProfileDoc {
    let total: u64 = folded.iter().map(|(_, n)| n).sum();
    let mut self_n: BTreeMap<Class, u64> = BTreeMap::new();
    let mut incl_n: BTreeMap<Class, u64> = BTreeMap::new();
    let mut stacks: BTreeMap<Class, Vec<(&str, u64)>> = BTreeMap::new();
    let mut loops: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, n) in folded {
        let frames: Vec<&str> = stack.split(';').skip(1).collect();
        let c = stack_class(&frames);
        *self_n.entry(c).or_insert(0) += n;
        stacks.entry(c).or_default().push((stack, *n));
        let mut seen = BTreeSet::new();
        for f in &frames {
            if let Some(fc) = rules::frame_class(f) {
                seen.insert(fc);
            }
        }
        seen.insert(c);
        for fc in seen {
            *incl_n.entry(fc).or_insert(0) += n;
        }
        if let Some(leaf) = frames.last() {
            if let Some(name) = leaf
                .strip_prefix("[spin loop at ")
                .and_then(|s| s.strip_suffix(']'))
            {
                *loops.entry(name.to_string()).or_insert(0) += n;
            }
        }
    }

    let mut classes: Vec<ClassShare> = Class::ALL
        .iter()
        .filter(|c| incl_n.contains_key(c))
        .map(|&c| {
            let s = self_n.get(&c).copied().unwrap_or(0);
            let i = incl_n.get(&c).copied().unwrap_or(0);
            let p = share(s, total);
            let mut top = stacks.remove(&c).unwrap_or_default();
            top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            ClassShare {
                class: c.id().to_string(),
                label: c.label().to_string(),
                self_samples: s,
                self_share: p,
                inclusive_samples: i,
                inclusive_share: share(i, total),
                amdahl_speedup_if_halved: amdahl(p, 2.0),
                amdahl_speedup_if_removed: amdahl(p, f64::INFINITY),
                top_stacks: top
                    .into_iter()
                    .take(opts.top_stacks)
                    .map(|(st, n)| StackCount {
                        stack: st.to_string(),
                        samples: n,
                        share: share(n, total),
                    })
                    .collect(),
            }
        })
        .collect();
    classes.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then(a.class.cmp(&b.class))
    });

    let mut spin_loops: Vec<SpinLoop> = loops
        .into_iter()
        .map(|(name, n)| {
            let (binary, off) = name.rsplit_once("+0x").unwrap_or((&name, "0"));
            SpinLoop {
                name: format!("spin loop at {name}"),
                binary: binary.to_string(),
                file_offset: u64::from_str_radix(off, 16).unwrap_or(0),
                samples: n,
                share: share(n, total),
            }
        })
        .collect();
    spin_loops.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.name.cmp(&b.name)));
    let spin_loop_samples = spin_loops.iter().map(|l| l.samples).sum();
    let _ = names;

    if scan.no_symbol_samples > 0 {
        notes.push(format!(
            "{} of {} samples ({:.1}%) had no symbol at the sampled IP; install the server's \
             debug symbols (e.g. the -dbgsym package) so perf can name them; spin loops among \
             them were found from the instruction bytes",
            scan.no_symbol_samples,
            scan.samples,
            100.0 * share(scan.no_symbol_samples, scan.samples)
        ));
    }
    notes.push(
        "Amdahl bounds use the self share; sampling profilers have skid (the sampled IP can be \
         an instruction or more past the one that used the time), so treat shares as estimates"
            .to_string(),
    );

    ProfileDoc {
        schema: SCHEMA.to_string(),
        source,
        samples: total,
        no_symbol_samples: scan.no_symbol_samples,
        spin_loop_samples,
        classes,
        spin_loops,
        notes,
    }
}

/// Folded lines as text (`stack count\n`), for `--folded`.
pub fn folded_text(folded: &[(String, u64)]) -> String {
    let mut s = String::new();
    for (st, n) in folded {
        s.push_str(st);
        s.push(' ');
        s.push_str(&n.to_string());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amdahl_bounds() {
        assert!((amdahl(0.5, 2.0) - 1.0 / 0.75).abs() < 1e-12);
        assert!((amdahl(0.5, f64::INFINITY) - 2.0).abs() < 1e-12);
        assert_eq!(amdahl(0.0, 2.0), 1.0);
        assert!(amdahl(1.0, f64::INFINITY).is_infinite());
    }

    #[test]
    fn class_of_stacks() {
        assert_eq!(
            stack_class(&["do_command", "ppoll", "_raw_spin_lock_irq_[k]"]),
            Class::KernelSpinlock
        );
        assert_eq!(
            stack_class(&[
                "srw_mutex_impl<true>::wait_and_lock",
                "syscall",
                "futex_wait_[k]",
                "schedule_[k]"
            ]),
            Class::OsWait
        );
        assert_eq!(stack_class(&["row_ins", "ut_delay"]), Class::InnodbSpin);
        assert_eq!(stack_class(&["main", "row_ins"]), Class::Innodb);
    }

    #[test]
    fn empty_and_garbled_are_bad_input() {
        let src = Source {
            kind: "perf-script".into(),
            file: None,
            pid: None,
            comm: None,
            seconds: None,
            frequency_hz: None,
            event: None,
        };
        assert!(matches!(
            analyse("", src.clone(), &Options::default()),
            Err(Error::BadInput(_))
        ));
        assert!(matches!(
            analyse("hello\nworld\n", src, &Options::default()),
            Err(Error::BadInput(_))
        ));
    }
}
