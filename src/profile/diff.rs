//! `profile --diff`: two profiles compared as shares of their own totals, the way `perf diff`
//! compares a baseline with a second recording. Owns the `spinscope.profile-diff/1` document
//! and its builder from two sets of folded stacks (pure: no I/O).
//!
//! Semantics (perf diff's): each input is normalised to its own total weight, so recordings of
//! different lengths or frequencies compare; `before` is the baseline; a row's `change` is
//! `after_share - before_share` in share points (0.05 = 5 points of the whole profile); rows are
//! sorted by the size of the change, largest first.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::rules::Class;

pub const DIFF_SCHEMA: &str = "spinscope.profile-diff/1";

/// Fewer samples than this and a profile's shares are too coarse to compare (one sample is
/// more than 0.5% of it; the sampling noise of a 10% share is +-4 points at 95%).
pub const MIN_SAMPLES: u64 = 200;

/// One input of the diff.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DiffInput {
    /// The input as named on the command line.
    pub name: String,
    /// "folded", "perf-script" or "profile-json".
    pub format: String,
    /// Samples, where the input says (a folded file carries weights only).
    pub samples: Option<u64>,
    /// The total weight every share of this input is a share of.
    pub weight: u64,
    /// What a unit of weight is ("ns", "cycles", "samples", "folded count").
    pub weight_unit: String,
    /// The event folded, where known.
    pub event: Option<String>,
    /// Distinct stacks in the input (0 for a profile JSON, which keeps classes only).
    pub stacks: u64,
    /// Whether the stacks have callers (false: one frame per sample, classes go by name only).
    pub call_chains: bool,
    /// Fewer than [`MIN_SAMPLES`] samples (or, without a sample count, fewer stacks than that
    /// and a total weight below it): its shares are too coarse to compare.
    pub too_few_samples: bool,
}

/// One class's share before and after.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClassDiff {
    /// Class id as in `spinscope.profile/2` (`innodb_spin`, `os_wait`, `innodb`, `server`, ...).
    pub class: String,
    pub label: String,
    /// Self share of the class in each input (the class of the frame nearest the leaf).
    pub before_share: f64,
    pub after_share: f64,
    /// `after_share - before_share`, in share points.
    pub change: f64,
    /// Half-width of a 95% interval of the change from sampling alone, when both inputs give
    /// sample counts (normal approximation of two proportions); `null` otherwise.
    pub noise_95: Option<f64>,
}

/// One function's share before and after.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionDiff {
    /// The frame name as folded (`_[k]`: kernel).
    pub function: String,
    /// The class of most of its self weight (both inputs together).
    pub class: String,
    /// Self share (samples where it is the leaf): `perf diff`'s Baseline and Delta column.
    pub before_share: f64,
    pub after_share: f64,
    pub change: f64,
    /// Inclusive share (anywhere on the stack, counted once per stack).
    pub before_inclusive: f64,
    pub after_inclusive: f64,
    pub noise_95: Option<f64>,
}

/// One stack's share before and after (the differential flame graph's input).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StackDiff {
    pub stack: String,
    pub before_share: f64,
    pub after_share: f64,
    pub change: f64,
}

/// Sizes of what was compared and what is shown.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DiffTotals {
    /// Distinct functions (frame names) in either input, and how many rows `functions` keeps.
    pub functions: u64,
    pub functions_shown: u64,
    /// Distinct stacks in either input, and how many rows `stacks` keeps.
    pub stacks: u64,
    pub stacks_shown: u64,
    /// Sum of the absolute class changes / 2: the share of the profile that moved class.
    pub moved_share: f64,
}

/// The `spinscope.profile-diff/1` document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProfileDiff {
    pub schema: String,
    /// The baseline.
    pub before: DiffInput,
    pub after: DiffInput,
    /// Every class present in either input, by absolute change, largest first.
    pub classes: Vec<ClassDiff>,
    /// Functions by absolute self change, largest first (the top ones; see `totals`).
    pub functions: Vec<FunctionDiff>,
    /// Stacks by absolute change, largest first (the top ones; see `totals`).
    pub stacks: Vec<StackDiff>,
    pub totals: DiffTotals,
    /// The class that fell most and the one that grew most (ids), when any changed.
    pub largest_fall: Option<String>,
    pub largest_rise: Option<String>,
    /// False when a comparison over these inputs would mislead (an input without samples or
    /// with too few); the rows are still given, the verdict fields are null.
    pub valid: bool,
    pub notes: Vec<String>,
}

