//! Stack folding of `perf script` text in one streaming pass: the same folded stacks and the same
//! weights as inferno's perf collapser (each sample weighted by its period, as `perf report`
//! does; a sample without a period weighs 1), plus what spinscope needs besides: the sample count
//! next to the weight of every stack, the events seen, whether call chains were recorded, and the
//! leaf frames without a symbol (kept apart so their instruction bytes can be examined later).
//!
//! Bytes that are not UTF-8 are replaced (U+FFFD) line by line; nothing here indexes a string at
//! a byte that could split a character, so no input panics. Input is read line by line with a cap
//! on line length and total size; memory grows with distinct stacks, not with the input.

use std::collections::HashMap;
use std::io::Read;

/// Longest line accepted (a frame line is a few hundred bytes; a C++ template symbol a few KB).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What [`Folded::resolve_slots`] gives: the named stacks with their tallies, each stack's frame
/// ids, and for each timeline slot the index of its stack.
pub type ResolvedSlots<'s> = (Vec<(String, Tally)>, Vec<&'s [u32]>, Vec<u32>);

/// Options of a fold.
#[derive(Debug, Clone)]
pub struct FoldOptions {
    /// Fold only this event (`cycles`, `cpu-clock`, ...); `None`: the first one seen.
    pub event: Option<String>,
    /// Mark kernel frames with `_[k]` (inferno's `--kernel`).
    pub annotate_kernel: bool,
    /// Keep leaf frames without a symbol in a file-backed DSO apart (see [`Folded::leaves`]).
    pub keep_unknown_leaves: bool,
    /// Refuse input longer than this many bytes.
    pub max_bytes: u64,
}

impl Default for FoldOptions {
    fn default() -> Self {
        FoldOptions {
            event: None,
            annotate_kernel: true,
            keep_unknown_leaves: true,
            max_bytes: u64::MAX,
        }
    }
}

/// Samples and weight of one stack (or class, or event).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub samples: u64,
    pub weight: u64,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.samples = self.samples.saturating_add(o.samples);
        self.weight = self.weight.saturating_add(o.weight);
    }
}

/// A leaf frame without a symbol, kept apart in the folded stacks as `\u{1}<index>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownLeaf {
    pub dso: String,
    pub ip: u64,
    /// The name inferno gives it (`[mariadbd]`).
    pub default_name: String,
}

/// Why a fold stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoldError {
    Read(String),
    TooLong { max_bytes: u64 },
    LineTooLong { line: u64 },
}

/// The hash of the fold's tables: aHash with its fixed keys (keys come from a local file, so
/// hash flooding is not a concern; fixed keys keep runs repeatable). A hand-made
/// multiply-rotate hash was here before: its low bits, which pick the bucket, mixed the end of
/// a key poorly, and keys that share their ends (every frame line of one binary ends in the
/// same DSO path) collided, so probing compared keys byte by byte (issue 28).
pub type FoldHash = std::hash::BuildHasherDefault<ahash::AHasher>;

pub type StackMap = HashMap<String, Tally, FoldHash>;

/// What one pass found.
#[derive(Debug, Default)]
pub struct Folded {
    /// Stacks as name ids, comm first, leaf last (a leaf may be `LEAF_BIT | i` for
    /// `leaves[i]`) -> samples and weight. Their text is written once, by
    /// [`Folded::resolve`] (see [`Folded::stack_map`] for the text with placeholders).
    stacks: HashMap<Vec<u32>, (Tally, u32), FoldHash>,
    /// The distinct frame names (and comms), by id.
    names: Vec<String>,
    pub leaves: Vec<UnknownLeaf>,
    /// The event folded (`None`: no event line named one).
    pub event: Option<String>,
    /// Every event seen, in order of appearance, with its event lines.
    pub events: Vec<(String, u64)>,
    /// Totals of the folded stacks.
    pub total: Tally,
    /// Folded samples whose event line carried a period.
    pub samples_with_period: u64,
    /// Most frame lines seen in one sample (1: no call chains).
    pub max_depth: usize,
    /// Folded samples whose leaf frame has no symbol.
    pub no_symbol_samples: u64,
    /// Bytes and lines read; lines that were event lines, frame lines, comments; and the first
    /// line that was neither (number, text).
    pub bytes: u64,
    pub lines: u64,
    pub event_lines: u64,
    pub frame_lines: u64,
    pub comment_lines: u64,
    pub odd_lines: u64,
    pub first_odd: Option<(u64, String)>,
    /// Samples by time: (10 ms bucket of perf's timestamp, stack slot) -> samples and weight,
    /// for samples whose event line carried a time. A stack's slot is given beside it by
    /// [`Folded::resolve_slots`]. Grows with distinct stacks per 10 ms, not with samples.
    pub timeline: HashMap<(u64, u32), Tally, FoldHash>,
}

/// Width of a [`Folded::timeline`] bucket, in ns.
pub const TIME_BUCKET_NS: u64 = 10_000_000;

impl Folded {
    /// The folded stacks with placeholders replaced: `names[i]` (when given) or the default name
    /// of `leaves[i]`; sorted by stack. Each distinct stack's text is written here, once:
    /// stacks whose texts are equal (two leaves given the same name; a comm with a `;`) are
    /// merged after the sort, where they are neighbours.
    pub fn resolve(&self, names: &HashMap<usize, String>) -> Vec<(String, Tally)> {
        self.resolve_ids(names).0
    }

