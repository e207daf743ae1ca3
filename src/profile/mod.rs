//! `profile`: where a server's CPU goes. Owns perf collection (`collect`), the streaming
//! perf-script folder (`fold`: inferno's stacks and period weights, plus sample counts), spin
//! loops found from instruction bytes when symbols are missing (`elf`), the class rules
//! (`rules`), the `spinscope.profile/2` document and the flame graph (`svg`).

pub mod collect;
pub mod diff;
pub mod diff_input;
pub mod elf;
pub mod fold;
pub mod instances;
pub mod located;
pub mod pprof;
pub mod render;
pub mod rules;
pub mod run;
pub mod svg;
pub mod waits;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::BufRead;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
pub use fold::Tally;
use rules::Class;

pub const SCHEMA: &str = "spinscope.profile/2";

/// Default cap on the size of a perf-script input, in bytes (8 GiB).
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 8 << 30;

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
    /// The event folded (`cycles`, `cpu-clock`, ...).
    pub event: Option<String>,
    /// How perf recorded (live): "per-cpu, fp", "per-task, fp", ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<String>,
}

impl Source {
    /// A `perf script` file read offline (`file`: its name as given, if any).
    pub fn script(file: Option<String>) -> Source {
        Source {
            kind: "perf-script".into(),
            file,
            pid: None,
            comm: None,
            seconds: None,
            frequency_hz: None,
            event: None,
            recording: None,
        }
    }
}

/// One folded stack: its samples and their weight (sum of periods).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StackCount {
    pub stack: String,
    pub samples: u64,
    pub weight: u64,
    /// Share of the total weight.
    pub share: f64,
}

/// One class's shares and its Amdahl bounds. Shares are of the weight (periods), as in
/// `perf report`; sample counts are given beside.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClassShare {
    pub class: String,
    pub label: String,
    /// Samples whose nearest-to-leaf classified frame is of this class.
    pub self_samples: u64,
    pub self_weight: u64,
    pub self_share: f64,
    /// Samples with a frame of this class anywhere on the stack (named classes only).
    pub inclusive_samples: u64,
    pub inclusive_weight: u64,
    pub inclusive_share: f64,
    /// The whole program is at most this much faster if this class's self share were halved:
    /// 1/((1-p)+p/2).
    pub amdahl_at_most_if_halved: f64,
    /// ... or removed: 1/(1-p); null when the class is the whole profile (no bound).
    pub amdahl_at_most_if_removed: Option<f64>,
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
    pub weight: u64,
    pub share: f64,
}

/// An event present in the script and its samples (event lines).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EventSeen {
    pub event: String,
    pub samples: u64,
}

/// The `spinscope.profile/2` document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProfileDoc {
    pub schema: String,
    pub source: Source,
    /// Samples of the folded event.
    pub samples: u64,
    /// Fewer samples than `diff::MIN_SAMPLES` (200): shares are too coarse to mean much (one
    /// sample is over 0.5% of the profile); a note says so. Absent in older documents.
    #[serde(default)]
    pub too_few_samples: bool,
    /// Their total weight: the sum of their periods (a sample without a period weighs 1).
    pub weight: u64,
    /// What a unit of weight is: "ns" (cpu-clock, task-clock), the event's name (cycles,
    /// instructions, page-faults: one per event), or "samples" when no sample had a period.
    pub weight_unit: String,
    /// Every event in the script; only `source.event` is folded.
    pub events: Vec<EventSeen>,
    /// Whether call chains were recorded (`perf record -g`); false: one-frame stacks.
    pub call_chains: bool,
    /// Samples whose sampled IP had no symbol.
    pub no_symbol_samples: u64,
    /// Of those, samples found to sit in a spin loop from instruction bytes.
    pub spin_loop_samples: u64,
    /// Weight share of the InnoDB spin class (self).
    pub spin_share: f64,
    /// One sentence tying the spin share to the spin settings, when there is spinning.
    pub headline: Option<String>,
    pub classes: Vec<ClassShare>,
    pub spin_loops: Vec<SpinLoop>,
    /// The spin share period by period (issue 36 §6): a burst a whole-window share would
    /// dilute. Absent when the samples carry no time (or in older documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_by_time: Option<SpinOverTime>,
    pub notes: Vec<String>,
}

/// The InnoDB spin class's share of the weight in consecutive periods of the recording: 1 s
/// each when the samples span 5 s or more (a 10 s recording's samples span a little less
/// than 10 s, and its periods should still be seconds), else a tenth of their span (at least
/// 10 ms).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SpinOverTime {
    /// Length of each period, in seconds.
    pub period_s: f64,
    /// Spin share of each period's weight (0 for a period without samples), from the first
    /// sample on.
    pub spin_share: Vec<f64>,
    /// Samples in each period.
    pub samples: Vec<u64>,
    /// The period with the largest spin share (0-based), and that share.
    pub peak_period: usize,
    pub peak_share: f64,
}

/// The analysis: the document plus the folded stacks (for `--folded` and `--svg`).
#[derive(Debug, Clone)]
pub struct Analysis {
    pub doc: ProfileDoc,
    /// Folded stacks, `comm;frame;...;leaf`, sorted, with samples and weight.
    pub folded: Vec<(String, Tally)>,
    /// The profile for `--pprof` (when [`Options::pprof`] asked for it).
    pub pprof: Option<pprof::Profile>,
}

