//! The join (pure): a stream of events of one window (on-CPU samples and scheduler switches)
//! into per-site tallies. A *site* is where a thread waits for a latch: the first function of
//! the server's own code above the wait machinery (spin loops, InnoDB's spin and wait
//! functions, the C library and the kernel), and the function that called it. A spin sample
//! and a sleep at the same latch acquire share that pair whatever the binary (symbols, or
//! function starts from unwind tables when it is stripped), which is what lets spin CPU and
//! sleeps be told side by side.
//!
//! Off-CPU intervals: a switch-out of a server thread opens one (its call chain says where),
//! the next switch-in of that thread closes it. A switch-out in a runnable state (`R`) is a
//! preemption, not a sleep: kept apart.

use std::collections::{BTreeMap, HashMap};

use super::script::{Event, Frame, Kind};
use crate::profile::fold::is_kernel;
use crate::profile::rules::{self, Class};

/// What the join asks of the server's binaries (the real one reads ELF files; tests give a
/// table).
pub trait Code {
    /// The start of the function holding `ip` in `dso` (as perf prints addresses), if known.
    fn function_start(&mut self, dso: &str, ip: u64) -> Option<u64>;
    /// The file offset of `ip` in `dso`, to name code without a symbol (`mariadbd+0x..`).
    fn file_offset(&mut self, dso: &str, ip: u64) -> Option<u64>;
    /// Whether `ip` in `dso` sits in a spin-hint loop (instruction bytes).
    fn is_spin_loop(&mut self, dso: &str, ip: u64) -> bool;
}

/// A site: the waiting function's name and its caller's (either may be `None` when the call
/// chain ends before it).
pub type SiteKey = (String, Option<String>);

/// How an off-CPU interval began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OffKind {
    /// A futex sleep of a latch: the server called the futex system call itself (MariaDB
    /// 10.6+'s srw_lock), or a named InnoDB wait function is on the chain (sync array,
    /// os_event, srw/ssux lock waits).
    Latch,
    /// A futex sleep in the C library's mutexes and condition variables (row-lock waits,
    /// queues, idle workers); their callers are lost where libc has no frame pointers.
    Pthread,
    /// Waiting for I/O (state D, or a read/write/fsync system call).
    Io,
    /// Any other sleep (network reads, poll, timers).
    Other,
    /// Switched out while runnable: preempted, or yielded (sched_yield).
    Preempted,
}

/// Tallies of one site.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SiteTally {
    pub spin_samples: u64,
    /// Sum of the spin samples' periods (ns for cpu-clock).
    pub spin_weight: u64,
    /// Latch sleeps here and their lengths (ns).
    pub sleeps_ns: Vec<u64>,
    /// Other off-CPU intervals that started here (pthread, I/O, other), by kind.
    pub other_off: BTreeMap<OffKind, (u64, u64)>,
    /// Preemptions of a thread while it spun here.
    pub preempted_spinning: u64,
    /// Contended acquisitions seen: runs of spin samples of one thread here, and sleeps here
    /// not preceded by a sampled spin.
    pub episodes: u64,
    /// Of those, the ones that ended in a sleep.
    pub slept_episodes: u64,
    /// A frame with a symbol above the site, to place it for a reader.
    pub context: Option<String>,
}

/// What a stack of the pprof profile was: an on-CPU sample (spinning or not) or an off-CPU
/// interval of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum What {
    /// On CPU, with spinscope's class of the stack (`innodb_spin`, `storage_engine`, ...).
    OnCpu(&'static str),
    Off(OffKind),
}

/// One stack of the pprof profile: its frames, root first, as the table names functions (a
/// stack with a site ends at the site's function: the wait machinery below it, spin loop,
/// futex and kernel, is what `what` says), what it was, and its site.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StackKey {
    pub frames: Vec<String>,
    pub what: What,
    /// The site as the table names it (`function <- caller`), when the chain has one.
    pub site: Option<String>,
}

/// The values of one stack: on-CPU samples and their periods' sum, off-CPU intervals and
/// their nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackValue {
    pub samples: u64,
    pub weight: u64,
    pub intervals: u64,
    pub off_ns: u64,
}