    /// [`Folded::resolve`], and beside each stack the frame ids of one of the stacks merged
    /// into it (comm first; name them with [`Folded::frame_name`]), so that a caller can work
    /// per distinct name rather than per frame of every stack's text.
    pub fn resolve_ids<'s>(
        &'s self,
        names: &HashMap<usize, String>,
    ) -> (Vec<(String, Tally)>, Vec<&'s [u32]>) {
        let (stacks, ids, _) = self.resolve_slots(names);
        (stacks, ids)
    }

    /// [`Folded::resolve_ids`], and for each slot of [`Folded::timeline`] the index of the
    /// stack it was merged into.
    pub fn resolve_slots<'s>(&'s self, names: &HashMap<usize, String>) -> ResolvedSlots<'s> {
        let mut v: Vec<(String, Tally, &[u32], u32)> = Vec::with_capacity(self.stacks.len());
        for (ids, (t, slot)) in &self.stacks {
            let mut text = String::with_capacity(self.text_len(ids));
            self.push_text(&mut text, ids, |i| self.leaf_name(i, names));
            v.push((text, *t, ids.as_slice(), *slot));
        }
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut slot_to_stack = vec![0u32; self.stacks.len()];
        let mut stacks: Vec<(String, Tally)> = Vec::with_capacity(v.len());
        let mut ids = Vec::with_capacity(v.len());
        for (text, t, i, slot) in v {
            match stacks.last_mut() {
                Some(kept) if kept.0 == text => kept.1.add(t),
                _ => {
                    stacks.push((text, t));
                    ids.push(i);
                }
            }
            slot_to_stack[slot as usize] = stacks.len() as u32 - 1;
        }
        (stacks, ids, slot_to_stack)
    }

    /// The name of unnamed leaf `i` in [`Folded::resolve`]: `names[i]` or its default name.
    fn leaf_name<'s>(&'s self, i: usize, names: &'s HashMap<usize, String>) -> &'s str {
        names
            .get(&i)
            .map(String::as_str)
            .or_else(|| self.leaves.get(i).map(|l| l.default_name.as_str()))
            .unwrap_or("[unknown]")
    }

    /// The distinct frame names (and comms), by id.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The unnamed leaf a frame id of [`Folded::resolve_ids`] stands for, if it is one.
    pub fn leaf_index(id: u32) -> Option<usize> {
        (id & LEAF_BIT != 0).then_some((id & !LEAF_BIT) as usize)
    }

    /// The text of a frame id of [`Folded::resolve_ids`], as [`Folded::resolve`] writes it.
    pub fn frame_name<'s>(&'s self, id: u32, names: &'s HashMap<usize, String>) -> &'s str {
        match Folded::leaf_index(id) {
            Some(i) => self.leaf_name(i, names),
            None => &self.names[id as usize],
        }
    }

    /// The folded stacks keyed by text, a leaf without a symbol written `\u{1}<index>` (its
    /// index in [`Folded::leaves`]): what a fold found, before [`Folded::resolve`] names leaves.
    pub fn stack_map(&self) -> StackMap {
        let mut m = StackMap::default();
        for (ids, (t, _)) in &self.stacks {
            let mut text = String::new();
            self.push_text(&mut text, ids, |i| format!("\u{1}{i}"));
            m.entry(text).or_default().add(*t);
        }
        m
    }

    /// The length of a stack's text, its unnamed leaf counted as 16 bytes.
    fn text_len(&self, ids: &[u32]) -> usize {
        ids.iter()
            .map(|&id| match self.names.get(id as usize) {
                Some(n) if id & LEAF_BIT == 0 => n.len() + 1,
                _ => 16,
            })
            .sum()
    }

    fn push_text<L: AsRef<str>>(&self, text: &mut String, ids: &[u32], leaf: impl Fn(usize) -> L) {
        for (n, &id) in ids.iter().enumerate() {
            if n > 0 {
                text.push(';');
            }
            if id & LEAF_BIT != 0 {
                text.push_str(leaf((id & !LEAF_BIT) as usize).as_ref());
            } else {
                text.push_str(&self.names[id as usize]);
            }
        }
    }
}

#[derive(PartialEq, Clone, Copy)]
enum Filter {
    Keep,
    Skip,
}

/// Marks a frame id that stands for `leaves[id & !LEAF_BIT]`.
pub const LEAF_BIT: u32 = 1 << 31;
const NO_SLOT: u32 = u32::MAX;
/// Frame lines looked up before the memo is judged: kept if at least a quarter were found.
const MEMO_TRIAL: u64 = 1 << 16;
/// Bytes of distinct frame lines remembered (beyond it, new lines are parsed every time).
const MEMO_CAP_BYTES: usize = 16 << 20;

/// What one frame line contributes, whatever sample it is in (perf repeats the same lines).
struct FrameMemo {
    /// A frame that inferno drops (`(...)` symbol): counted as a frame line, nothing more.
    skip: bool,
    unknown: bool,
    /// A leaf candidate without a symbol: (module, ip, default name), and its slot once used.
    leaf: Option<Box<(String, u64, String)>>,
    leaf_slot: u32,
    /// Name ids in `State::memo_ids[ids.0..ids.1]`, pushed leaf first.
    ids: (u32, u32),
}

