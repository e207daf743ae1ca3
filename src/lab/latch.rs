//! The latches of the lab, each faithful to the spin design it is named after
//! (docs/REFERENCE.md §1), behind one trait so the harness treats them alike.
//!
//! A latch runs a closure under mutual exclusion (`with_lock`); the closure receives the shard
//! whose data it may touch (always 0 except for `sharded`). Waiting is accounted in a per-thread
//! [`WaitCtx`]: hints executed, yields, futex sleeps.

use std::cell::UnsafeCell;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::futex::FutexWord;
use crate::analysis::lab_stats::Waiting;
use crate::cpu::timing::{ns_to_ticks, relax_scaled, ticks};
use crate::spin::cpus::Hint;
use crate::spin::model::{hint_for, Arch, Family};

/// The latches `--latch` accepts. Everything a latch is (its name, how it waits, which spin
/// hint it executes, how it is built) is said here, once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LatchKind {
    Innodb57,
    Mysql80,
    Mariadb106,
    TimeBudget,
    Futex,
    Std,
    ParkingLot,
    Ticket,
    Mcs,
    Sharded,
}

impl LatchKind {
    /// Every latch, in display order.
    pub const ALL: [LatchKind; 10] = [
        LatchKind::Innodb57,
        LatchKind::Mysql80,
        LatchKind::Mariadb106,
        LatchKind::TimeBudget,
        LatchKind::Futex,
        LatchKind::Std,
        LatchKind::ParkingLot,
        LatchKind::Ticket,
        LatchKind::Mcs,
        LatchKind::Sharded,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LatchKind::Innodb57 => "innodb57",
            LatchKind::Mysql80 => "mysql80",
            LatchKind::Mariadb106 => "mariadb106",
            LatchKind::TimeBudget => "time-budget",
            LatchKind::Futex => "futex",
            LatchKind::Std => "std",
            LatchKind::ParkingLot => "parking-lot",
            LatchKind::Ticket => "ticket",
            LatchKind::Mcs => "mcs",
            LatchKind::Sharded => "sharded",
        }
    }

    pub fn from_name(s: &str) -> Option<LatchKind> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    /// One line for help and documentation.
    pub fn description(self) -> &'static str {
        match self {
            LatchKind::Innodb57 => "MySQL 5.7 TTASEventMutex: L rounds of k*50 hints, k in [0, d)",
            LatchKind::Mysql80 => "MySQL 8.0.16+: L rounds of k*m hints, k in [0, d]",
            LatchKind::Mariadb106 => "MariaDB 10.6+ srw_mutex: L rounds of a fixed M/4*d hints",
            LatchKind::TimeBudget => "spin one hint per test until a time budget, then futex",
            LatchKind::Futex => "one CAS, then futex wait",
            LatchKind::Std => "std::sync::Mutex",
            LatchKind::ParkingLot => "parking_lot::Mutex",
            LatchKind::Ticket => "FIFO ticket lock, yields after a bounded spin",
            LatchKind::Mcs => "MCS queue lock, each waiter spins on its own node",
            LatchKind::Sharded => "the mysql80 latch split into --shards latches",
        }
    }

    /// The server spin design the latch follows (its formula and hint come from the spin model).
    pub fn family(self) -> Option<Family> {
        match self {
            LatchKind::Innodb57 => Some(Family::MysqlFixed50),
            LatchKind::Mysql80 | LatchKind::Sharded => Some(Family::MysqlMultiplier),
            LatchKind::Mariadb106 => Some(Family::Mariadb106),
            _ => None,
        }
    }

    /// How the latch waits.
    pub fn waiting(self) -> Waiting {
        match self {
            LatchKind::TimeBudget => Waiting::TimeBudget,
            LatchKind::Futex | LatchKind::Std | LatchKind::ParkingLot => Waiting::NoHints,
            _ => Waiting::HintCount,
        }
    }

    /// The instruction one hint executes on `arch`: the server's, per the spin model (on
    /// aarch64 MariaDB's relax is no instruction, REFERENCE.md §7); spinscope's own spinners
    /// use the architecture's usual hint. None for latches that execute no hints of ours.
    pub fn hint(self, arch: Arch) -> Option<Hint> {
        match (self.family(), self.waiting()) {
            (_, Waiting::NoHints) => None,
            (Some(f), _) => Some(hint_for(f, arch)),
            (None, _) => Some(match arch {
                Arch::X86_64 => Hint::Pause,
                Arch::Aarch64 => Hint::Isb,
            }),
        }
    }

    /// True for the latch whose hints per round follow MariaDB's my_cpu_relax_multiplier.
    pub fn uses_relax_multiplier(self) -> bool {
        self == LatchKind::Mariadb106
    }

    /// Build the latch.
    pub fn build(self, p: &SpinParams) -> Box<dyn Latch> {
        match self {
            LatchKind::Innodb57 => Box::new(InnoDbLatch::innodb57(p)),
            LatchKind::Mysql80 => Box::new(InnoDbLatch::mysql80(p)),
            LatchKind::Mariadb106 => Box::new(MariaDbLatch::new(p)),
            LatchKind::TimeBudget => Box::new(TimeBudgetLatch::new(p.budget_ns)),
            LatchKind::Futex => Box::new(FutexLatch::default()),
            LatchKind::Std => Box::new(StdLatch::default()),
            LatchKind::ParkingLot => Box::new(ParkingLotLatch::default()),
            LatchKind::Ticket => Box::new(TicketLatch::default()),
            LatchKind::Mcs => Box::new(McsLatch::default()),
            LatchKind::Sharded => Box::new(ShardedLatch::new(p)),
        }
    }
}