/// Options of the analysis.
#[derive(Debug, Clone)]
pub struct Options {
    pub top_stacks: usize,
    /// Fold this event; `None`: the first in the script.
    pub event: Option<String>,
    /// Refuse inputs longer than this.
    pub max_input_bytes: u64,
    /// An input without any sample is a result (an idle process recorded live), not an error.
    pub empty_is_idle: bool,
    /// Build [`Analysis::pprof`] too.
    pub pprof: bool,
    /// Where separate debug files are looked for ([`elf::DEBUG_ROOT`]; a temporary root in
    /// tests).
    pub debug_root: std::path::PathBuf,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top_stacks: 5,
            event: None,
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
            empty_is_idle: false,
            pprof: false,
            debug_root: elf::DEBUG_ROOT.into(),
        }
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

/// Analyse a perf-script text given as a string.
pub fn analyse(text: &str, source: Source, opts: &Options) -> Result<Analysis> {
    analyse_reader(text.as_bytes(), "the perf script", source, opts)
}

fn events_list(events: &[(String, u64)]) -> String {
    events
        .iter()
        .map(|(e, n)| format!("{} ({n})", if e.is_empty() { "unnamed" } else { e }))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Analyse `perf script` text read from `r` (streamed); `input` names it in messages.
pub fn analyse_reader<R: BufRead>(
    r: R,
    input: &str,
    source: Source,
    opts: &Options,
) -> Result<Analysis> {
    let fo = fold::FoldOptions {
        event: opts.event.clone(),
        annotate_kernel: true,
        keep_unknown_leaves: true,
        max_bytes: opts.max_input_bytes,
    };
    let f = fold::fold(r, fo).map_err(|e| match e {
        fold::FoldError::Read(e) => Error::bad_input(format!("{input}: reading failed ({e})")),
        fold::FoldError::TooLong { max_bytes } => Error::bad_input(format!(
            "{input}: longer than {} MiB, the input cap: record a shorter window, or raise \
             --max-input-mb",
            max_bytes >> 20
        )),
        fold::FoldError::LineTooLong { line } => Error::bad_input(format!(
            "{input}: line {line} is longer than {} MiB: this is not `perf script` text",
            fold::MAX_LINE_BYTES >> 20
        )),
    })?;
    if f.total.samples == 0 {
        return no_samples(&f, input, source, opts);
    }

    let mut notes = Vec::new();
    let (mut names, unreadable, outside, offsets) = find_spin_loops(&f);
    debug_names(&f, &offsets, &mut names, &opts.debug_root, &mut notes);
    for d in &unreadable {
        notes.push(format!(
            "{d}: not readable here, so its unsymbolized samples could not be examined for spin loops"
        ));
    }
    if outside > 0 {
        notes.push(format!(
            "{outside} sampled addresses without a symbol lie outside their binary's file \
             addresses (run-time addresses, as perf prints them without call chains), so they \
             could not be examined for spin loops; record with -g"
        ));
    }
    let (folded, ids, slot_to_stack) = f.resolve_slots(&names);
    let mut tallies = Tallies::of(&folded, &ids, &f, &names);
    let classes = std::mem::take(&mut tallies.classes);
    let spin_by_time = spin_over_time(&f, &slot_to_stack, &classes);
    let mut doc = classify(tallies, &f, source, notes, opts);
    let pprof = opts.pprof.then(|| {
        let stacks = (0..folded.len()).map(|k| located::Stack {
            frames: ids[k],
            tally: folded[k].1,
            class: classes[k].id(),
        });
        let frame = |id: u32| leaf_frame(&f, id, &names, &offsets);
        located::build(stacks, frame, &doc, duration_ns(&f, &doc.source))
    });
    doc.spin_by_time = spin_by_time;
    Ok(Analysis { doc, folded, pprof })
}

/// The pprof frame of a frame id: its name; for a leaf without a symbol, its binary and file
/// offset too (named `mariadbd+0x..` when nothing better names it).
fn leaf_frame(
    f: &fold::Folded,
    id: u32,
    names: &HashMap<usize, String>,
    offsets: &HashMap<usize, (String, u64)>,
) -> pprof::Frame {
    let at = fold::Folded::leaf_index(id).and_then(|i| Some((i, offsets.get(&i)?)));
    match at {
        Some((i, (bin, off))) => pprof::Frame {
            function: names
                .get(&i)
                .cloned()
                .unwrap_or_else(|| format!("{bin}+0x{off:x}")),
            binary: Some(bin.clone()),
            file_offset: Some(*off),
        },
        None => pprof::Frame {
            function: f.frame_name(id, names).to_string(),
            binary: None,
            file_offset: None,
        },
    }
}

/// How long the recording lasted: as asked (live), else the span of the samples' times.
fn duration_ns(f: &fold::Folded, source: &Source) -> i64 {
    if let Some(s) = source.seconds {
        return (s * 1e9) as i64;
    }
    let (lo, hi) = f
        .timeline
        .keys()
        .fold((u64::MAX, 0), |(lo, hi), &(b, _)| (lo.min(b), hi.max(b)));
    if lo > hi {
        return 0;
    }
    ((hi - lo + 1) * fold::TIME_BUCKET_NS) as i64
}

/// The spin class's share period by period (see [`SpinOverTime`]); `None` without times.
fn spin_over_time(
    f: &fold::Folded,
    slot_to_stack: &[u32],
    classes: &[Class],
) -> Option<SpinOverTime> {
    let (lo, hi) = f
        .timeline
        .keys()
        .fold((u64::MAX, 0), |(lo, hi), &(b, _)| (lo.min(b), hi.max(b)));
    if lo > hi {
        return None;
    }
    let span = hi - lo + 1;
    let per_second = 1_000_000_000 / fold::TIME_BUCKET_NS;
    let width = if span >= 5 * per_second {
        per_second
    } else {
        span.div_ceil(10).max(1)
    };
    let n = span.div_ceil(width) as usize;
    let (mut spin, mut total, mut samples) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
    for (&(b, slot), t) in &f.timeline {
        let i = ((b - lo) / width) as usize;
        total[i] = total[i].saturating_add(t.weight);
        samples[i] += t.samples;
        let c = slot_to_stack
            .get(slot as usize)
            .and_then(|&k| classes.get(k as usize));
        if c == Some(&Class::InnodbSpin) {
            spin[i] = spin[i].saturating_add(t.weight);
        }
    }
    let spin_share: Vec<f64> = (0..n).map(|i| share(spin[i], total[i])).collect();
    let (peak_period, peak_share) = spin_share.iter().enumerate().fold(
        (0, -1.0),
        |best, (i, &s)| if s > best.1 { (i, s) } else { best },
    );
    Some(SpinOverTime {
        period_s: (width * fold::TIME_BUCKET_NS) as f64 / 1e9,
        spin_share,
        samples,
        peak_period,
        peak_share: peak_share.max(0.0),
    })
}

/// No sample of the chosen event: an idle result (live recording), or one line saying what
/// was recognised and what was not.
fn no_samples(
    f: &fold::Folded,
    input: &str,
    mut source: Source,
    opts: &Options,
) -> Result<Analysis> {
    if let Some(want) = &opts.event {
        if f.event_lines > 0 {
            return Err(Error::bad_input(format!(
                "--event {want}: the script has no samples of it; its events: {}",
                events_list(&f.events)
            )));
        }
    }
    if f.lines == 0 || f.lines == f.comment_lines {
        if opts.empty_is_idle {
            source.event = f.event.clone().or(source.event);
            let doc = ProfileDoc {
                schema: SCHEMA.to_string(),
                source,
                samples: 0,
                too_few_samples: false,
                weight: 0,
                weight_unit: "samples".into(),
                events: Vec::new(),
                call_chains: false,
                no_symbol_samples: 0,
                spin_loop_samples: 0,
                spin_share: 0.0,
                headline: Some(
                    "the process was idle: perf recorded no samples of it in the window, so \
                     nothing in it spent CPU (spinning included)"
                        .into(),
                ),
                classes: Vec::new(),
                spin_loops: Vec::new(),
                spin_by_time: None,
                notes: Vec::new(),
            };
            let pprof = opts
                .pprof
                .then(|| located::build(std::iter::empty(), |_| unreachable_frame(), &doc, 0));
            return Ok(Analysis {
                doc,
                folded: Vec::new(),
                pprof,
            });
        }
        return Err(Error::bad_input(format!(
            "{input} is empty{}: export a recording with `perf script`",
            if f.lines > 0 { " (comments only)" } else { "" }
        )));
    }
    let odd = match &f.first_odd {
        Some((n, l)) => format!("; first unrecognised line {n}: {l:?}"),
        None => String::new(),
    };
    Err(Error::bad_input(format!(
        "{input}: not `perf script` text: of {} lines, {} were event lines (`comm pid time: \
         [period] event:`), {} frame lines (`ip symbol (dso)`), {} not recognised{odd}; export \
         with `perf script`",
        f.lines, f.event_lines, f.frame_lines, f.odd_lines
    )))
}

/// Names for leaves without a symbol (spin loops keep theirs) from the separate debug files of
/// their binaries, with a note per binary: where the names came from, or how to get them.
fn debug_names(
    f: &fold::Folded,
    offsets: &HashMap<usize, (String, u64)>,
    names: &mut HashMap<usize, String>,
    root: &std::path::Path,
    notes: &mut Vec<String>,
) {
    let mut by_dso: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, leaf) in f.leaves.iter().enumerate() {
        if offsets.contains_key(&i) {
            by_dso.entry(leaf.dso.as_str()).or_default().push(i);
        }
    }
    for (dso, leaves) in by_dso {
        let bin = binary_name(dso);
        match elf::find_debug_symbols(std::path::Path::new(dso), root) {
            elf::DebugLookup::Found(path, syms) => {
                let mut named = 0;
                for i in leaves {
                    if names.contains_key(&i) {
                        continue;
                    }
                    if let Some(n) = syms.name_at(f.leaves[i].ip) {
                        names.insert(i, fold::tidy(n));
                        named += 1;
                    }
                }
                notes.push(format!(
                    "{bin} has no symbols; {named} addresses without one were named from its \
                     separate debug file {}",
                    path.display()
                ));
            }
            elf::DebugLookup::Missing(id) => notes.push(format!(
                "{bin} is stripped and no debug file for its build-id {id} is installed under \
                 {}/.build-id: install its debug package (MariaDB on Debian/Ubuntu: \
                 mariadb-server-core-dbgsym, mariadb-server-dbgsym on older releases, from the \
                 debug archive) or set DEBUGINFOD_URLS (e.g. https://debuginfod.debian.net) so \
                 perf fetches it; addresses are shown as {bin}+0x<file offset>, the same in \
                 every run of this build",
                root.display()
            )),
            elf::DebugLookup::NoBuildId => {}
        }
    }
}