/// The state machine of one pass (inferno's perf collapser, rewritten around frame ids: each
/// distinct frame line is parsed once, each distinct name stored once, stacks keyed by ids).
struct State {
    opt: FoldOptions,
    event_filter: Option<String>,
    in_event: bool,
    filter: Filter,
    pname: String,
    pname_id: u32,
    java: bool,
    period: Option<u64>,
    /// Scratch for the names of one frame line.
    names: String,
    spans: Vec<(u32, u32)>,
    /// Frame ids of the current sample, leaf first, each line's inlined chain reversed.
    frames: Vec<u32>,
    depth: usize,
    leaf_unknown: bool,
    key: Vec<u32>,
    name_ids: HashMap<String, u32, FoldHash>,
    name_list: Vec<String>,
    memo: HashMap<Box<[u8]>, u32, FoldHash>,
    memo_bytes: usize,
    memo_cap: usize,
    /// Frame-line lookups in the memo and how many found the line: when few lines repeat
    /// (deep, mostly distinct stacks whose offsets differ), the memo only costs, so it is
    /// switched off and emptied (see [`MEMO_TRIAL`]).
    memo_lookups: u64,
    memo_hits: u64,
    memo_off: bool,
    memos: Vec<FrameMemo>,
    memo_ids: Vec<u32>,
    /// Symbol and module (offset stripped) -> name ids in `sym_ids`: frame lines that differ
    /// only in address and offset (the same function sampled at another instruction) give the
    /// same names, so those are worked out once per symbol even when the line memo is off.
    /// Bounded by `memo_cap` bytes of keys, as the line memo.
    sym_memo: HashMap<Box<[u8]>, (u32, u32), FoldHash>,
    sym_ids: Vec<u32>,
    sym_key: Vec<u8>,
    sym_bytes: usize,
    /// Modules by id, for the symbol memo's keys; the last one looked up is kept at hand
    /// (consecutive frame lines are mostly in the same module).
    module_ids: HashMap<String, u32, FoldHash>,
    last_module: (String, u32),
    stacks: HashMap<Vec<u32>, (Tally, u32), FoldHash>,
    /// perf's timestamp of the current sample, in ns.
    time_ns: Option<u64>,
    leaf_index: HashMap<(String, u64), usize>,
    out: Folded,
}

/// The lines of a reader, cut out of one reused buffer (no copy per line). A line is returned
/// with its `\n`; one longer than `MAX_LINE_BYTES` is returned cut to `MAX_LINE_BYTES + 1`.
struct Lines<R> {
    r: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
}