impl std::fmt::Display for LatchKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Spins of a queue lock (ticket, MCS) before it yields the CPU once: without it an
/// oversubscribed queue lock waits a whole scheduler slice for a preempted successor.
const QUEUE_SPINS_BEFORE_YIELD: u32 = 128;

/// A waiter looks at the stop flag at least once per this many executed instructions of its
/// hint (scaled hints count `--pause-scale` each): about 50 us of PAUSEs on the slowest CPUs,
/// so a stop cuts even a spin of minutes short at once.
pub const STOP_CHECK_HINTS: u32 = 1024;

/// Spin parameters: the server variables, with the servers' defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpinParams {
    /// `innodb_spin_wait_delay` (d): MySQL default 6, MariaDB default 4.
    pub delay: u32,
    /// `innodb_sync_spin_loops` (L): rounds before the OS wait; default 30.
    pub loops: u32,
    /// `innodb_spin_wait_pause_multiplier` (m), MySQL 8.0.16+: default 50.
    pub multiplier: u32,
    /// MariaDB's `my_cpu_relax_multiplier` (M): 100 on a slow-hint CPU, 200 on a fast one.
    pub relax_multiplier: u32,
    /// MariaDB's delay d (its default differs from MySQL's).
    pub mariadb_delay: u32,
    /// Spin budget of `time-budget`, in ns.
    pub budget_ns: u64,
    /// Shards of `sharded`.
    pub shards: usize,
}

impl Default for SpinParams {
    fn default() -> Self {
        SpinParams {
            delay: 6,
            loops: 30,
            multiplier: 50,
            relax_multiplier: 200,
            mariadb_delay: 4,
            budget_ns: 20_000,
            shards: 8,
        }
    }
}

/// Per-thread waiting state and counters.
pub struct WaitCtx {
    pub rng: SmallRng,
    /// Each hint is `hint` executed this many times (`--pause-scale`).
    pub pause_scale: u32,
    /// The instruction of one hint (`Hint::None`: a compiler barrier only).
    pub hint: Hint,
    /// Logical hints executed (one per emulated hint, whatever the scale).
    pub hints: u64,
    pub yields: u64,
    pub futex_waits: u64,
    stop: Option<Arc<AtomicBool>>,
    /// Set once a spin saw the stop flag: later hints are skipped, so every waiter reaches the
    /// lock word (and the futex) at once.
    pub stopped: bool,
}