/// Never called: an idle profile has no frames.
fn unreachable_frame() -> pprof::Frame {
    pprof::Frame {
        function: String::new(),
        binary: None,
        file_offset: None,
    }
}

fn binary_name(dso: &str) -> &str {
    dso.rsplit('/').next().unwrap_or(dso)
}

/// What the unsymbolized leaves are: names for the spin loops, DSOs not readable, how many
/// leaf addresses lay outside their binary, and each leaf's binary and file offset.
type LeafFacts = (
    HashMap<usize, String>,
    BTreeSet<String>,
    usize,
    HashMap<usize, (String, u64)>,
);

/// Examine unsymbolized leaf IPs; returns names for the spin loops, DSOs not readable, and
/// how many leaf addresses lay outside their binary (run-time addresses, as `perf script`
/// prints them for samples without call chains: the load address is not in the script), and
/// the binary and file offset of every leaf inside its binary.
fn find_spin_loops(f: &fold::Folded) -> LeafFacts {
    let mut names = HashMap::new();
    let mut offsets = HashMap::new();
    let mut unreadable = BTreeSet::new();
    let mut outside = 0;
    let mut cache: BTreeMap<&str, Option<elf::Binary>> = BTreeMap::new();
    for (i, leaf) in f.leaves.iter().enumerate() {
        let bin = cache
            .entry(leaf.dso.as_str())
            .or_insert_with(|| elf::Binary::open(std::path::Path::new(&leaf.dso)));
        let Some(bin) = bin else {
            unreadable.insert(leaf.dso.clone());
            continue;
        };
        let Some(off) = bin.file_offset(leaf.ip) else {
            outside += 1;
            continue;
        };
        offsets.insert(i, (binary_name(&leaf.dso).to_string(), off));
        if bin.is_spin_loop(leaf.ip) {
            names.insert(
                i,
                format!("[spin loop at {}+0x{:x}]", binary_name(&leaf.dso), off),
            );
        }
    }
    (names, unreadable, outside, offsets)
}