/// One side of the diff: its description and its folded stacks (`comm;frame;...;leaf`,
/// weight). Stacks may repeat; they are added.
#[derive(Debug, Clone)]
pub struct Side {
    pub input: DiffInput,
    pub stacks: Vec<(String, u64)>,
    /// Self weight per class when the input gives it (a profile JSON keeps classes and only
    /// its top stacks): then classes come from here and every share is of `input.weight`.
    pub classes: Option<BTreeMap<Class, u64>>,
}

/// How many rows to keep.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub functions: usize,
    pub stacks: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            functions: 30,
            stacks: 500,
        }
    }
}

fn share(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        n as f64 / total as f64
    }
}

/// 95% half-width of the difference of two sampled proportions.
fn noise(p1: f64, n1: Option<u64>, p2: f64, n2: Option<u64>) -> Option<f64> {
    let (n1, n2) = (n1.filter(|&n| n > 0)?, n2.filter(|&n| n > 0)?);
    let v = p1 * (1.0 - p1) / n1 as f64 + p2 * (1.0 - p2) / n2 as f64;
    Some(1.96 * v.max(0.0).sqrt())
}

/// Weights of one side, by stack, by class (self), by function (self and inclusive).
#[derive(Default)]
struct Tallies {
    total: u64,
    stacks: HashMap<String, u64>,
    classes: BTreeMap<Class, u64>,
    self_fn: HashMap<String, u64>,
    incl_fn: HashMap<String, u64>,
    /// (function, class) -> self weight, to name each function's main class.
    fn_class: HashMap<(String, Class), u64>,
}

fn tally(side: &Side) -> Tallies {
    let mut t = Tallies::default();
    for (st, w) in &side.stacks {
        *t.stacks.entry(st.clone()).or_default() += w;
    }
    let mut cache = super::ClassCache::default();
    for (st, &w) in &t.stacks {
        t.total = t.total.saturating_add(w);
        let frames: Vec<&str> = st.split(';').skip(1).collect();
        let c = cache.stack(&frames);
        *t.classes.entry(c).or_default() += w;
        let leaf = frames.last().copied().unwrap_or(st.as_str());
        *t.self_fn.entry(leaf.to_string()).or_default() += w;
        *t.fn_class.entry((leaf.to_string(), c)).or_default() += w;
        let mut seen = HashSet::new();
        for f in &frames {
            if seen.insert(*f) {
                *t.incl_fn.entry((*f).to_string()).or_default() += w;
            }
        }
    }
    if let Some(c) = &side.classes {
        t.classes = c.clone();
        t.total = side.input.weight;
    }
    t
}

fn by_abs_change<T>(v: &mut [T], change: impl Fn(&T) -> f64, name: impl Fn(&T) -> &str) {
    v.sort_by(|a, b| {
        change(b)
            .abs()
            .total_cmp(&change(a).abs())
            .then_with(|| name(a).cmp(name(b)))
    });
}

/// Build the diff of `before` (the baseline) and `after`.
pub fn build(before: Side, after: Side, limits: Limits) -> ProfileDiff {
    let (b, a) = (tally(&before), tally(&after));
    let (nb, na) = (before.input.samples, after.input.samples);
    let classes = class_rows(&b, &a, nb, na);
    let functions = function_rows(&b, &a, nb, na);
    let stacks = stack_rows(&b, &a);
    let moved_share = classes.iter().map(|c| c.change.abs()).sum::<f64>() / 2.0;
    let totals = DiffTotals {
        functions: functions.len() as u64,
        functions_shown: functions.len().min(limits.functions) as u64,
        stacks: stacks.len() as u64,
        stacks_shown: stacks.len().min(limits.stacks) as u64,
        moved_share,
    };
    let partial = [&before, &after]
        .iter()
        .filter(|s| s.classes.is_some())
        .map(|s| s.input.name.clone())
        .collect::<Vec<_>>();
    let mut d = from_rows(
        before.input,
        after.input,
        classes,
        functions.into_iter().take(limits.functions).collect(),
        stacks.into_iter().take(limits.stacks).collect(),
        totals,
    );
    for name in partial {
        d.notes.push(format!(
            "{name}: a profile JSON keeps its classes and only its top stacks: class shares are \
             exact, function and stack shares are lower bounds; diff the folded files or perf \
             scripts for all of them"
        ));
    }
    d
}