impl WaitCtx {
    pub fn new(rng: SmallRng, pause_scale: u32) -> Self {
        WaitCtx {
            rng,
            pause_scale: pause_scale.max(1),
            hint: crate::cpu::arch::primary_hint(),
            hints: 0,
            yields: 0,
            futex_waits: 0,
            stop: None,
            stopped: false,
        }
    }

    /// Execute `hint` per emulated hint instead of the architecture's usual one.
    pub fn with_hint(mut self, hint: Hint) -> Self {
        self.hint = hint;
        self
    }

    /// Watch `stop` inside spin loops.
    pub fn with_stop(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// True once the stop flag was seen (checked now).
    #[inline]
    pub fn should_stop(&mut self) -> bool {
        if !self.stopped {
            if let Some(s) = &self.stop {
                self.stopped = s.load(Ordering::Relaxed);
            }
        }
        self.stopped
    }

    /// Execute `n` emulated hints, looking at the stop flag every [`STOP_CHECK_HINTS`]
    /// instructions; after a stop the rest are skipped.
    #[inline]
    pub fn hints(&mut self, n: u64) {
        if self.stopped {
            return;
        }
        let chunk = (STOP_CHECK_HINTS / self.pause_scale).max(1) as u64;
        let mut done = 0u64;
        while done < n {
            let c = chunk.min(n - done);
            for _ in 0..c {
                relax_scaled(self.hint, self.pause_scale);
            }
            done += c;
            if self.should_stop() {
                break;
            }
        }
        self.hints += done;
    }

    fn yield_now(&mut self) {
        self.yields += 1;
        std::thread::yield_now();
    }
}

/// A latch: acquire, run `cs(shard)`, release.
pub trait Latch: Send + Sync {
    fn with_lock(&self, ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize));
    /// How many independent shards of protected data the latch guards.
    fn shards(&self) -> usize {
        1
    }
}

// ---------------------------------------------------------------------------------------------
// Random ranges of the InnoDB delays (docs/REFERENCE.md §1), pure and tested.

/// MySQL 5.6/5.7 (and 8.0 before 8.0.16) `ut_rnd_interval(0, d)` = `0 + rnd % d`: k in
/// {0..d-1}, exclusive despite its comment; d = 0 gives 0.
pub fn innodb57_k(rnd: u64, d: u32) -> u32 {
    if d == 0 {
        0
    } else {
        (rnd % d as u64) as u32
    }
}

/// MySQL 8.0.40 / 8.4 `ut::random_from_interval_fast(0, d)` = `low + rnd % (high-low+1)`:
/// k in {0..d}, inclusive.
pub fn mysql80_k(rnd: u64, d: u32) -> u32 {
    (rnd % (d as u64 + 1)) as u32
}

// ---------------------------------------------------------------------------------------------

/// MySQL's `TTASEventMutex` spin (docs/REFERENCE.md §1): test-and-test-and-set; on failure up to L
/// rounds of `ut_delay(k)` = `k * hints_per_unit` hints with a random k (5.7: 50 hints, k in
/// [0, d); 8.0.16+: m hints, k in [0, d]); then `std::this_thread::yield()` and one more try; then
/// the OS wait (here a futex). After a wake-up it spins again, as InnoDB does.
pub struct InnoDbLatch {
    word: FutexWord,
    delay: u32,
    loops: u32,
    hints_per_unit: u32,
    inclusive: bool,
}