fn share(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        n as f64 / total as f64
    }
}

/// Class of one folded stack (frames after the comm root): nearest-to-leaf rule match, else
/// the rest class by the frames' roles.
pub fn stack_class(frames: &[&str]) -> Class {
    frames
        .iter()
        .rev()
        .find_map(|f| rules::frame_class(f))
        .unwrap_or_else(|| rules::rest_class(frames))
}

/// Classes of frame names, each worked out once: a profile repeats the same frames in many
/// stacks, and matching every frame against the rule table is most of classifying.
#[derive(Default)]
pub struct ClassCache<'a> {
    frames: HashMap<&'a str, (Option<Class>, bool), fold::FoldHash>,
}

impl<'a> ClassCache<'a> {
    fn get(&mut self, f: &'a str) -> (Option<Class>, bool) {
        *self
            .frames
            .entry(f)
            .or_insert_with(|| (rules::frame_class(f), rules::is_innodb_frame(f)))
    }

    /// The named class of one frame, as [`rules::frame_class`].
    pub fn frame(&mut self, f: &'a str) -> Option<Class> {
        self.get(f).0
    }

    /// The class of one stack, as [`stack_class`].
    pub fn stack(&mut self, frames: &[&'a str]) -> Class {
        if let Some(c) = frames.iter().rev().find_map(|f| self.get(f).0) {
            return c;
        }
        let mut engine = |f: &str| {
            self.frames
                .get(f)
                .map_or_else(|| rules::is_innodb_frame(f), |x| x.1)
        };
        rules::rest_class_by(frames, &mut engine)
    }
}

/// What a unit of weight is for `event`.
pub fn weight_unit(event: Option<&str>, with_period: u64) -> String {
    match event {
        _ if with_period == 0 => "samples".into(),
        Some("cpu-clock") | Some("task-clock") => "ns".into(),
        Some(e) if !e.is_empty() => e.to_string(),
        _ => "period units".into(),
    }
}

/// Per class: the weight of stacks whose own class it is (self), of stacks it appears in
/// (inclusive), and those stacks; the unnamed spin loops' weight; whether InnoDB's sync array
/// was seen.
struct Tallies<'a> {
    self_t: BTreeMap<Class, Tally>,
    incl_t: BTreeMap<Class, Tally>,
    stacks: BTreeMap<Class, Vec<(&'a str, Tally)>>,
    loops: BTreeMap<String, Tally>,
    sync_array: bool,
    /// The self class of each stack, in the order counted.
    classes: Vec<Class>,
}

/// What classing needs of one frame name, worked out once per distinct name (the same
/// answers as [`ClassCache::stack`] and the inclusive pass over a stack's text).
#[derive(Clone, Copy)]
struct FrameFacts {
    /// [`rules::frame_class`].
    class: Option<Class>,
    /// [`rules::is_innodb_frame`].
    engine: bool,
    /// [`rules::is_named_frame`].
    named: bool,
    /// [`rules::rest_class_of_leaf`].
    leaf_rest: Option<Class>,
    sync_array: bool,
    spin_loop: bool,
    /// Holds a `;`: the stack's text splits otherwise than its frames (then it is classed by
    /// its text, as before).
    semicolon: bool,
}

impl FrameFacts {
    fn of(f: &str) -> FrameFacts {
        FrameFacts {
            class: rules::frame_class(f),
            engine: rules::is_innodb_frame(f),
            named: rules::is_named_frame(f),
            leaf_rest: rules::rest_class_of_leaf(f),
            sync_array: f.starts_with("sync_array_"),
            spin_loop: f.starts_with("[spin loop at ") && f.ends_with(']'),
            semicolon: f.contains(';'),
        }
    }
}

fn class_bit(c: Class) -> u32 {
    1 << Class::ALL.iter().position(|&x| x == c).unwrap_or(0)
}

impl<'a> Tallies<'a> {
    fn empty() -> Tallies<'a> {
        Tallies {
            self_t: BTreeMap::new(),
            incl_t: BTreeMap::new(),
            stacks: BTreeMap::new(),
            loops: BTreeMap::new(),
            sync_array: false,
            classes: Vec::new(),
        }
    }