/// The result of a join.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Joined {
    /// The server's on-CPU samples (of the sampled event), their periods' sum, and of them
    /// the spin samples.
    pub samples: u64,
    pub weight: u64,
    pub spin_samples: u64,
    pub spin_weight: u64,
    /// The event sampled on CPU (first seen).
    pub event: Option<String>,
    /// Off-CPU intervals closed in the window, by kind: count and total ns.
    pub off: BTreeMap<OffKind, (u64, u64)>,
    /// Latch sleeps with no site (the call chain ended in the C library or kernel).
    pub unplaced_latch_sleeps: u64,
    /// Intervals still open when the window ended (not counted above).
    pub open_at_end: u64,
    pub switches_seen: u64,
    pub sites: BTreeMap<SiteKey, SiteTally>,
    /// First and last event times of the server (ns).
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
    /// Whether any server event carried a call chain of more than one frame.
    pub call_chains: bool,
    /// The stacks of the pprof profile (kept only when asked: [`join_with`]).
    pub stacks: BTreeMap<StackKey, StackValue>,
}

struct Open {
    start: u64,
    kind: OffKind,
    site: Option<SiteKey>,
    stack: Option<StackKey>,
}

/// Per-thread state of a contended acquisition being watched.
struct Episode {
    site: SiteKey,
}

/// The site of spin samples whose chain has no server frame above the spin (no call chains
/// recorded, or code outside the server binary).
pub const NO_SITE: &str = "(no server frame above the spin)";

fn base(dso: &str) -> &str {
    dso.rsplit('/').next().unwrap_or(dso)
}

/// The server's own code: not the kernel, not a shared library, not an unknown map.
pub fn is_server_dso(dso: &str) -> bool {
    !is_kernel(dso) && dso.starts_with('/') && !base(dso).contains(".so")
}

/// A named function of InnoDB's latch waits (the spin and OS-wait rules, less the generic
/// futex and condition-variable names that every sleeper shares).
fn is_latch_wait_name(name: &str) -> bool {
    matches!(
        rules::frame_class(name),
        Some(Class::InnodbSpin | Class::OsWait)
    ) && !name.contains("futex")
        && !name.contains("pthread_cond")
        && !name.starts_with("do_futex")
}

/// The join. `pid`: the server; every other process's events only close intervals.
pub fn join(events: impl Iterator<Item = Event>, pid: u32, code: &mut dyn Code) -> Joined {
    join_with(events, pid, code, false)
}

/// The join, keeping every stack with its values for a pprof profile when `stacks`.
pub fn join_with(
    events: impl Iterator<Item = Event>,
    pid: u32,
    code: &mut dyn Code,
    stacks: bool,
) -> Joined {
    let mut st = State {
        j: Joined::default(),
        open: HashMap::new(),
        episode: HashMap::new(),
        bare: HashMap::new(),
        names: Names::default(),
        code,
        stacks,
    };
    for ev in events {
        match &ev.kind {
            Kind::Sample(_) if ev.pid == pid => {
                st.flush_bare(ev.tid);
                st.sample(&ev);
            }
            Kind::Switch {
                prev_pid, next_pid, ..
            } => {
                st.j.switches_seen += 1;
                // Switch-in of a server thread: its interval ends.
                st.flush_bare(*next_pid);
                if let Some(o) = st.open.remove(next_pid) {
                    if o.start <= ev.time_ns {
                        st.j.close(o, ev.time_ns);
                    } else {
                        st.open.insert(*next_pid, o);
                    }
                }
                if ev.pid != pid || ev.tid != *prev_pid {
                    continue;
                }
                if ev.frames.len() <= 1 {
                    // Perhaps the chain-less copy (at most the one frame perf prints on the
                    // event line) of a switch whose chained copy follows or came first (two
                    // tracepoint instances, up to a microsecond apart): held until the
                    // thread's next event.
                    let t = ev.tid;
                    if let Some(old) = st.bare.insert(t, ev) {
                        st.switch_out(&old);
                    }
                    continue;
                }
                if let Some(b) = st.bare.remove(prev_pid) {
                    let mut ev = ev;
                    ev.time_ns = ev.time_ns.min(b.time_ns);
                    st.switch_out(&ev);
                } else {
                    st.switch_out(&ev);
                }
            }
            _ => {}
        }
    }
    let tids: Vec<u32> = st.bare.keys().copied().collect();
    for t in tids {
        st.flush_bare(t);
    }
    for (_, e) in st.episode.drain() {
        st.j.sites.entry(e.site).or_default().episodes += 1;
    }
    st.j.open_at_end = st.open.len() as u64;
    st.j
}