impl InnoDbLatch {
    pub fn innodb57(p: &SpinParams) -> Self {
        InnoDbLatch {
            word: FutexWord::new(),
            delay: p.delay,
            loops: p.loops,
            hints_per_unit: 50,
            inclusive: false,
        }
    }
    pub fn mysql80(p: &SpinParams) -> Self {
        InnoDbLatch {
            word: FutexWord::new(),
            delay: p.delay,
            loops: p.loops,
            hints_per_unit: p.multiplier,
            inclusive: true,
        }
    }

    fn lock(&self, ctx: &mut WaitCtx) {
        let mut slept = false;
        loop {
            for _ in 0..self.loops {
                if self.word.is_free() && self.word.try_lock(slept) {
                    return;
                }
                let rnd: u64 = ctx.rng.gen();
                let k = if self.inclusive {
                    mysql80_k(rnd, self.delay)
                } else {
                    innodb57_k(rnd, self.delay)
                };
                ctx.hints(k as u64 * self.hints_per_unit as u64);
            }
            ctx.yield_now();
            if self.word.try_lock(slept) {
                return;
            }
            if self.word.sleep_once() {
                return;
            }
            ctx.futex_waits += 1;
            slept = true;
        }
    }
}

impl Latch for InnoDbLatch {
    fn with_lock(&self, ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize)) {
        self.lock(ctx);
        cs(0);
        self.word.unlock();
    }
}

/// MariaDB 10.6+ `srw_mutex` (docs/REFERENCE.md §1, `srw_lock.cc`): L rounds of a FIXED
/// `M/4 * d` hints (no randomness), trying the lock between rounds; then the futex wait loop.
pub struct MariaDbLatch {
    word: FutexWord,
    hints_per_round: u64,
    loops: u32,
}

impl MariaDbLatch {
    pub fn new(p: &SpinParams) -> Self {
        MariaDbLatch {
            word: FutexWord::new(),
            hints_per_round: mariadb_hints_per_round(p.relax_multiplier, p.mariadb_delay),
            loops: p.loops,
        }
    }
}

/// `srw_pause(delay)`: `delay *= my_cpu_relax_multiplier / 4` hints.
pub fn mariadb_hints_per_round(relax_multiplier: u32, d: u32) -> u64 {
    (relax_multiplier / 4) as u64 * d as u64
}

impl Latch for MariaDbLatch {
    fn with_lock(&self, ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize)) {
        let mut acquired = self.word.try_lock(false);
        if !acquired {
            for _ in 0..self.loops {
                ctx.hints(self.hints_per_round);
                if self.word.is_free() && self.word.try_lock(false) {
                    acquired = true;
                    break;
                }
            }
        }
        if !acquired {
            ctx.futex_waits += self.word.wait_lock();
        }
        cs(0);
        self.word.unlock();
    }
}

/// spinscope's own answer: spin (one hint between tests) until a budget in ns measured with
/// the TSC, then the futex wait loop. The spin time is independent of the hint's latency by
/// construction, so a 14x slower PAUSE does not make it spin 14x longer (docs/REFERENCE.md §1, §8).
pub struct TimeBudgetLatch {
    word: FutexWord,
    budget_ticks: u64,
}

impl TimeBudgetLatch {
    pub fn new(budget_ns: u64) -> Self {
        TimeBudgetLatch {
            word: FutexWord::new(),
            budget_ticks: ns_to_ticks(budget_ns),
        }
    }
}

impl Latch for TimeBudgetLatch {
    fn with_lock(&self, ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize)) {
        if !self.word.try_lock(false) {
            let start = ticks();
            let mut acquired = false;
            while ticks().wrapping_sub(start) < self.budget_ticks && !ctx.stopped {
                ctx.hints(1);
                if self.word.is_free() && self.word.try_lock(false) {
                    acquired = true;
                    break;
                }
            }
            if !acquired {
                ctx.futex_waits += self.word.wait_lock();
            }
        }
        cs(0);
        self.word.unlock();
    }
}

/// No spinning at all: one CAS, then the futex wait loop.
#[derive(Default)]
pub struct FutexLatch {
    word: FutexWord,
}