    /// Every folded stack classed and counted; `ids[i]`: the frame ids of `folded[i]` (as
    /// [`fold::Folded::resolve_ids`] gives them). Each distinct name is matched against the
    /// rules once; a stack is then classed from its names' facts.
    fn of(
        folded: &'a [(String, Tally)],
        ids: &[&[u32]],
        f: &fold::Folded,
        leaf_names: &HashMap<usize, String>,
    ) -> Tallies<'a> {
        let mut me = Tallies::empty();
        let facts: Vec<FrameFacts> = f.names().iter().map(|n| FrameFacts::of(n)).collect();
        let leaf_facts: Vec<FrameFacts> = (0..f.leaves.len())
            .map(|i| FrameFacts::of(f.frame_name(fold::LEAF_BIT | i as u32, leaf_names)))
            .collect();
        let fact = |id: u32| match fold::Folded::leaf_index(id) {
            Some(i) => &leaf_facts[i],
            None => &facts[id as usize],
        };
        let mut cache = ClassCache::default();
        for (k, (stack, t)) in folded.iter().enumerate() {
            let stack_ids = ids[k];
            if stack_ids.iter().any(|&id| fact(id).semicolon) {
                me.add_by_text(&mut cache, stack, *t);
                continue;
            }
            let frames = stack_ids.get(1..).unwrap_or(&[]);
            let mut seen = 0u32;
            let mut nearest = None;
            let (mut engine, mut named) = (false, false);
            for &id in frames {
                let x = fact(id);
                if let Some(fc) = x.class {
                    seen |= class_bit(fc);
                    me.sync_array |= x.sync_array;
                    nearest = Some(fc);
                }
                engine |= x.engine;
                named |= x.named;
            }
            let leaf = frames.last().map(|&id| fact(id));
            let c =
                nearest.unwrap_or_else(|| match leaf.map_or(Some(Class::Other), |x| x.leaf_rest) {
                    Some(c) => c,
                    None if engine => Class::Innodb,
                    None if named => Class::Server,
                    None => Class::Unsymbolized,
                });
            seen |= class_bit(c);
            me.count(c, seen, stack, *t);
            if let (Some(x), Some(&id)) = (leaf, frames.last()) {
                if x.spin_loop {
                    me.add_loop(f.frame_name(id, leaf_names), *t);
                }
            }
        }
        me
    }

    /// One stack's self class `c` and inclusive classes `seen` (bits of [`Class::ALL`]).
    fn count(&mut self, c: Class, seen: u32, stack: &'a str, t: Tally) {
        self.classes.push(c);
        add(self.self_t.entry(c).or_default(), t);
        self.stacks.entry(c).or_default().push((stack, t));
        for (i, &fc) in Class::ALL.iter().enumerate() {
            if seen & (1 << i) != 0 {
                add(self.incl_t.entry(fc).or_default(), t);
            }
        }
    }

    fn add_loop(&mut self, leaf: &str, t: Tally) {
        if let Some(name) = leaf
            .strip_prefix("[spin loop at ")
            .and_then(|s| s.strip_suffix(']'))
        {
            add(self.loops.entry(name.to_string()).or_default(), t);
        }
    }

    /// One stack classed by its text (frames: the text's `;`-separated fields after the first).
    fn add_by_text(&mut self, cache: &mut ClassCache<'a>, stack: &'a str, t: Tally) {
        let frames: Vec<&str> = stack.split(';').skip(1).collect();
        let c = cache.stack(&frames);
        let mut seen = class_bit(c);
        for fr in &frames {
            if let Some(fc) = cache.frame(fr) {
                seen |= class_bit(fc);
                self.sync_array |= fr.starts_with("sync_array_");
            }
        }
        self.count(c, seen, stack, t);
        if let Some(leaf) = frames.last() {
            self.add_loop(leaf, t);
        }
    }

    /// The classes seen, heaviest self weight first, each with its top stacks.
    fn class_shares(&mut self, total: Tally, opts: &Options) -> Vec<ClassShare> {
        let mut classes: Vec<ClassShare> = Class::ALL
            .iter()
            .filter(|c| self.incl_t.contains_key(c))
            .map(|&c| {
                let s = self.self_t.get(&c).copied().unwrap_or_default();
                let i = self.incl_t.get(&c).copied().unwrap_or_default();
                let p = share(s.weight, total.weight);
                let mut top = self.stacks.remove(&c).unwrap_or_default();
                top.sort_by(|a, b| b.1.weight.cmp(&a.1.weight).then(a.0.cmp(b.0)));
                ClassShare {
                    class: c.id().to_string(),
                    label: c.label_in(self.sync_array).to_string(),
                    self_samples: s.samples,
                    self_weight: s.weight,
                    self_share: p,
                    inclusive_samples: i.samples,
                    inclusive_weight: i.weight,
                    inclusive_share: share(i.weight, total.weight),
                    amdahl_at_most_if_halved: amdahl(p, 2.0),
                    amdahl_at_most_if_removed: Some(amdahl(p, f64::INFINITY))
                        .filter(|x| x.is_finite()),
                    top_stacks: top
                        .into_iter()
                        .take(opts.top_stacks)
                        .map(|(st, t)| StackCount {
                            stack: st.to_string(),
                            samples: t.samples,
                            weight: t.weight,
                            share: share(t.weight, total.weight),
                        })
                        .collect(),
                }
            })
            .collect();
        classes.sort_by(|a, b| {
            b.self_weight
                .cmp(&a.self_weight)
                .then(a.class.cmp(&b.class))
        });
        classes
    }
}