impl<R: Read> Lines<R> {
    fn next_line(&mut self) -> std::io::Result<Option<&[u8]>> {
        loop {
            let avail = &self.buf[self.start..self.end];
            if let Some(i) = memchr::memchr(b'\n', avail) {
                let s = self.start;
                let n = (i + 1).min(MAX_LINE_BYTES + 1);
                self.start += i + 1;
                return Ok(Some(&self.buf[s..s + n]));
            }
            if avail.len() > MAX_LINE_BYTES {
                let s = self.start;
                self.start = self.end;
                return Ok(Some(&self.buf[s..s + MAX_LINE_BYTES + 1]));
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let s = self.start;
                self.start = self.end;
                return Ok(Some(&self.buf[s..self.end]));
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let len = (self.buf.len() * 2).min(MAX_LINE_BYTES + 1);
                self.buf.resize(len.max(self.end + 1), 0);
            }
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Fold a `perf script` text read from `r`.
pub fn fold<R: Read>(r: R, opt: FoldOptions) -> Result<Folded, FoldError> {
    fold_memo(r, opt, MEMO_CAP_BYTES)
}

fn fold_memo<R: Read>(r: R, opt: FoldOptions, memo_cap: usize) -> Result<Folded, FoldError> {
    let mut st = State {
        event_filter: opt.event.clone(),
        opt,
        in_event: false,
        filter: Filter::Keep,
        pname: String::new(),
        pname_id: 0,
        java: false,
        period: None,
        names: String::new(),
        spans: Vec::new(),
        frames: Vec::new(),
        depth: 0,
        leaf_unknown: false,
        key: Vec::new(),
        name_ids: HashMap::default(),
        name_list: Vec::new(),
        memo: HashMap::default(),
        memo_bytes: 0,
        memo_cap,
        memo_lookups: 0,
        memo_hits: 0,
        memo_off: false,
        memos: Vec::new(),
        memo_ids: Vec::new(),
        sym_memo: HashMap::default(),
        sym_ids: Vec::new(),
        sym_key: Vec::new(),
        sym_bytes: 0,
        module_ids: HashMap::default(),
        last_module: (String::new(), u32::MAX),
        stacks: HashMap::default(),
        time_ns: None,
        leaf_index: HashMap::new(),
        out: Folded::default(),
    };
    st.pname_id = st.intern("");
    let mut lines = Lines {
        r,
        buf: vec![0; 1 << 18],
        start: 0,
        end: 0,
        eof: false,
    };
    while let Some(line) = lines
        .next_line()
        .map_err(|e| FoldError::Read(e.to_string()))?
    {
        let n = line.len();
        st.out.bytes += n as u64;
        st.out.lines += 1;
        if n > MAX_LINE_BYTES {
            return Err(FoldError::LineTooLong { line: st.out.lines });
        }
        if st.out.bytes > st.opt.max_bytes {
            return Err(FoldError::TooLong {
                max_bytes: st.opt.max_bytes,
            });
        }
        st.line(line);
    }
    if st.frames_nonempty() {
        st.after_event();
    }
    st.out.event = st.event_filter.take();
    st.finish();
    Ok(st.out)
}

impl State {
    fn frames_nonempty(&self) -> bool {
        !self.frames.is_empty()
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.name_ids.get(name) {
            return i;
        }
        let i = self.name_list.len() as u32;
        self.name_list.push(name.to_string());
        self.name_ids.insert(name.to_string(), i);
        i
    }

    /// Hand the stacks (by frame ids) and the names over: their text is written by
    /// [`Folded::resolve`], once.
    fn finish(&mut self) {
        self.out.stacks = std::mem::take(&mut self.stacks);
        self.out.names = std::mem::take(&mut self.name_list);
    }

    fn odd(&mut self, line: &str) {
        self.out.odd_lines += 1;
        if self.out.first_odd.is_none() {
            let mut end = line.len().min(80);
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            self.out.first_odd = Some((self.out.lines, line[..end].to_string()));
        }
    }

    fn line(&mut self, raw: &[u8]) {
        if raw.first() == Some(&b'#') {
            self.out.comment_lines += 1;
            return;
        }
        if raw == b"\n" {
            self.after_event();
            return;
        }
        if self.in_event && self.filter == Filter::Keep && !self.java && !self.memo_off {
            self.memo_lookups += 1;
            if let Some(&i) = self.memo.get(raw) {
                self.memo_hits += 1;
                self.apply(i as usize);
                return;
            }
            if self.memo_lookups >= MEMO_TRIAL && self.memo_hits * 4 < self.memo_lookups {
                self.memo_off = true;
                self.memo = HashMap::default();
            }
        }
        match std::str::from_utf8(raw) {
            Ok(line) => self.line_str(raw, line),
            Err(_) => {
                let line = String::from_utf8_lossy(raw).into_owned();
                self.line_str(raw, &line);
            }
        }
    }

    fn line_str(&mut self, raw: &[u8], line: &str) {
        let line = line.trim_end();
        if line.is_empty() {
            self.after_event();
        } else if self.in_event {
            self.on_stack_line(Some(raw), line);
        } else {
            self.on_event_line(line);
            if self.frames_nonempty() {
                self.after_event();
            }
        }
    }

    fn on_event_line(&mut self, line: &str) {
        self.in_event = true;
        let Some((comm, end)) = event_line_parts(line) else {
            self.odd(line);
            self.in_event = false;
            return;
        };
        self.out.event_lines += 1;
        let mut by_colons = line[end..].splitn(3, ':');
        self.time_ns = by_colons.next().and_then(parse_time_ns);
        let event = by_colons.next().map(|period_and_event| {
            let mut it = period_and_event.rsplit(' ');
            let name = it.next().unwrap_or("");
            self.period = it.next().and_then(|s| s.parse::<u64>().ok());
            name
        });
        if let Some(event) = event {
            match self.out.events.iter_mut().find(|(e, _)| e == event) {
                Some((_, n)) => *n += 1,
                None => self.out.events.push((event.to_string(), 1)),
            }
            match &self.event_filter {
                Some(f) if f != event => {
                    self.filter = Filter::Skip;
                    return;
                }
                Some(_) => {}
                None => self.event_filter = Some(event.to_string()),
            }
        }
        // A one-frame stack may follow the event on the same line (no call chains).
        let single = by_colons.next().and_then(|post| {
            let start = post.find([':', ' ']).map_or(0, |i| i + 1);
            let s = post[start..].trim();
            (!s.is_empty()).then_some(s)
        });
        self.pname.clear();
        for c in comm.chars() {
            self.pname.push(if c == ' ' { '_' } else { c });
        }
        let pname = std::mem::take(&mut self.pname);
        self.pname_id = self.intern(&pname);
        self.java = pname.starts_with("java");
        self.pname = pname;
        if let Some(s) = single {
            self.on_stack_line(None, s);
            self.in_event = false;
        }
    }

    /// One frame line (`raw`: its bytes as read, the key it is remembered by).
    fn on_stack_line(&mut self, raw: Option<&[u8]>, line: &str) {
        if self.filter == Filter::Skip {
            return;
        }
        let mark = self.memo_ids.len();
        let Some(m) = self.parse_frame(line) else {
            self.odd(line);
            return;
        };
        let i = self.memos.len();
        self.memos.push(m);
        let keep = match raw {
            Some(raw)
                if !self.java && !self.memo_off && self.memo_bytes + raw.len() <= self.memo_cap =>
            {
                self.memo_bytes += raw.len();
                self.memo.insert(raw.into(), i as u32);
                true
            }
            _ => false,
        };
        self.apply(i);
        if !keep {
            self.memos.pop();
            self.memo_ids.truncate(mark);
        }
    }

    fn module_id(&mut self, module: &str) -> u32 {
        if self.last_module.1 != u32::MAX && self.last_module.0 == module {
            return self.last_module.1;
        }
        let n = self.module_ids.len() as u32;
        let id = match self.module_ids.get(module) {
            Some(&id) => id,
            None => {
                self.module_ids.insert(module.to_string(), n);
                n
            }
        };
        self.last_module.0.clear();
        self.last_module.0.push_str(module);
        self.last_module.1 = id;
        id
    }

    /// What a frame line contributes; `None`: not a frame line.
    fn parse_frame(&mut self, line: &str) -> Option<FrameMemo> {
        let (pc, mut rawfunc, module) = stack_line_parts(line)?;
        // `sym+0x1f`: drop the offset, i.e. a "+0x" followed only by hex digits (or nothing).
        // Such a "+0x" can only end where the trailing run of hex digits starts ('x' is not one).
        let b = rawfunc.as_bytes();
        let end = b.len() - b.iter().rev().take_while(|c| c.is_ascii_hexdigit()).count();
        if end >= 3 && &b[end - 3..end] == b"+0x" {
            rawfunc = &rawfunc[..end - 3];
        }
        let start = self.memo_ids.len() as u32;
        if rawfunc.starts_with('(') {
            return Some(FrameMemo {
                skip: true,
                unknown: false,
                leaf: None,
                leaf_slot: NO_SLOT,
                ids: (start, start),
            });
        }
        let unknown = rawfunc == "[unknown]" || rawfunc == " ";
        let mut leaf = None;
        if unknown
            && self.opt.keep_unknown_leaves
            && module.starts_with('/')
            && !is_kernel(module)
            && !rawfunc.contains("->")
        {
            if let Ok(ip) = u64::from_str_radix(pc, 16) {
                let default = self.frame_name(rawfunc, module, true);
                leaf = Some(Box::new((module.to_string(), ip, default)));
            }
        }
        if !unknown {
            // The key: java flag, module id, symbol (unambiguous whatever bytes).
            let module_id = self.module_id(module);
            self.sym_key.clear();
            self.sym_key.push(self.java as u8);
            self.sym_key.extend_from_slice(&module_id.to_le_bytes());
            self.sym_key.extend_from_slice(rawfunc.as_bytes());
            if let Some(&(s, e)) = self.sym_memo.get(self.sym_key.as_slice()) {
                self.memo_ids
                    .extend_from_slice(&self.sym_ids[s as usize..e as usize]);
                return Some(FrameMemo {
                    skip: false,
                    unknown,
                    leaf,
                    leaf_slot: NO_SLOT,
                    ids: (start, self.memo_ids.len() as u32),
                });
            }
        }
        self.names.clear();
        self.spans.clear();
        let demangled = fix_rust_symbol(rawfunc);
        if !demangled.as_bytes().contains(&b'>') || !demangled.contains("->") {
            self.push_name(&demangled, module, true);
            self.spans.push((0, self.names.len() as u32));
        } else {
            // Inlined chains (`a->b->c`): the first keeps its place, the rest are marked `_[i]`;
            // the names are pushed in reverse so that reversing the sample gives a->b->c root
            // to leaf.
            for (n, func) in demangled.split("->").enumerate() {
                let s = self.names.len();
                self.push_name(func, module, n == 0);
                if n > 0 && !self.names[s..].contains("_[i]") {
                    self.names.push_str("_[i]");
                }
                self.spans.push((s as u32, self.names.len() as u32));
            }
            self.spans.reverse();
        }
        let names = std::mem::take(&mut self.names);
        for k in 0..self.spans.len() {
            let (s, e) = self.spans[k];
            let id = self.intern(&names[s as usize..e as usize]);
            self.memo_ids.push(id);
        }
        self.names = names;
        if !unknown && self.sym_bytes + self.sym_key.len() <= self.memo_cap {
            self.sym_bytes += self.sym_key.len();
            let s = self.sym_ids.len() as u32;
            self.sym_ids
                .extend_from_slice(&self.memo_ids[start as usize..]);
            let e = self.sym_ids.len() as u32;
            self.sym_memo.insert(self.sym_key.as_slice().into(), (s, e));
        }
        Some(FrameMemo {
            skip: false,
            unknown,
            leaf,
            leaf_slot: NO_SLOT,
            ids: (start, self.memo_ids.len() as u32),
        })
    }

    /// Add frame line `memos[i]` to the current sample.
    fn apply(&mut self, i: usize) {
        self.out.frame_lines += 1;
        let m = &self.memos[i];
        if m.skip {
            return;
        }
        let leaf = self.depth == 0;
        self.depth += 1;
        if leaf {
            self.leaf_unknown = m.unknown;
            if let Some(l) = &m.leaf {
                let (module, ip, default) = &**l;
                let slot = if m.leaf_slot != NO_SLOT {
                    m.leaf_slot
                } else {
                    let n = self.out.leaves.len();
                    let s = *self.leaf_index.entry((module.clone(), *ip)).or_insert(n);
                    if s == n {
                        self.out.leaves.push(UnknownLeaf {
                            dso: module.clone(),
                            ip: *ip,
                            default_name: default.clone(),
                        });
                    }
                    self.memos[i].leaf_slot = s as u32;
                    s as u32
                };
                self.frames.push(LEAF_BIT | slot);
                return;
            }
        }
        let (s, e) = m.ids;
        self.frames
            .extend_from_slice(&self.memo_ids[s as usize..e as usize]);
    }

    /// The name of one frame as inferno writes it (module fallback, tidied, annotated).
    fn frame_name(&mut self, func: &str, module: &str, first: bool) -> String {
        let s = self.names.len();
        self.push_name(func, module, first);
        let name = self.names[s..].to_string();
        self.names.truncate(s);
        name
    }

    fn push_name(&mut self, func: &str, module: &str, first: bool) {
        let s = self.names.len();
        if func == "[unknown]" && module != "[unknown]" {
            let base = module.rsplit('/').next().unwrap_or(module);
            self.names.push('[');
            self.names.push_str(base);
            self.names.push(']');
        } else {
            push_tidy(&mut self.names, func);
        }
        if self.java {
            let t = &self.names[s..];
            if t.starts_with('L') && t.contains('/') {
                self.names.remove(s);
            }
        }
        if first && self.opt.annotate_kernel && is_kernel(module) {
            self.names.push_str("_[k]");
        }
    }

    fn after_event(&mut self) {
        if !self.frames.is_empty() {
            self.key.clear();
            self.key.push(self.pname_id);
            self.key.extend(self.frames.iter().rev());
            let t = Tally {
                samples: 1,
                weight: self.period.unwrap_or(1),
            };
            let slot = match self.stacks.get_mut(self.key.as_slice()) {
                Some(v) => {
                    v.0.add(t);
                    v.1
                }
                None => {
                    let slot = self.stacks.len() as u32;
                    self.stacks.insert(self.key.clone(), (t, slot));
                    slot
                }
            };
            if let Some(ns) = self.time_ns {
                self.out
                    .timeline
                    .entry((ns / TIME_BUCKET_NS, slot))
                    .or_default()
                    .add(t);
            }
            self.out.total.add(t);
            if self.period.is_some() {
                self.out.samples_with_period += 1;
            }
            if self.leaf_unknown {
                self.out.no_symbol_samples += 1;
            }
            self.out.max_depth = self.out.max_depth.max(self.depth);
        }
        self.in_event = false;
        self.filter = Filter::Keep;
        self.frames.clear();
        self.depth = 0;
        self.leaf_unknown = false;
        self.period = None;
        self.time_ns = None;
    }
}

/// `comm pid[/tid] ...`: the comm and the offset after the first all-digit word that follows
/// it (that word is the pid or pid/tid).
fn event_line_parts(line: &str) -> Option<(&str, usize)> {
    let b = line.as_bytes();
    let mut word_start = 0;
    let mut all_digits = false;
    let mut last_was_space = false;
    for (i, &c) in b.iter().enumerate() {
        if c == b' ' {
            if all_digits && !last_was_space {
                return Some((line[..word_start - 1].trim(), i + 1));
            }
            word_start = i + 1;
            all_digits = true;
        } else if c == b'/' || c.is_ascii_digit() {
        } else {
            all_digits = false;
        }
        last_was_space = c == b' ';
    }
    None
}

/// perf's timestamp (`12345.678901`, the last word before the event line's first colon after
/// the pid) in ns; `None` when the word is not one (no `time` field, a CPU column only).
fn parse_time_ns(before_colon: &str) -> Option<u64> {
    let w = before_colon.rsplit(' ').next()?;
    let (secs, frac) = w.split_once('.')?;
    if secs.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    let s: u64 = secs.parse().ok()?;
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let f: u64 = frac.parse().ok()?;
    let scaled = f.checked_mul(10u64.pow(9 - frac.len() as u32))?;
    s.checked_mul(1_000_000_000)?.checked_add(scaled)
}

/// `<pc> <func...> (<module>)`: pc, func (" " when blank) and module without its parentheses.
/// Cut at the first and the last space by byte search (this runs on every frame line).
fn stack_line_parts(line: &str) -> Option<(&str, &str, &str)> {
    let line = line.trim_start();
    let first = memchr::memchr(b' ', line.as_bytes())?;
    let pc = line[..first].trim_end();
    let rest = &line[first + 1..];
    let last = memchr::memrchr(b' ', rest.as_bytes())?;
    let module = &rest[last + 1..];
    if !module.starts_with('(') || !module.ends_with(')') || module.len() < 2 {
        return None;
    }
    let module = &module[1..module.len() - 1];
    let func = match rest[..last].trim() {
        "" => " ",
        s => s,
    };
    Some((pc, func, module))
}

/// Kernel module names as inferno recognises them: `[kernel.kallsyms]`, `*.ko`, `vmlinux*`.
pub fn is_kernel(module: &str) -> bool {
    // A byte search: this runs on every frame line, and a `str` searcher costs a setup each time.
    let vmlinux = module
        .as_bytes()
        .windows(7)
        .rposition(|w| w == b"vmlinux")
        .is_some_and(|p| {
            module[p..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        });
    (module.starts_with('[') || module.ends_with(".ko") || vmlinux) && module != "[unknown]"
}

/// `func` as a frame of a folded stack: without its argument list, `;` written as `:` (a
/// symbol named outside perf, from a debug file, is written as perf's are).
pub fn tidy(func: &str) -> String {
    let mut s = String::with_capacity(func.len());
    push_tidy(&mut s, func);
    s
}

/// Append `func` without its argument list (kept: Go's `pkg.(*T).M`, C++ `(anonymous
/// namespace)`, parentheses inside `<...>`, `{...}`, `[...]`), with `;` written as `:`.
fn push_tidy(out: &mut String, func: &str) {
    let mut depth: i32 = 0;
    let mut last_dot: Option<usize> = None;
    let mut cut = func.len();
    // Bytes, not chars: every byte tested is ASCII, which no multi-byte character contains.
    for (i, &c) in func.as_bytes().iter().enumerate() {
        match c {
            b'<' | b'{' | b'[' => depth += 1,
            b'>' | b'}' | b']' | b')' => depth -= 1,
            b'(' => {
                if depth == 0 {
                    let go = last_dot == Some(i);
                    let anon = func[i..].starts_with("(anonymous namespace)");
                    if !go && !anon {
                        cut = i;
                        break;
                    }
                }
                depth += 1;
            }
            b'.' => last_dot = Some(i + 1),
            _ => {}
        }
    }
    let kept = &func[..cut];
    if kept.contains(';') {
        out.push_str(&kept.replace(';', ":"));
    } else {
        out.push_str(kept);
    }
}

/// Legacy Rust symbols left half-demangled (`..` for `::`, `$LT$` for `<`, a trailing `::h<16
/// hex>` hash): written out as inferno does. Byte positions are checked, never assumed.
fn fix_rust_symbol(sym: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    const HASH: usize = 17;
    let Some(tail) = sym.len().checked_sub(HASH).and_then(|p| sym.get(p..)) else {
        return Cow::Borrowed(sym);
    };
    if !(tail.starts_with('h') && tail[1..].bytes().all(|b| b.is_ascii_hexdigit())) {
        return Cow::Borrowed(sym);
    }
    let mut rest = &sym[..sym.len() - HASH];
    if let Some(r) = rest.strip_suffix("::") {
        rest = r;
    }
    if rest.starts_with("_$") {
        rest = &rest[1..];
    }
    const ESCAPES: &[(&str, &str)] = &[
        ("$SP$", "@"),
        ("$BP$", "*"),
        ("$RF$", "&"),
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$LP$", "("),
        ("$RP$", ")"),
        ("$C$", ","),
        ("$u7e$", "~"),
        ("$u20$", " "),
        ("$u27$", "'"),
        ("$u3d$", "="),
        ("$u5b$", "["),
        ("$u5d$", "]"),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u3b$", ";"),
        ("$u2b$", "+"),
        ("$u21$", "!"),
        ("$u22$", "\""),
    ];
    let mut out = String::with_capacity(rest.len());
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            if let Some(r2) = r.strip_prefix('.') {
                out.push_str("::");
                rest = r2;
            } else {
                out.push('.');
                rest = r;
            }
        } else if rest.starts_with('$') {
            match ESCAPES.iter().find(|(k, _)| rest.starts_with(k)) {
                Some((k, v)) => {
                    out.push_str(v);
                    rest = &rest[k.len()..];
                }
                None => {
                    out.push_str(rest);
                    break;
                }
            }
        } else {
            let i = rest.find(['$', '.']).unwrap_or(rest.len());
            out.push_str(&rest[..i]);
            rest = &rest[i..];
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(t: &str) -> Folded {
        fold(t.as_bytes(), FoldOptions::default()).unwrap()
    }

    /// perf's time column, as perf 6.1 prints it with and without a CPU column, and lines
    /// without one (oldest format, flamegraph's perf-funcab-pid-01).
    #[test]
    fn sample_times_go_into_10ms_buckets_by_stack_slot() {
        assert_eq!(parse_time_ns(" 4395.402695"), Some(4_395_402_695_000));
        assert_eq!(parse_time_ns("[000] 5000.000000"), Some(5_000_000_000_000));
        assert_eq!(parse_time_ns("29025 [003] 1.5"), Some(1_500_000_000));
        assert_eq!(parse_time_ns(" [000]"), None);
        assert_eq!(parse_time_ns("1.x"), None);
        assert_eq!(parse_time_ns("99999999999999999999.1"), None);
        let t = "m 1/2 [000] 10.001: 5 cpu-clock:\n\t 1 a (/x)\n\n\
                 m 1/2 [001] 10.004: 7 cpu-clock:\n\t 1 a (/x)\n\n\
                 m 1/2 [000] 10.020: 9 cpu-clock:\n\t 2 b (/x)\n\n";
        let f = run(t);
        assert_eq!(f.total.samples, 3);
        let (stacks, _, slot_to_stack) = f.resolve_slots(&HashMap::new());
        let mut by: Vec<(u64, &str, u64, u64)> = f
            .timeline
            .iter()
            .map(|(&(b, slot), t)| {
                let k = slot_to_stack[slot as usize] as usize;
                (b, stacks[k].0.as_str(), t.samples, t.weight)
            })
            .collect();
        by.sort();
        assert_eq!(by, vec![(1000, "m;a", 2, 12), (1002, "m;b", 1, 9)]);
        // A sample without a time is folded but not in the timeline.
        let f = run("func_ab 15294 cpu-clock:\n\t 1 a (/x)\n\n");
        assert_eq!(f.total.samples, 1);
        assert!(f.timeline.is_empty());
    }

    #[test]
    fn weights_are_periods_and_counts_are_samples() {
        let t = "a 1/2 1.0: 100 cycles:\n\t 10 f+0x1 (/x)\n\t 20 main (/x)\n\n\
                 a 1/2 2.0: 300 cycles:\n\t 10 f+0x2 (/x)\n\t 20 main (/x)\n\n\
                 a 1/2 2.5: 7 instructions:\n\t 10 g (/x)\n\n";
        let f = run(t);
        assert_eq!(f.event.as_deref(), Some("cycles"));
        assert_eq!(
            f.stack_map()["a;main;f"],
            Tally {
                samples: 2,
                weight: 400
            }
        );
        assert_eq!(f.stack_map().len(), 1);
        assert_eq!(
            f.events,
            vec![("cycles".to_string(), 2), ("instructions".to_string(), 1)]
        );
        assert_eq!(f.max_depth, 2);
        let g = fold(
            t.as_bytes(),
            FoldOptions {
                event: Some("instructions".into()),
                ..FoldOptions::default()
            },
        )
        .unwrap();
        assert_eq!(g.stack_map()["a;g"].weight, 7);
    }

    #[test]
    fn single_line_samples_inlines_kernel_and_unknown_leaves() {
        let t = "false 1 1.0:  5 cycles:u:  ffffffff9b201293 [unknown] ([unknown])\n\
                 false 1 1.1:  6 cycles:  7fa6 _dl_start+0x4 (/usr/lib/ld-2.31.so)\n";
        let f = run(t);
        assert_eq!(f.stack_map()["false;[unknown]"].weight, 5);
        assert_eq!(f.stack_map()["false;_dl_start"].weight, 6);
        assert_eq!(f.max_depth, 1);
        let t = "m 1/2 1.0: 9 cpu-clock:\n\t 7f a->b (/x)\n\t ffff do_sys (\
                 [kernel.kallsyms])\n\t 40 [unknown] (/usr/sbin/m)\n\n\
                 m 1/2 1.0: 9 cpu-clock:\n\t 40 [unknown] (/usr/sbin/m)\n\t 41 main (/usr/sbin/m)\n";
        let f = run(t);
        assert_eq!(f.stack_map()["m;[m];do_sys_[k];a;b_[i]"].weight, 9);
        assert_eq!(f.leaves.len(), 1);
        assert_eq!(f.leaves[0].default_name, "[m]");
        assert_eq!(f.no_symbol_samples, 1);
        let r = f.resolve(&HashMap::new());
        assert!(r.iter().any(|(k, _)| k == "m;main;[m]"));
        let r = f.resolve(&HashMap::from([(0, "[spin]".to_string())]));
        assert!(r.iter().any(|(k, _)| k == "m;main;[spin]"));
    }

    #[test]
    fn odd_bytes_and_caps() {
        let mut t = b"m 1/2 1.0: 9 cpu-clock:\n\t 7f ".to_vec();
        t.extend_from_slice(b"\xc3__x64_sys_futex+0x71 ([kernel.kallsyms])\n\n");
        let f = fold(&t[..], FoldOptions::default()).unwrap();
        assert_eq!(f.stack_map()["m;\u{fffd}__x64_sys_futex_[k]"].weight, 9);
        let zeros = std::io::repeat(0).take(3 * MAX_LINE_BYTES as u64);
        assert!(matches!(
            fold(std::io::BufReader::new(zeros), FoldOptions::default()),
            Err(FoldError::LineTooLong { line: 1 })
        ));
        let o = FoldOptions {
            max_bytes: 10,
            ..FoldOptions::default()
        };
        assert!(matches!(
            fold(&t[..], o),
            Err(FoldError::TooLong { max_bytes: 10 })
        ));
    }

    #[test]
    fn tidy_and_rust() {
        let mut s = String::new();
        push_tidy(&mut s, "foo(int, char*)");
        assert_eq!(s, "foo");
        s.clear();
        push_tidy(&mut s, "net/http.(*Client).Do");
        assert_eq!(s, "net/http.(*Client).Do");
        assert_eq!(
            fix_rust_symbol("std::sys::unix::fs::File::open::hb90e1c1c787080f0"),
            "std::sys::unix::fs::File::open"
        );
        assert_eq!(
            fix_rust_symbol("\u{fffd}__x64_sys_futex"),
            "\u{fffd}__x64_sys_futex"
        );
    }

    /// A reader that hands out a few bytes per call, so lines straddle every buffer refill.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(out.len()).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Remembered frame lines fold exactly as lines parsed each time, and a trickling reader
    /// exactly as one read: every perf fixture of the project, each event of it.
    #[test]
    fn remembered_lines_and_split_reads_fold_as_parsed_lines() {
        let files = crate::profile::perf_fixture_files();
        assert!(files.len() >= 20, "{} fixture scripts", files.len());
        let mut compared = 0;
        for p in &files {
            let t = std::fs::read(p).unwrap();
            let Ok(plain) = fold_memo(&t[..], FoldOptions::default(), 0) else {
                continue;
            };
            let mut events: Vec<Option<String>> = vec![None];
            events.extend(plain.events.iter().map(|(e, _)| Some(e.clone())));
            for ev in events {
                let o = FoldOptions {
                    event: ev.clone(),
                    ..FoldOptions::default()
                };
                let a = fold_memo(&t[..], o.clone(), 0).unwrap();
                for b in [
                    fold(&t[..], o.clone()).unwrap(),
                    fold(Trickle(&t, 7), o.clone()).unwrap(),
                ] {
                    let what = format!("{} event {ev:?}", p.display());
                    let none = HashMap::new();
                    assert_eq!(a.resolve(&none), b.resolve(&none), "{what}");
                    assert_eq!(a.leaves, b.leaves, "{what}");
                    assert_eq!(a.total, b.total, "{what}");
                    assert_eq!(
                        (a.lines, a.bytes, a.frame_lines, a.event_lines, a.odd_lines),
                        (b.lines, b.bytes, b.frame_lines, b.event_lines, b.odd_lines),
                        "{what}"
                    );
                    assert_eq!(
                        (a.max_depth, a.no_symbol_samples, a.samples_with_period),
                        (b.max_depth, b.no_symbol_samples, b.samples_with_period),
                        "{what}"
                    );
                    assert_eq!((&a.event, &a.first_odd), (&b.event, &b.first_odd), "{what}");
                }
                compared += 1;
            }
        }
        assert!(compared >= 20, "{compared} folds compared");
    }
}