struct State<'c> {
    j: Joined,
    open: HashMap<u32, Open>,
    episode: HashMap<u32, Episode>,
    /// Chain-less switch-outs waiting for their chained copy.
    bare: HashMap<u32, Event>,
    names: Names,
    code: &'c mut dyn Code,
    /// Keep the stacks for pprof.
    stacks: bool,
}

impl State<'_> {
    fn flush_bare(&mut self, tid: u32) {
        if let Some(b) = self.bare.remove(&tid) {
            self.switch_out(&b);
        }
    }

    fn sample(&mut self, ev: &Event) {
        let j = &mut self.j;
        if let Kind::Sample(name) = &ev.kind {
            j.event.get_or_insert_with(|| name.clone());
        }
        j.note_time(ev.time_ns);
        j.call_chains |= ev.frames.len() > 1;
        j.samples += 1;
        j.weight = j.weight.saturating_add(ev.period);
        let class = stack_class(&ev.frames, self.code);
        if class != Class::InnodbSpin {
            if let Some(e) = self.episode.remove(&ev.tid) {
                j.sites.entry(e.site).or_default().episodes += 1;
            }
            if self.stacks {
                let key = StackKey {
                    frames: self.names.chain(&ev.frames, ev.frames.len(), self.code),
                    what: What::OnCpu(class.id()),
                    site: None,
                };
                self.j.add_sample(key, ev.period);
            }
            return;
        }
        j.spin_samples += 1;
        j.spin_weight = j.spin_weight.saturating_add(ev.period);
        let placed = self.names.site(&ev.frames, self.code);
        if self.stacks {
            let key = self.stack_key(
                &ev.frames,
                What::OnCpu(Class::InnodbSpin.id()),
                placed.as_ref(),
            );
            self.j.add_sample(key, ev.period);
        }
        let j = &mut self.j;
        let (key, ctx) = placed.unwrap_or_else(|| ((NO_SITE.to_string(), None), None));
        if self.episode.get(&ev.tid).is_some_and(|e| e.site != key) {
            if let Some(e) = self.episode.remove(&ev.tid) {
                j.sites.entry(e.site).or_default().episodes += 1;
            }
        }
        let t = j.sites.entry(key.clone()).or_default();
        t.spin_samples += 1;
        t.spin_weight = t.spin_weight.saturating_add(ev.period);
        if t.context.is_none() {
            t.context = ctx;
        }
        self.episode.entry(ev.tid).or_insert(Episode { site: key });
    }

    /// A server thread leaves the CPU: an interval opens, and the acquisition watched on it
    /// (if any) ends, slept or not.
    fn switch_out(&mut self, ev: &Event) {
        let Kind::Switch {
            prev_pid,
            prev_state,
            ..
        } = &ev.kind
        else {
            return;
        };
        let j = &mut self.j;
        j.note_time(ev.time_ns);
        j.call_chains |= ev.frames.len() > 1;
        if self.open.contains_key(prev_pid) {
            // Off CPU already: a repeat of the same switch.
            return;
        }
        let kind = off_kind(prev_state, &ev.frames);
        let placed = self.names.site(&ev.frames, self.code);
        let stack = self
            .stacks
            .then(|| self.stack_key(&ev.frames, What::Off(kind), placed.as_ref()));
        let site = placed;
        let j = &mut self.j;
        let mut counted = false;
        if kind == OffKind::Preempted {
            if let Some(e) = self.episode.get(prev_pid) {
                j.sites
                    .entry(e.site.clone())
                    .or_default()
                    .preempted_spinning += 1;
            }
        } else if let Some(e) = self.episode.remove(prev_pid) {
            // The watched acquisition ended in a sleep here, or its thread slept elsewhere
            // after acquiring it.
            let slept_here = kind == OffKind::Latch && site.as_ref().is_some_and(|s| s.0 == e.site);
            let t = j.sites.entry(e.site).or_default();
            t.episodes += 1;
            if slept_here {
                t.slept_episodes += 1;
                counted = true;
            }
        }
        if kind == OffKind::Latch && !counted {
            if let Some((k, ctx)) = &site {
                let t = j.sites.entry(k.clone()).or_default();
                t.episodes += 1;
                t.slept_episodes += 1;
                if t.context.is_none() {
                    t.context = ctx.clone();
                }
            }
        }
        self.open.insert(
            *prev_pid,
            Open {
                start: ev.time_ns,
                kind,
                site: site.map(|s| s.0),
                stack,
            },
        );
    }

    /// The pprof stack of a chain: root first, down to the site's function when there is a
    /// site, else the whole chain.
    fn stack_key(
        &mut self,
        frames: &[Frame],
        what: What,
        placed: Option<&(SiteKey, Option<String>)>,
    ) -> StackKey {
        let end = match placed {
            Some(_) => self.names.anchor(frames, self.code).unwrap_or(0),
            None => 0,
        };
        StackKey {
            frames: self.names.chain(frames, frames.len() - end, self.code),
            what,
            site: placed.map(|(k, _)| site_label(k)),
        }
    }
}