/// The unnamed spin loops, heaviest first.
fn spin_loops(loops: BTreeMap<String, Tally>, total: Tally) -> Vec<SpinLoop> {
    let mut spin_loops: Vec<SpinLoop> = loops
        .into_iter()
        .map(|(name, t)| {
            let (binary, off) = name.rsplit_once("+0x").unwrap_or((&name, "0"));
            SpinLoop {
                name: format!("spin loop at {name}"),
                binary: binary.to_string(),
                file_offset: u64::from_str_radix(off, 16).unwrap_or(0),
                samples: t.samples,
                weight: t.weight,
                share: share(t.weight, total.weight),
            }
        })
        .collect();
    spin_loops.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.name.cmp(&b.name)));
    spin_loops
}

/// What a "spin loop at BINARY+0x.." is, told with the heaviest one.
fn spin_loop_note(l: &SpinLoop) -> String {
    format!(
        "a \"spin loop at {b}+0x..\" is server code without a symbol that waits with a spin \
         hint (PAUSE on x86, ISB/YIELD on ARM) in a short backward loop, recognised from the \
         instruction bytes: a latch's spin wait (InnoDB's is sized by innodb_spin_wait_delay \
         and innodb_sync_spin_loops). The number is its offset in the file {b} (here \
         0x{o:x}); the server's debug symbols would name the function",
        b = l.binary,
        o = l.file_offset
    )
}

/// Notes on what the script holds: several events, no call chains, periods (and the weight's
/// `unit`), samples without a symbol.
fn script_notes(notes: &mut Vec<String>, f: &fold::Folded, unit: &str, ev_name: Option<&str>) {
    let total = f.total;
    if f.events.len() > 1 {
        notes.push(format!(
            "the script holds several events: {}; only {} is folded (choose with --event NAME); \
             weights of different events are never added",
            events_list(&f.events),
            ev_name.unwrap_or("the first")
        ));
    }
    if f.max_depth <= 1 {
        notes.push(
            "no call chains were recorded (perf record without -g): each stack is the sampled \
             function alone, classes come from it, and the InnoDB / SQL-layer split goes by \
             function name only; record with -g for callers"
                .into(),
        );
    }
    if f.samples_with_period == 0 {
        notes.push(
            "the script carries no sample periods (an old perf, or `perf script -F` without \
             `period`): every sample weighs 1"
                .into(),
        );
    } else {
        if f.samples_with_period < total.samples {
            notes.push(format!(
                "{} of {} samples carry no period and weigh 1, as in inferno",
                total.samples - f.samples_with_period,
                total.samples
            ));
        }
        notes.push(format!(
            "shares are of the weight: each sample counts its period ({unit}), as `perf report` \
             and inferno weigh them; sample counts are given beside"
        ));
    }
    if f.no_symbol_samples > 0 {
        notes.push(format!(
            "{} of {} samples ({:.1}%) had no symbol at the sampled IP; install the server's \
             debug symbols (e.g. the -dbgsym package) so perf can name them; spin loops among \
             them were found from the instruction bytes",
            f.no_symbol_samples,
            total.samples,
            100.0 * share(f.no_symbol_samples, total.samples)
        ));
    }
}

/// The caveats every profile carries: too few samples (first), and what the speedups are.
fn caveat_notes(notes: &mut Vec<String>, total: Tally, too_few_samples: bool) {
    if too_few_samples {
        notes.insert(
            0,
            format!(
                "only {} samples, fewer than {}: every share here is coarse (one sample is {:.1}% \
                 of the profile); record longer or at a higher frequency before reading it",
                total.samples,
                diff::MIN_SAMPLES,
                100.0 / total.samples as f64
            ),
        );
    }
    notes.push(
        "speedups are upper bounds (Amdahl's law, docs/REFERENCE.md §9): the whole is at most \
         that much faster if the class's self share were halved or removed; sampling has skid \
         (the sampled IP can be an instruction or more past the one that used the time), so \
         treat shares as estimates"
            .to_string(),
    );
}