impl ProfileDiff {
    /// Keep the first `limits` rows (they are sorted); the totals keep the full counts.
    pub fn truncate(&mut self, limits: Limits) {
        self.functions.truncate(limits.functions);
        self.stacks.truncate(limits.stacks);
        self.totals.functions_shown = self.functions.len() as u64;
        self.totals.stacks_shown = self.stacks.len() as u64;
    }
}

/// The document from its rows: validity, verdict fields and notes. Rows come sorted.
pub fn from_rows(
    mut before: DiffInput,
    mut after: DiffInput,
    classes: Vec<ClassDiff>,
    functions: Vec<FunctionDiff>,
    stacks: Vec<StackDiff>,
    totals: DiffTotals,
) -> ProfileDiff {
    let mut notes = Vec::new();
    for i in [&mut before, &mut after] {
        i.too_few_samples = match i.samples {
            Some(n) => n < MIN_SAMPLES,
            None => i.weight == 0,
        };
        if i.weight == 0 {
            notes.push(format!("{}: no samples; nothing to compare", i.name));
        } else if i.too_few_samples {
            notes.push(format!(
                "{}: {} samples, fewer than {MIN_SAMPLES}: its shares are too coarse to compare; \
                 record longer or at a higher frequency",
                i.name,
                i.samples.unwrap_or(0)
            ));
        }
    }
    let valid = !before.too_few_samples && !after.too_few_samples;
    if before.event.is_some() && after.event.is_some() && before.event != after.event {
        notes.push(format!(
            "the inputs sampled different events ({} and {}): shares compare, weights do not",
            before.event.as_deref().unwrap_or("?"),
            after.event.as_deref().unwrap_or("?")
        ));
    }
    if before.call_chains != after.call_chains {
        notes.push(
            "one input has call chains and the other not: classes of the one without go by the \
             sampled function's name alone"
                .into(),
        );
    }
    if classes.iter().all(|c| c.noise_95.is_none()) {
        notes.push(
            "sampling noise not given: an input without sample counts (a folded file); changes \
             of a point or two may be noise"
                .into(),
        );
    }
    let pick = |fall: bool| {
        classes
            .iter()
            .filter(|c| if fall { c.change < 0.0 } else { c.change > 0.0 })
            .max_by(|x, y| x.change.abs().total_cmp(&y.change.abs()))
            .map(|c| c.class.clone())
    };
    let (largest_fall, largest_rise) = if valid {
        (pick(true), pick(false))
    } else {
        (None, None)
    };
    ProfileDiff {
        schema: DIFF_SCHEMA.to_string(),
        before,
        after,
        classes,
        functions,
        stacks,
        totals,
        largest_fall,
        largest_rise,
        valid,
        notes,
    }
}

fn class_rows(b: &Tallies, a: &Tallies, nb: Option<u64>, na: Option<u64>) -> Vec<ClassDiff> {
    let mut rows: Vec<ClassDiff> = Class::ALL
        .iter()
        .filter(|c| b.classes.contains_key(c) || a.classes.contains_key(c))
        .map(|&c| {
            let pb = share(b.classes.get(&c).copied().unwrap_or(0), b.total);
            let pa = share(a.classes.get(&c).copied().unwrap_or(0), a.total);
            ClassDiff {
                class: c.id().to_string(),
                label: c.label().to_string(),
                before_share: pb,
                after_share: pa,
                change: pa - pb,
                noise_95: noise(pb, nb, pa, na),
            }
        })
        .collect();
    by_abs_change(&mut rows, |r| r.change, |r| &r.class);
    rows
}

fn function_rows(b: &Tallies, a: &Tallies, nb: Option<u64>, na: Option<u64>) -> Vec<FunctionDiff> {
    let names: HashSet<&String> = b.incl_fn.keys().chain(a.incl_fn.keys()).collect();
    let mut main_class: HashMap<&str, (Class, u64)> = HashMap::new();
    for ((f, c), w) in b.fn_class.iter().chain(a.fn_class.iter()) {
        let e = main_class.entry(f.as_str()).or_insert((*c, 0));
        // Weights of two inputs are in different units; shares are not, but a function's
        // main class is a rough label, so raw weights are good enough to pick it.
        if *w > e.1 || (*w == e.1 && *c < e.0) {
            *e = (*c, *w);
        }
    }
    let mut rows: Vec<FunctionDiff> = names
        .into_iter()
        .map(|f| {
            let pb = share(b.self_fn.get(f).copied().unwrap_or(0), b.total);
            let pa = share(a.self_fn.get(f).copied().unwrap_or(0), a.total);
            let class = main_class
                .get(f.as_str())
                .map(|x| x.0)
                .or_else(|| super::rules::frame_class(f))
                .unwrap_or_else(|| super::rules::rest_class(&[f.as_str()]));
            FunctionDiff {
                function: f.clone(),
                class: class.id().to_string(),
                before_share: pb,
                after_share: pa,
                change: pa - pb,
                before_inclusive: share(b.incl_fn.get(f).copied().unwrap_or(0), b.total),
                after_inclusive: share(a.incl_fn.get(f).copied().unwrap_or(0), a.total),
                noise_95: noise(pb, nb, pa, na),
            }
        })
        .collect();
    by_abs_change(&mut rows, |r| r.change, |r| &r.function);
    rows
}