/// A site as the table names it: `function <- caller`.
pub fn site_label(k: &SiteKey) -> String {
    match &k.1 {
        Some(c) => format!("{} <- {c}", k.0),
        None => k.0.clone(),
    }
}

impl Joined {
    fn note_time(&mut self, t: u64) {
        self.first_ns = Some(self.first_ns.map_or(t, |f| f.min(t)));
        self.last_ns = Some(self.last_ns.map_or(t, |l| l.max(t)));
    }

    fn add_sample(&mut self, key: StackKey, period: u64) {
        let v = self.stacks.entry(key).or_default();
        v.samples += 1;
        v.weight = v.weight.saturating_add(period);
    }

    fn close(&mut self, o: Open, end: u64) {
        let ns = end - o.start;
        if let Some(k) = o.stack {
            let v = self.stacks.entry(k).or_default();
            v.intervals += 1;
            v.off_ns = v.off_ns.saturating_add(ns);
        }
        let e = self.off.entry(o.kind).or_default();
        e.0 += 1;
        e.1 = e.1.saturating_add(ns);
        match (o.kind, o.site) {
            (OffKind::Latch, Some(s)) => self.sites.entry(s).or_default().sleeps_ns.push(ns),
            (OffKind::Latch, None) => self.unplaced_latch_sleeps += 1,
            (k, Some(s)) => {
                let e = self
                    .sites
                    .entry(s)
                    .or_default()
                    .other_off
                    .entry(k)
                    .or_default();
                e.0 += 1;
                e.1 = e.1.saturating_add(ns);
            }
            _ => {}
        }
    }
}

/// The name of one frame for the rules: its symbol, a spin loop found from instruction bytes
/// (leaf only), or `[unknown]`.
fn frame_name(f: &Frame, leaf: bool, code: &mut dyn Code) -> String {
    match &f.sym {
        Some(s) => s.clone(),
        None if leaf && !is_kernel(&f.dso) && code.is_spin_loop(&f.dso, f.ip) => {
            let off = code.file_offset(&f.dso, f.ip).unwrap_or(f.ip);
            format!("[spin loop at {}+0x{off:x}]", base(&f.dso))
        }
        None => "[unknown]".to_string(),
    }
}