impl Latch for FutexLatch {
    fn with_lock(&self, ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize)) {
        if !self.word.try_lock(false) {
            ctx.futex_waits += self.word.wait_lock();
        }
        cs(0);
        self.word.unlock();
    }
}

/// `std::sync::Mutex` (futex-based on Linux, with a short spin of its own).
#[derive(Default)]
pub struct StdLatch {
    m: std::sync::Mutex<()>,
}

impl Latch for StdLatch {
    fn with_lock(&self, _ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize)) {
        // A panic inside `cs` would poison the mutex; the lab's critical sections do not panic,
        // and a poisoned lock still excludes, so take it either way.
        let _g = self.m.lock().unwrap_or_else(|e| e.into_inner());
        cs(0);
    }
}

/// `parking_lot::Mutex`: adaptive spin (exponential, bounded) then parking; eventually fair.
#[derive(Default)]
pub struct ParkingLotLatch {
    m: parking_lot::Mutex<()>,
}

impl Latch for ParkingLotLatch {
    fn with_lock(&self, _ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize)) {
        let _g = self.m.lock();
        cs(0);
    }
}

/// A ticket lock: FIFO-fair; waiters spin on the "now serving" counter with one hint per test
/// and yield after a bounded spin (otherwise a preempted successor stalls everyone for a slice).
#[derive(Default)]
pub struct TicketLatch {
    next: AtomicU32,
    serving: AtomicU32,
}

impl Latch for TicketLatch {
    fn with_lock(&self, ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize)) {
        let my = self.next.fetch_add(1, Ordering::Relaxed);
        let mut spins = 0u32;
        while self.serving.load(Ordering::Acquire) != my {
            ctx.hints(1);
            spins += 1;
            if spins % QUEUE_SPINS_BEFORE_YIELD == 0 {
                ctx.yield_now();
            }
        }
        cs(0);
        self.serving.store(my.wrapping_add(1), Ordering::Release);
    }
}

/// A queue node of the MCS lock; lives on the waiter's stack for the duration of `with_lock`.
struct McsNode {
    next: AtomicPtr<McsNode>,
    locked: AtomicBool,
}

/// The MCS queue lock (Mellor-Crummey and Scott 1991): FIFO-fair, each waiter spins on its own
/// node (its own cache line), so a release touches one waiter only.
#[derive(Default)]
pub struct McsLatch {
    tail: AtomicPtr<McsNode>,
}

impl Latch for McsLatch {
    fn with_lock(&self, ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize)) {
        let node = McsNode {
            next: AtomicPtr::new(ptr::null_mut()),
            locked: AtomicBool::new(true),
        };
        let me = &node as *const McsNode as *mut McsNode;
        let pred = self.tail.swap(me, Ordering::AcqRel);
        if !pred.is_null() {
            // SAFETY: `pred` was the tail, so its owner is inside `with_lock` and cannot return
            // (its node stays alive) until it has seen our `next` link and handed over to us.
            unsafe { (*pred).next.store(me, Ordering::Release) };
            let mut spins = 0u32;
            while node.locked.load(Ordering::Acquire) {
                ctx.hints(1);
                spins += 1;
                if spins % QUEUE_SPINS_BEFORE_YIELD == 0 {
                    ctx.yield_now();
                }
            }
        }
        cs(0);
        let mut next = node.next.load(Ordering::Acquire);
        if next.is_null() {
            if self
                .tail
                .compare_exchange(me, ptr::null_mut(), Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            // A successor swapped itself in but has not linked yet: wait for the link.
            loop {
                next = node.next.load(Ordering::Acquire);
                if !next.is_null() {
                    break;
                }
                ctx.hints(1);
            }
        }
        // SAFETY: `next` is a successor's live node: it waits in its spin loop until we clear
        // `locked`, and touches nothing of ours afterwards.
        unsafe { (*next).locked.store(false, Ordering::Release) };
    }
}