fn stack_rows(b: &Tallies, a: &Tallies) -> Vec<StackDiff> {
    let names: HashSet<&String> = b.stacks.keys().chain(a.stacks.keys()).collect();
    let mut rows: Vec<StackDiff> = names
        .into_iter()
        .map(|s| {
            let pb = share(b.stacks.get(s).copied().unwrap_or(0), b.total);
            let pa = share(a.stacks.get(s).copied().unwrap_or(0), a.total);
            StackDiff {
                stack: s.clone(),
                before_share: pb,
                after_share: pa,
                change: pa - pb,
            }
        })
        .collect();
    by_abs_change(&mut rows, |r| r.change, |r| &r.stack);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(name: &str, samples: Option<u64>, stacks: &[(&str, u64)]) -> Side {
        Side {
            input: DiffInput {
                name: name.into(),
                format: "folded".into(),
                samples,
                weight: stacks.iter().map(|s| s.1).sum(),
                weight_unit: "samples".into(),
                event: None,
                stacks: stacks.len() as u64,
                call_chains: true,
                too_few_samples: false,
            },
            stacks: stacks.iter().map(|(s, w)| (s.to_string(), *w)).collect(),
            classes: None,
        }
    }

    #[test]
    fn shares_of_own_totals_sorted_by_absolute_change() {
        let b = side(
            "before",
            Some(1000),
            &[
                ("mariadbd;do_command;row_ins;ut_delay", 600),
                ("mariadbd;do_command;row_ins", 200),
                ("mariadbd;do_command;dispatch_command", 200),
            ],
        );
        // Twice the weight overall: shares, not weights, are compared.
        let a = side(
            "after",
            Some(2000),
            &[
                ("mariadbd;do_command;row_ins;ut_delay", 200),
                ("mariadbd;do_command;row_ins", 1000),
                ("mariadbd;do_command;dispatch_command", 800),
            ],
        );
        let d = build(b, a, Limits::default());
        assert_eq!(d.schema, DIFF_SCHEMA);
        assert!(d.valid);
        assert_eq!(d.classes[0].class, "innodb_spin");
        assert!((d.classes[0].before_share - 0.6).abs() < 1e-12);
        assert!((d.classes[0].after_share - 0.1).abs() < 1e-12);
        assert!((d.classes[0].change + 0.5).abs() < 1e-12);
        assert_eq!(d.largest_fall.as_deref(), Some("innodb_spin"));
        assert_eq!(d.largest_rise.as_deref(), Some("innodb"));
        assert_eq!(d.functions[0].function, "ut_delay");
        assert!((d.functions[0].before_inclusive - 0.6).abs() < 1e-12);
        let ri = d
            .functions
            .iter()
            .find(|f| f.function == "row_ins")
            .unwrap();
        assert!((ri.before_inclusive - 0.8).abs() < 1e-12);
        assert!((ri.after_inclusive - 0.6).abs() < 1e-12);
        assert!(d.classes[0].noise_95.unwrap() > 0.0);
        assert!((d.totals.moved_share - 0.5).abs() < 1e-12);
        let sum: f64 = d.classes.iter().map(|c| c.change).sum();
        assert!(sum.abs() < 1e-12);
        let back: ProfileDiff = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn too_few_samples_is_not_a_verdict() {
        let b = side("b", Some(3), &[("m;ut_delay", 3)]);
        let a = side("a", Some(1000), &[("m;row_ins", 1000)]);
        let d = build(b, a, Limits::default());
        assert!(!d.valid);
        assert!(d.before.too_few_samples);
        assert_eq!(d.largest_fall, None);
        assert!(d.notes.iter().any(|n| n.contains("too coarse")));
    }
}