/// The profile document of folded stacks: classes, spin loops, notes and headline.
fn classify(
    mut tallies: Tallies,
    f: &fold::Folded,
    mut source: Source,
    mut notes: Vec<String>,
    opts: &Options,
) -> ProfileDoc {
    let total = f.total;
    let classes = tallies.class_shares(total, opts);
    let spin_loops = spin_loops(tallies.loops, total);
    let spin_loop_samples = spin_loops.iter().map(|l| l.samples).sum();
    if let Some(l) = spin_loops.first() {
        notes.push(spin_loop_note(l));
    }
    let event = f.event.clone();
    let unit = weight_unit(event.as_deref(), f.samples_with_period);
    let ev_name = event.clone().filter(|e| !e.is_empty());
    script_notes(&mut notes, f, &unit, ev_name.as_deref());
    let too_few_samples = total.samples < diff::MIN_SAMPLES;
    caveat_notes(&mut notes, total, too_few_samples);
    let spin_share = classes
        .iter()
        .find(|c| c.class == Class::InnodbSpin.id())
        .map_or(0.0, |c| c.self_share);
    let who = if source.kind == "perf-record" {
        "the server's CPU"
    } else {
        "the profiled CPU"
    };
    let headline = (spin_share > 0.0).then(|| {
        if too_few_samples {
            // Not a finding over too little data: the share is said, the doubt first.
            format!(
                "only {} samples, too few to be sure: {:.0}% of them are spin waiting in InnoDB \
                 latches; record longer or at a higher frequency before acting on it",
                total.samples,
                100.0 * spin_share
            )
        } else {
            format!(
                "{:.0}% of {who} is spin waiting in InnoDB latches: see `spinscope doctor`'s \
                 spin budget, which prices innodb_spin_wait_delay and innodb_sync_spin_loops on \
                 this CPU",
                100.0 * spin_share
            )
        }
    });
    source.event = ev_name;
    ProfileDoc {
        schema: SCHEMA.to_string(),
        source,
        samples: total.samples,
        too_few_samples,
        weight: total.weight,
        weight_unit: unit,
        events: f
            .events
            .iter()
            .map(|(e, n)| EventSeen {
                event: e.clone(),
                samples: *n,
            })
            .collect(),
        call_chains: f.max_depth > 1,
        no_symbol_samples: f.no_symbol_samples,
        spin_loop_samples,
        spin_share,
        headline,
        classes,
        spin_loops,
        spin_by_time: None,
        notes,
    }
}

fn add(t: &mut Tally, o: Tally) {
    t.samples += o.samples;
    t.weight = t.weight.saturating_add(o.weight);
}

/// Folded lines as text (`stack weight\n`, as inferno writes them), for `--folded`.
pub fn folded_text(folded: &[(String, Tally)]) -> String {
    let len = folded.iter().map(|(st, _)| st.len() + 22).sum();
    let mut s = String::with_capacity(len);
    let mut digits = [0u8; 20];
    for (st, t) in folded {
        s.push_str(st);
        s.push(' ');
        let mut w = t.weight;
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (w % 10) as u8;
            w /= 10;
            if w == 0 {
                break;
            }
        }
        // ASCII digits only.
        s.push_str(std::str::from_utf8(&digits[i..]).unwrap_or("0"));
        s.push('\n');
    }
    s
}