/// Latch sharding : the data is split into `shards` parts, each with its own
/// MySQL 8.0 latch; an operation picks a random shard (as a page or row hash would), so
/// contention per latch drops by about the shard count.
pub struct ShardedLatch {
    shards: Vec<CachePadded<InnoDbLatch>>,
}

/// Keep shards on separate 128-byte lines (adjacent-line prefetch pairs 64-byte lines).
#[repr(align(128))]
struct CachePadded<T>(T);

impl ShardedLatch {
    pub fn new(p: &SpinParams) -> Self {
        ShardedLatch {
            shards: (0..p.shards.max(1))
                .map(|_| CachePadded(InnoDbLatch::mysql80(p)))
                .collect(),
        }
    }
}

impl Latch for ShardedLatch {
    fn with_lock(&self, ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize)) {
        let s = ctx.rng.gen_range(0..self.shards.len());
        self.shards[s].0.lock(ctx);
        cs(s);
        self.shards[s].0.word.unlock();
    }
    fn shards(&self) -> usize {
        self.shards.len()
    }
}

/// Plain (non-atomic) data that only a latch protects: the mutual-exclusion test increments it
/// with a read and a separate write, so any overlap of two holders loses an update.
pub struct Unprotected {
    cells: Vec<CachePadded<UnsafeCell<u64>>>,
}

// SAFETY: every access goes through `bump`, whose contract requires holding the latch of that
// shard; the lab's purpose is to check exactly that contract.
unsafe impl Sync for Unprotected {}

impl Unprotected {
    pub fn new(shards: usize) -> Self {
        Unprotected {
            cells: (0..shards.max(1))
                .map(|_| CachePadded(UnsafeCell::new(0)))
                .collect(),
        }
    }

    /// Increment shard `s` non-atomically.
    ///
    /// # Safety
    /// The caller must hold the latch that guards shard `s`.
    #[inline]
    pub unsafe fn bump(&self, s: usize) {
        // SAFETY: same contract.
        unsafe { self.bump_with_gap(s, || {}) }
    }

    /// As `bump`, with `gap` run between the read and the write. `bump` is this with an empty
    /// gap, so the test that forces another increment into the gap (proving the lost-update
    /// check can fail) exercises the very read and write the harness uses.
    ///
    /// # Safety
    /// As `bump`.
    #[inline]
    pub unsafe fn bump_with_gap(&self, s: usize, gap: impl FnOnce()) {
        let p = self.cells[s].0.get();
        // SAFETY: the caller holds the shard's latch (function contract); volatile keeps the
        // read and the write separate so a broken latch shows as lost updates.
        unsafe {
            let v = ptr::read_volatile(p);
            gap();
            ptr::write_volatile(p, v + 1);
        }
    }