/// The profile's own class of an on-CPU stack (InnoDB spinning among them).
fn stack_class(frames: &[Frame], code: &mut dyn Code) -> Class {
    let names: Vec<String> = frames
        .iter()
        .enumerate()
        .rev()
        .map(|(i, f)| frame_name(f, i == 0, code))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    crate::profile::stack_class(&refs)
}

fn off_kind(state: &str, frames: &[Frame]) -> OffKind {
    if state.starts_with('R') {
        return OffKind::Preempted;
    }
    let named = |p: &dyn Fn(&str) -> bool| frames.iter().any(|f| f.sym.as_deref().is_some_and(p));
    let futex = named(&|s| s.contains("futex"));
    let first_user = frames.iter().find(|f| !is_kernel(&f.dso));
    let direct = first_user
        .is_some_and(|f| is_server_dso(&f.dso) || f.sym.as_deref().is_some_and(|s| s == "syscall"));
    let latch_name = frames
        .iter()
        .filter(|f| !is_kernel(&f.dso))
        .any(|f| f.sym.as_deref().is_some_and(is_latch_wait_name));
    if (futex && direct) || latch_name {
        OffKind::Latch
    } else if futex {
        OffKind::Pthread
    } else if state.starts_with('D')
        || named(&|s| {
            s.contains("_sys_pwrite")
                || s.contains("_sys_pread")
                || s.contains("fsync")
                || s.contains("io_schedule")
                || s.contains("_sys_io_")
        })
    {
        OffKind::Io
    } else {
        OffKind::Other
    }
}

/// Function names, worked out once per (dso, function start).
#[derive(Default)]
struct Names {
    memo: HashMap<(String, u64), String>,
}

impl Names {
    /// A frame's function: its symbol, else `binary+0xSTART` (the function's start as a file
    /// offset), else `binary+0xIP`.
    fn function(&mut self, f: &Frame, code: &mut dyn Code) -> String {
        if let Some(s) = &f.sym {
            return s.clone();
        }
        let start = code.function_start(&f.dso, f.ip);
        let at = start.unwrap_or(f.ip);
        if let Some(n) = self.memo.get(&(f.dso.clone(), at)) {
            return n.clone();
        }
        let off = code.file_offset(&f.dso, at).unwrap_or(at);
        let n = match start {
            Some(_) => format!("{}+0x{off:x}", base(&f.dso)),
            None => format!("{}+0x{off:x} (no function start)", base(&f.dso)),
        };
        self.memo.insert((f.dso.clone(), at), n.clone());
        n
    }

    /// The index (leaf first) of a chain's site frame: the first server frame above the wait
    /// machinery.
    fn anchor(&mut self, frames: &[Frame], code: &mut dyn Code) -> Option<usize> {
        frames
            .iter()
            .enumerate()
            .filter(|(_, f)| is_server_dso(&f.dso))
            .find(|(i, f)| {
                let name = frame_name(f, *i == 0, code);
                !matches!(
                    rules::frame_class(&name),
                    Some(Class::InnodbSpin | Class::OsWait)
                )
            })
            .map(|(i, _)| i)
    }

    /// The function names of the `n` outermost frames of a chain (leaf first), root first.
    fn chain(&mut self, frames: &[Frame], n: usize, code: &mut dyn Code) -> Vec<String> {
        let from = frames.len().saturating_sub(n);
        frames[from..]
            .iter()
            .rev()
            .map(|f| self.function(f, code))
            .collect()
    }