/// Every perf script under `tests/fixtures/perf` (`.perf`, `.txt`), for the unit tests.
#[cfg(test)]
pub(crate) fn perf_fixture_files() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf");
    let (mut files, mut todo) = (Vec::new(), vec![dir]);
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "perf" || x == "txt") {
                files.push(p);
            }
        }
    }
    files
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
        assert_eq!(
            stack_class(&["do_command", "mysql_update", "lock_tables"]),
            Class::Server
        );
    }

    /// A perf script text of `n` samples, every one in an InnoDB spin loop.
    fn spin_script(n: usize) -> String {
        (0..n)
            .map(|i| {
                format!(
                    "mariadbd 10 11 {}.000001: 1 cpu-clock:\n\
                     \t aaa ut_delay+0x10 (/usr/sbin/mariadbd)\n\
                     \t bbb do_command+0x20 (/usr/sbin/mariadbd)\n\n",
                    100 + i
                )
            })
            .collect()
    }

    #[test]
    fn too_few_samples_put_the_doubt_before_the_headline() {
        let few = analyse(&spin_script(50), Source::script(None), &Options::default()).unwrap();
        let d = &few.doc;
        assert!(d.too_few_samples && d.spin_share > 0.9, "{d:?}");
        let h = d.headline.as_deref().unwrap();
        assert!(h.starts_with("only 50 samples, too few"), "{h}");
        let t = render::text(d);
        let warn = t.find("too few samples (50)").expect("warning shown");
        let head = t.find("only 50 samples").expect("headline shown");
        assert!(warn < head, "the warning comes first:\n{t}");
        let many = analyse(&spin_script(300), Source::script(None), &Options::default()).unwrap();
        let h = many.doc.headline.as_deref().unwrap();
        assert!(
            h.starts_with("100% of the profiled CPU is spin waiting"),
            "{h}"
        );
        assert!(!render::text(&many.doc).contains("too few"));
    }

    /// The source of a perf script text with nothing else known.
    /// Stacks classed from their names' facts (frame ids) count exactly as stacks classed
    /// from their text: every perf fixture of the project, and a script whose comm and frame
    /// names hold `;` (classed by text), with a leaf named as a spin loop.
    #[test]
    fn classing_by_frame_ids_counts_as_classing_by_text() {
        let mut scripts: Vec<Vec<u8>> = vec![
            b"my;comm 1/2 1.0: 5 cycles:\n\t 40 [unknown] (/usr/sbin/m)\n\
              \t 41 ut_delay+0x3 (/usr/sbin/m)\n\t 42 sync_array_wait_event (/usr/sbin/m)\n\n\
              m 1/2 1.1: 7 cycles:\n\t 40 [unknown] (/usr/sbin/m)\n\t 43 [unknown] (/x/a;b)\n\
              \t 44 row_ins+0x1 (/usr/sbin/m)\n\n\
              m 1/2 1.2: 9 cycles:\n\t 40 [unknown] (/usr/sbin/m)\n\t 45 start_thread (/lib/c)\n\n\
              m 1/2 1.3: 11 cycles:\n\t ffff1 schedule ([kernel.kallsyms])\n\
              \t 46 futex_wait (/lib/c)\n\n"
                .to_vec(),
        ];
        for p in perf_fixture_files() {
            scripts.push(std::fs::read(p).unwrap());
        }
        let mut compared = 0;
        for t in &scripts {
            let Ok(f) = fold::fold(&t[..], fold::FoldOptions::default()) else {
                continue;
            };
            for names in [
                HashMap::new(),
                HashMap::from([(0, "[spin loop at m+0x40]".to_string())]),
            ] {
                let (folded, ids) = f.resolve_ids(&names);
                let a = Tallies::of(&folded, &ids, &f, &names);
                let mut b = Tallies::empty();
                let mut cache = ClassCache::default();
                for (s, w) in &folded {
                    b.add_by_text(&mut cache, s, *w);
                }
                assert_eq!(a.self_t, b.self_t);
                assert_eq!(a.incl_t, b.incl_t);
                assert_eq!(a.stacks, b.stacks);
                assert_eq!(a.loops, b.loops);
                assert_eq!(a.sync_array, b.sync_array);
                compared += 1;
            }
        }
        assert!(compared >= 40, "{compared} scripts compared");
        // The first script: its `;` stacks went by text, its spin-loop leaf was counted.
        let f = fold::fold(&scripts[0][..], fold::FoldOptions::default()).unwrap();
        let names = HashMap::from([(0, "[spin loop at m+0x40]".to_string())]);
        let (folded, ids) = f.resolve_ids(&names);
        let a = Tallies::of(&folded, &ids, &f, &names);
        assert!(a.sync_array);
        assert_eq!(a.loops["m+0x40"].samples, 3);
        assert!(folded
            .iter()
            .any(|(s, _)| s == "my;comm;sync_array_wait_event;ut_delay;[spin loop at m+0x40]"));
    }

    /// A stripped binary's unnamed leaf: named from the debug file placed by build-id under the
    /// debug root; without it, one note says how to get it, and pprof names the frame by the
    /// binary's file offset either way.
    #[test]
    fn stripped_leaves_named_from_a_debug_file_or_by_offset() {
        let dir = tempfile::tempdir().unwrap();
        let Some((bin, dbg)) = elf::tests::stripped_test_binary(dir.path()) else {
            return;
        };
        let at = elf::Symbols::open(&dbg)
            .unwrap()
            .address_of("spin_here")
            .unwrap();
        let off = elf::Binary::open(&bin).unwrap().file_offset(at).unwrap();
        let text: String = (0..3)
            .map(|i| {
                format!(
                    "t 1/1 1.{i}: 1000 cpu-clock:\n\t {:x} [unknown] ({b})\n\
                     \t 10 main+0x1 ({b})\n\n",
                    at + 1,
                    b = bin.display()
                )
            })
            .collect();
        let root = dir.path().join("debug");
        let opts = Options {
            pprof: true,
            debug_root: root.clone(),
            ..Options::default()
        };
        let without = analyse(&text, Source::script(None), &opts).unwrap();
        assert_eq!(without.folded[0].0, "t;main;[t]");
        let note = without
            .doc
            .notes
            .iter()
            .find(|n| n.contains("no debug file for its build-id"))
            .expect("a note on how to get the debug file");
        assert!(
            note.contains("-dbgsym") && note.contains("DEBUGINFOD_URLS"),
            "{note}"
        );
        let p = without.pprof.as_ref().unwrap();
        let leaf = p.frames.iter().find(|f| f.binary.is_some()).unwrap();
        assert_eq!(leaf.function, format!("t+0x{:x}", off + 1));
        assert_eq!(leaf.file_offset, Some(off + 1));

        let id = elf::build_id(&bin).unwrap();
        let place = elf::debug_file_path(&root, &id).unwrap();
        std::fs::create_dir_all(place.parent().unwrap()).unwrap();
        std::fs::copy(&dbg, &place).unwrap();
        let with = analyse(&text, Source::script(None), &opts).unwrap();
        assert_eq!(with.folded[0].0, "t;main;spin_here");
        assert!(
            with.doc
                .notes
                .iter()
                .any(|n| n.contains("named from its separate debug file")),
            "{:?}",
            with.doc.notes
        );
        let p = with.pprof.as_ref().unwrap();
        let leaf = p.frames.iter().find(|f| f.binary.is_some()).unwrap();
        // The same offset, now with the name.
        assert_eq!(leaf.function, "spin_here");
        assert_eq!(leaf.file_offset, Some(off + 1));
    }

    #[test]
    fn empty_and_garbled_are_bad_input() {
        let src = Source::script(None);
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