    /// Sum over shards; call after all workers joined.
    pub fn total(&self) -> u64 {
        // SAFETY: called after every worker thread has been joined: no concurrent access.
        self.cells.iter().map(|c| unsafe { *c.0.get() }).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::collections::BTreeSet;

    #[test]
    fn innodb57_draws_exactly_0_to_d_minus_1() {
        let mut r = SmallRng::seed_from_u64(1);
        for d in [1u32, 2, 6, 30] {
            let seen: BTreeSet<u32> = (0..20_000).map(|_| innodb57_k(r.gen(), d)).collect();
            assert_eq!(seen, (0..d).collect::<BTreeSet<_>>(), "d={d}");
        }
        assert_eq!(innodb57_k(12345, 0), 0);
    }

    #[test]
    fn mysql80_draws_exactly_0_to_d_inclusive() {
        let mut r = SmallRng::seed_from_u64(2);
        for d in [0u32, 1, 6, 30] {
            let seen: BTreeSet<u32> = (0..20_000).map(|_| mysql80_k(r.gen(), d)).collect();
            assert_eq!(seen, (0..=d).collect::<BTreeSet<_>>(), "d={d}");
        }
    }

    #[test]
    fn mariadb_rounds_follow_the_multiplier() {
        // M itself comes from the spin model's rule (spin::model::mariadb_multiplier_for).
        assert_eq!(mariadb_hints_per_round(100, 4), 100); // 25*d on a slow-hint CPU
        assert_eq!(mariadb_hints_per_round(200, 4), 200); // 50*d on a fast one
    }

    #[test]
    fn every_name_round_trips_and_unknown_does_not() {
        for k in LatchKind::ALL {
            assert_eq!(LatchKind::from_name(k.name()), Some(k));
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()), "JSON name of {k:?}");
        }
        assert_eq!(LatchKind::from_name("nope"), None);
        assert_eq!(LatchKind::Sharded.build(&SpinParams::default()).shards(), 8);
    }

    /// The hint each latch executes comes from the spin model: MariaDB's relax is no
    /// instruction on aarch64, MySQL's is ISB; on x86 all spinning latches PAUSE.
    #[test]
    fn latch_hints_follow_the_spin_model() {
        use LatchKind::*;
        assert_eq!(Mariadb106.hint(Arch::Aarch64), Some(Hint::None));
        assert_eq!(Mariadb106.hint(Arch::X86_64), Some(Hint::Pause));
        for k in [Innodb57, Mysql80, Sharded, TimeBudget, Ticket, Mcs] {
            assert_eq!(k.hint(Arch::Aarch64), Some(Hint::Isb), "{k}");
            assert_eq!(k.hint(Arch::X86_64), Some(Hint::Pause), "{k}");
        }
        for k in [Futex, Std, ParkingLot] {
            assert_eq!(k.hint(Arch::X86_64), None, "{k}");
        }
    }

    /// A stop cuts a spin of (here) about 10^11 PAUSEs short within the check interval.
    #[test]
    fn a_stop_cuts_a_huge_spin_short() {
        let stop = Arc::new(AtomicBool::new(false));
        let mut ctx = WaitCtx::new(SmallRng::seed_from_u64(4), 1000).with_stop(stop.clone());
        let t = std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            ctx.hints(100_000_000);
            (t0.elapsed(), ctx.hints, ctx.stopped)
        });
        std::thread::sleep(std::time::Duration::from_millis(30));
        stop.store(true, Ordering::Relaxed);
        let (took, hints, stopped) = t.join().unwrap();
        assert!(stopped);
        assert!(hints < 100_000_000, "{hints} hints: the stop was not seen");
        assert!(took < std::time::Duration::from_secs(2), "took {took:?}");
    }

    #[test]
    fn innodb_spins_the_documented_hints_when_the_lock_stays_busy() {
        // Hold the word from the outside: the waiter spins L rounds, yields, then marks the word
        // contended and sleeps. Releasing only after that mark (not after a fixed sleep, which
        // a loaded machine can outlast before the waiter even starts) makes the path certain.
        let p = SpinParams {
            loops: 3,
            delay: 6,
            multiplier: 50,
            ..SpinParams::default()
        };
        let l = InnoDbLatch::mysql80(&p);
        assert!(l.word.try_lock(false));
        let mut ctx = WaitCtx::new(SmallRng::seed_from_u64(3), 1);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !l.word.has_sleepers() {
                    std::thread::yield_now();
                }
                l.word.unlock();
            });
            l.with_lock(&mut ctx, &mut |_| {});
        });
        // L rounds of k*m hints with k drawn from the waiter's own generator; after the wake-up
        // the free word is taken before any hint. Replay the draws to know the exact count.
        let mut r = SmallRng::seed_from_u64(3);
        let expected: u64 = (0..3).map(|_| mysql80_k(r.gen(), 6) as u64 * 50).sum();
        assert!(expected > 0, "seed draws only zeros; pick another");
        assert_eq!(ctx.hints, expected);
        assert!(ctx.yields >= 1, "the waiter did not yield before sleeping");
    }
}