    /// The site of a chain (leaf first) and the nearest named server frame above it.
    fn site(&mut self, frames: &[Frame], code: &mut dyn Code) -> Option<(SiteKey, Option<String>)> {
        let ai = self.anchor(frames, code)?;
        let a = &frames[ai];
        let caller = frames[ai + 1..].iter().find(|f| is_server_dso(&f.dso));
        let context = frames[ai..]
            .iter()
            .find_map(|f| f.sym.clone().filter(|_| is_server_dso(&f.dso)));
        let key = (
            self.function(a, code),
            caller.map(|c| self.function(c, code)),
        );
        Some((key, context))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::waits::script::Events;

    /// The stripped server of the real capture: the spin loop at 0xde2970..0xde2975 in the
    /// function at 0xde2920, called from the function at 0xe11480 (at 0xe114d3 and 0xe11501),
    /// itself called from 0xda6f3c.
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

    const M: &str = "/usr/sbin/mariadbd";
    const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";
    const K: &str = "[kernel.kallsyms]";

    fn f(ip: u64, sym: Option<&str>, dso: &str) -> Frame {
        Frame {
            ip,
            sym: sym.map(str::to_string),
            dso: dso.to_string(),
        }
    }

    fn spin(tid: u32, t_us: u64) -> Event {
        Event {
            comm: "mariadbd".into(),
            pid: 100,
            tid,
            time_ns: t_us * 1000,
            period: 2_000_000,
            kind: Kind::Sample("cpu-clock".into()),
            frames: vec![
                f(0xde2972, None, M),
                f(0xe114d3, None, M),
                f(0xda6f3c, None, M),
            ],
        }
    }

    fn work(tid: u32, t_us: u64) -> Event {
        Event {
            frames: vec![f(0x72d010, None, M), f(0xda6f3c, None, M)],
            ..spin(tid, t_us)
        }
    }

    fn out(tid: u32, t_us: u64, state: &str, user: Vec<Frame>) -> Event {
        let mut frames = vec![
            f(0xffff1, Some("__schedule"), K),
            f(0xffff2, Some("futex_wait"), K),
        ];
        frames.extend(user);
        Event {
            comm: "mariadbd".into(),
            pid: 100,
            tid,
            time_ns: t_us * 1000,
            period: 1,
            kind: Kind::Switch {
                prev_pid: tid,
                prev_state: state.into(),
                next_pid: 0,
            },
            frames,
        }
    }

    fn latch_sleep(tid: u32, t_us: u64) -> Event {
        out(
            tid,
            t_us,
            "S",
            vec![
                f(0x101829, Some("syscall"), LIBC),
                f(0xe11501, None, M),
                f(0xda6f3c, None, M),
            ],
        )
    }

    fn into(tid: u32, t_us: u64) -> Event {
        Event {
            comm: "swapper".into(),
            pid: 0,
            tid: 0,
            time_ns: t_us * 1000,
            period: 1,
            kind: Kind::Switch {
                prev_pid: 0,
                prev_state: "R".into(),
                next_pid: tid,
            },
            frames: vec![],
        }
    }

    const SITE: (&str, &str) = ("mariadbd+0xe11480", "mariadbd+0xda6e00");

    fn site(j: &Joined) -> &SiteTally {
        &j.sites[&(SITE.0.to_string(), Some(SITE.1.to_string()))]
    }

    #[test]
    fn spins_and_sleeps_of_one_latch_meet_at_one_site() {
        let evs = vec![
            spin(1, 0),
            spin(1, 2000),
            latch_sleep(1, 3000),
            into(1, 3050),
            work(1, 4000),
            spin(2, 4000),
            work(2, 6000),
            latch_sleep(3, 6100),
            into(3, 6400),
        ];
        let j = join(evs.into_iter(), 100, &mut Table);
        assert_eq!(j.sites.len(), 1, "{:?}", j.sites.keys());
        let s = site(&j);
        assert_eq!(s.spin_samples, 3);
        assert_eq!(s.spin_weight, 6_000_000);
        assert_eq!(s.sleeps_ns, vec![50_000, 300_000]);
        // Thread 1 spun then slept, thread 2 spun then worked, thread 3 slept unsampled.
        assert_eq!((s.episodes, s.slept_episodes), (3, 2));
        assert_eq!((j.samples, j.spin_samples), (5, 3));
        assert_eq!(j.off[&OffKind::Latch], (2, 350_000));
    }

    #[test]
    fn preemption_and_pthread_waits_are_not_latch_sleeps() {
        let evs = vec![
            spin(1, 0),
            out(
                1,
                100,
                "R",
                vec![f(0xde2972, None, M), f(0xe114d3, None, M)],
            ),
            into(1, 900),
            out(
                2,
                1000,
                "S",
                vec![f(0x85f16, Some("__futex_abstimed_wait_common"), LIBC)],
            ),
            into(2, 2000),
        ];
        let j = join(evs.into_iter(), 100, &mut Table);
        assert_eq!(j.off[&OffKind::Preempted], (1, 800_000));
        assert_eq!(j.off[&OffKind::Pthread], (1, 1_000_000));
        assert!(!j.off.contains_key(&OffKind::Latch));
        assert_eq!(site(&j).preempted_spinning, 1);
        assert!(site(&j).sleeps_ns.is_empty());
    }

    #[test]
    fn a_switch_recorded_twice_counts_once_and_keeps_its_chain() {
        let mut bare = latch_sleep(1, 10);
        bare.frames.clear();
        // The real chain-less copy: the one frame perf prints on its event line.
        let mut late_bare = latch_sleep(2, 41);
        late_bare.frames.truncate(1);
        let evs = vec![
            bare,
            latch_sleep(1, 10),
            into(1, 30),
            into(1, 30),
            latch_sleep(2, 40),
            late_bare,
            into(2, 100),
        ];
        let j = join(evs.into_iter(), 100, &mut Table);
        assert_eq!(site(&j).sleeps_ns, vec![20_000, 60_000]);
        assert_eq!((site(&j).episodes, site(&j).slept_episodes), (2, 2));
        assert_eq!(j.open_at_end, 0);
    }

    #[test]
    fn other_processes_and_open_intervals() {
        let mut other = latch_sleep(7, 0);
        other.pid = 55;
        let evs = vec![other, into(7, 10), latch_sleep(1, 20)];
        let j = join(evs.into_iter(), 100, &mut Table);
        assert!(j.off.is_empty());
        assert_eq!(j.open_at_end, 1);
    }

    #[test]
    fn symbolized_mariadb_chains_meet_at_the_caller() {
        fn sym(s: &str) -> Option<&str> {
            Some(s)
        }
        let spin_ev = Event {
            frames: vec![
                f(1, sym("srw_mutex_impl<true>::wait_and_lock"), M),
                f(2, sym("mtr_t::page_lock"), M),
                f(3, sym("btr_cur_t::search_leaf"), M),
            ],
            ..spin(1, 0)
        };
        let sleep_ev = out(
            2,
            10,
            "S",
            vec![
                f(9, sym("syscall"), LIBC),
                f(1, sym("srw_mutex_impl<true>::wait_and_lock"), M),
                f(4, sym("mtr_t::page_lock"), M),
                f(3, sym("btr_cur_t::search_leaf"), M),
            ],
        );
        let j = join(
            vec![spin_ev, sleep_ev, into(2, 20)].into_iter(),
            100,
            &mut Table,
        );
        let key = (
            "mtr_t::page_lock".to_string(),
            Some("btr_cur_t::search_leaf".to_string()),
        );
        assert_eq!(j.sites[&key].spin_samples, 1);
        assert_eq!(j.sites[&key].sleeps_ns, vec![10_000]);
    }

    fn fixture(name: &str) -> Joined {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/perf/waits")
            .join(name);
        let text = std::fs::read(p).unwrap();
        join(Events::new(&text[..], u64::MAX), 19298, &mut Table)
    }

    #[test]
    fn the_real_captures_join() {
        // At delay 6000: spin samples, and switch-outs into latch sleeps at the same site.
        let j = fixture("mariadbd-waits-d6000-l1.perf");
        assert!(j.samples > 0 && j.spin_samples > 0, "{j:?}");
        let s = site(&j);
        assert!(s.spin_samples > 0 && s.slept_episodes > 0, "{s:?}");
        // At delay 4, one spin round: latch sleeps that end inside the window.
        let j = fixture("mariadbd-waits-d4-l1.perf");
        let (n, ns) = j.off.get(&OffKind::Latch).copied().unwrap_or_default();
        assert!(n >= 3 && ns > 0, "{:?}", j.off);
        assert!(j.sites.values().any(|t| !t.sleeps_ns.is_empty()));
    }
}
