//! The measuring side of the probe: the raw clock, CPU pinning, the hardware cycle counter,
//! timed batches of hints and the SMT-sibling load. Only this file (and `arch`) touch clocks,
//! threads and syscalls; the numbers go to `calc` for the arithmetic.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::arch;
use super::calc;
use crate::spin::cpus::Hint;

/// CLOCK_MONOTONIC_RAW in ns (not slewed by NTP), or None where it is missing.
pub fn mono_raw_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// One (ns, ticks) reading, bracketed by two counter reads; of `tries` attempts the one with
/// the tightest bracket wins, so an interrupt between the reads does not skew the pair.
fn paired_reading(tries: usize) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..tries.max(1) {
        let a = arch::ticks_now();
        let ns = mono_raw_ns()?;
        let b = arch::ticks_now();
        let width = b.wrapping_sub(a);
        let mid = a.wrapping_add(width / 2);
        if best.is_none_or(|(w, _, _)| width < w) {
            best = Some((width, ns, mid));
        }
    }
    best.map(|(_, ns, t)| (ns, t))
}

/// Context switches of the calling thread so far (voluntary + involuntary, getrusage
/// RUSAGE_THREAD): a change across a timed stretch means the thread left its CPU inside it.
pub fn thread_switches() -> Option<u64> {
    // SAFETY: a zeroed rusage is a valid out-buffer; the kernel fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage for the duration of the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (rc == 0).then(|| (ru.ru_nvcsw + ru.ru_nivcsw) as u64)
}

/// (steal, total) jiffies of the whole machine from /proc/stat, for the steal share across a
/// measurement (time a hypervisor ran something else on our vCPUs).
pub fn steal_jiffies() -> Option<(u64, u64)> {
    calc::parse_proc_stat_steal(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// Calibration windows taken; the median of those without a context switch is the rate.
pub const CALIBRATION_WINDOWS: usize = 9;

/// The counter rate in GHz: ticks over CLOCK_MONOTONIC_RAW across `window`, the median of
/// [`CALIBRATION_WINDOWS`] windows, leaving out windows in which this thread was switched out
/// (a window that straddles a preemption measures the same two clocks, but a stale pair of
/// readings does not). Returns (GHz, total calibration time in ms). Windows of 2 ms or less
/// are spun on the clock rather than slept: on a busy machine a 1 ms sleep wakes 2-3 ms late,
/// and the tight bracket of the paired reads already makes 1 ms accurate to about 1e-4.
pub fn calibrate(window: Duration) -> Option<(f64, f64)> {
    let start = mono_raw_ns()?;
    let (mut clean, mut all) = (Vec::new(), Vec::new());
    for _ in 0..CALIBRATION_WINDOWS {
        let sw0 = thread_switches();
        let (n0, t0) = paired_reading(8)?;
        if window <= Duration::from_millis(2) {
            let end = n0 + window.as_nanos() as u64;
            while mono_raw_ns()? < end {
                std::hint::spin_loop();
            }
        } else {
            std::thread::sleep(window);
        }
        let (n1, t1) = paired_reading(8)?;
        let undisturbed = sw0.is_some() && sw0 == thread_switches();
        if let Some(g) = calc::ghz(n0, t0, n1, t1) {
            all.push(g);
            if undisturbed || window > Duration::from_millis(2) {
                clean.push(g);
            }
        }
    }
    let end = mono_raw_ns()?;
    let pick = if clean.len() >= 3 { &clean } else { &all };
    let s = crate::analysis::stats::summarize(pick)?;
    Some((s.median, (end - start) as f64 / 1e6))
}

/// Raw tick counts of one series: the empty-batch overhead samples, the batch size chosen and
/// the timed batches in groups; only groups in which this thread kept its CPU are kept.
pub struct Series {
    pub overhead: Vec<u64>,
    pub iters: u32,
    /// The batches of the kept groups, in order.
    pub batches: Vec<u64>,
    /// The kept groups (consecutive batches with no context switch or migration inside).
    pub groups: Vec<Vec<u64>>,
    /// Groups measured again because a context switch or a migration landed inside them.
    pub disturbed_groups: usize,
    /// Core cycles per counter tick beside each batch of the kept groups (a chain of dependent
    /// adds timed right after the batch; NaN where it could not be timed): the core clock over
    /// the counter rate at the moment the batch ran.
    pub pair_clocks: Vec<Vec<f64>>,
}

/// Batches per group: about 20 groups per series, 5 to 50 batches each.
pub fn group_size(batches: usize) -> usize {
    (batches / 20).clamp(5, 50)
}

/// Non-hint work after every batch, in ns. A hypervisor with pause-loop exiting (Intel PLE,
/// AMD pause filter) sees back-to-back PAUSEs spanning more than its window (4096 cycles by
/// default in KVM) as a spinning vCPU and exits to the host, which may run another vCPU
/// first; a gap longer than the PLE gap (128 cycles) between short batches ends the loop as
/// the hardware counts it, so the batches time the core, not the host's scheduler.
pub const BATCH_GAP_NS: f64 = 200.0;

/// A pause between groups: 40 groups sample about 0.4 s instead of 5 ms, so a spell of a
/// slower core clock (a busy SMT sibling on the host, a power limit; seen lasting 100-200 ms
/// on a Sapphire Rapids guest) covers a minority of the groups and the ns figure, given at
/// the fast clock of the groups (their 90th percentile), stays the core's own. The cycles
/// per hint do not depend on it: every batch is paired with its own clock reading. Sleeping
/// costs no CPU; with 20 ms pauses a series took 0.8 s, and a retried one 1.6 s, beyond the
/// 1.5 s a probe may take (issue 34).
pub const GROUP_PAUSE: Duration = Duration::from_millis(10);

/// Core cycles per tick from a timed add chain, the reads' cost subtracted.
fn chain_clock(iters: u32, overhead_ticks: f64) -> Option<f64> {
    let t = arch::add_chain_ticks(iters)? as f64 - overhead_ticks;
    let adds = iters as f64 * arch::ADD_CHAIN_UNROLL as f64;
    (t > 0.0).then(|| adds / t)
}

/// One batch followed by the gap of plain work.
fn batch_with_gap(hint: Hint, iters: u32, gap_ticks: u64) -> Option<u64> {
    let t = arch::timed_batch(hint, iters)?;
    let g0 = arch::ticks_fast();
    while arch::ticks_fast().wrapping_sub(g0) < gap_ticks {}
    Some(t)
}

/// Time about `batches` batches of `hint`, each sized to about `target_ticks`, paired with a
/// timed add chain of about the same length (the core clock at that moment) and followed by
/// `gap_ticks` of plain work, after spinning for `warmup_ticks` first. A clock read once per
/// group missed clocks that moved within the group, and the group's cycles came out wrong
/// both ways (issue 34: groups spread 28% on a quiet Sapphire Rapids host); a clock beside
/// every batch gives each batch its own cycles. Batches run in groups of [`group_size`]; a
/// group in which the thread was switched out or moved (getrusage, sched_getcpu) is measured
/// again, up to three times as many groups in all.
pub fn time_hint(
    hint: Hint,
    batches: usize,
    target_ticks: f64,
    warmup_ticks: u64,
    gap_ticks: u64,
) -> Option<Series> {
    // Warm up: page in the code and let the core settle. Measured on a KVM guest (EPYC), the
    // first ~10 ms of spinning ran 5% fewer ticks per PAUSE than the steady state that follows
    // (the clock settles under sustained load), which made medians of short runs jump.
    let w0 = arch::ticks_now();
    let mut est = Vec::new();
    loop {
        est.push(batch_with_gap(hint, 8, gap_ticks)?);
        if arch::ticks_now().wrapping_sub(w0) >= warmup_ticks && est.len() >= 16 {
            break;
        }
    }
    let est = &est[est.len() - 16..];
    let overhead: Vec<u64> = (0..64)
        .map(|_| batch_with_gap(hint, 0, gap_ticks))
        .collect::<Option<_>>()?;
    let oh = calc::overhead(&overhead);
    let per = calc::per_hint(est, oh, 8 * arch::UNROLL as u64);
    let guess = crate::analysis::stats::summarize(&per).map_or(0.0, |s| s.median);
    let iters = calc::iters_for(target_ticks, guess, arch::UNROLL);
    // The add chain sized like a batch: cycles per tick from a short chain first.
    let per_tick = chain_clock(16, oh).unwrap_or(1.0);
    let chain_iters = calc::iters_for(target_ticks, 1.0 / per_tick, arch::ADD_CHAIN_UNROLL);
    let g = group_size(batches);
    let want = batches.div_ceil(g).max(1);
    let (mut groups, mut clocks, mut disturbed) = (Vec::with_capacity(want), Vec::new(), 0);
    for k in 0..want * 3 {
        if groups.len() == want {
            break;
        }
        if k > 0 {
            std::thread::sleep(GROUP_PAUSE);
        }
        let (sw0, cpu0) = (thread_switches(), current_cpu());
        let (mut v, mut c) = (Vec::with_capacity(g), Vec::with_capacity(g));
        for _ in 0..g {
            let t = arch::timed_batch(hint, iters)?;
            c.push(chain_clock(chain_iters, oh).unwrap_or(f64::NAN));
            let g0 = arch::ticks_fast();
            while arch::ticks_fast().wrapping_sub(g0) < gap_ticks {}
            v.push(t);
        }
        if sw0.is_some() && sw0 == thread_switches() && cpu0 == current_cpu() {
            groups.push(v);
            clocks.push(c);
        } else {
            disturbed += 1;
        }
    }
    Some(Series {
        overhead,
        iters,
        batches: groups.iter().flatten().copied().collect(),
        groups,
        disturbed_groups: disturbed,
        pair_clocks: clocks,
    })
}

/// A user-space hardware cycle counter on the calling thread (perf_event_open).
pub struct CycleCounter {
    fd: libc::c_int,
}

impl CycleCounter {
    /// Open PERF_COUNT_HW_CPU_CYCLES for this thread, user space only. The error says why not
    /// (no PMU in a VM, perf_event_paranoid, seccomp).
    pub fn open() -> Result<CycleCounter, String> {
        // perf_event_attr, the first 64 bytes (PERF_ATTR_SIZE_VER0) are all we set: type u32
        // at 0, size u32 at 4, config u64 at 8, flags bitfield u64 at 40. The rest stays 0.
        let mut attr = [0u64; 16];
        const PERF_TYPE_HARDWARE: u64 = 0;
        const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
        const SIZE_VER0: u64 = 64;
        // Bits of the flags word: exclude_kernel (5), exclude_hv (6).
        const FLAGS: u64 = (1 << 5) | (1 << 6);
        const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
        attr[0] = PERF_TYPE_HARDWARE | (SIZE_VER0 << 32);
        attr[1] = PERF_COUNT_HW_CPU_CYCLES;
        attr[5] = FLAGS;
        // SAFETY: `attr` is a 128-byte, 8-aligned buffer that outlives the call; the kernel
        // reads `size` (64) bytes of it. pid 0 / cpu -1: this thread on any CPU.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                attr.as_ptr(),
                0 as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            let why = match e.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => {
                    "no hardware cycle counter is exposed (common in VMs without a virtual PMU)"
                }
                Some(libc::EACCES) | Some(libc::EPERM) => {
                    "not permitted (kernel.perf_event_paranoid or a seccomp filter)"
                }
                _ => "perf_event_open refused it",
            };
            return Err(format!("{why}: {e}"));
        }
        Ok(CycleCounter {
            fd: fd as libc::c_int,
        })
    }

    pub fn read(&self) -> Option<u64> {
        let mut v = 0u64;
        // SAFETY: reading 8 bytes into a valid u64 from our own perf fd.
        let n = unsafe { libc::read(self.fd, (&mut v as *mut u64).cast(), 8) };
        (n == 8).then_some(v)
    }
}

impl Drop for CycleCounter {
    fn drop(&mut self) {
        // SAFETY: closing the fd we opened, once.
        unsafe { libc::close(self.fd) };
    }
}

/// Core cycles per hint, median of `reps` runs of `iters * UNROLL` hints; or why not.
pub fn cycles_per_hint(hint: Hint, iters: u32, reps: usize) -> Result<f64, String> {
    let c = CycleCounter::open()?;
    let hints = iters as f64 * arch::UNROLL as f64;
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps {
        let a = c.read().ok_or("reading the cycle counter failed")?;
        arch::run_hints(hint, iters);
        let b = c.read().ok_or("reading the cycle counter failed")?;
        if b > a {
            v.push((b - a) as f64 / hints);
        }
    }
    let s = crate::analysis::stats::summarize(&v)
        .ok_or("the cycle counter did not advance (counter not counting)")?;
    Ok(s.median)
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments and only returns a value.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// The calling thread's affinity mask, to restore after pinning.
pub fn get_affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the kernel fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let rc = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        (rc == 0).then_some(set)
    }
}

/// CPUs in an affinity mask.
pub fn cpus_in(set: &libc::cpu_set_t) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads a bit of a valid set within CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

pub fn set_affinity(set: &libc::cpu_set_t) -> bool {
    // SAFETY: `set` is a valid cpu_set_t; pid 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) == 0 }
}

/// Pin the calling thread to one CPU and wait until it runs there.
pub fn pin_to(cpu: usize) -> Result<(), String> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("CPU {cpu} is beyond this build's CPU set size"));
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET stays within CPU_SETSIZE.
    let set = unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut s);
        s
    };
    if !set_affinity(&set) {
        return Err(format!(
            "sched_setaffinity to CPU {cpu} failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    for _ in 0..100 {
        if current_cpu() == Some(cpu) {
            return Ok(());
        }
        std::thread::yield_now();
    }
    Err(format!(
        "the scheduler did not move this thread to CPU {cpu}"
    ))
}

/// Keeps one CPU busy with integer work until dropped (the `--smt-load` sibling).
pub struct BusyLoad {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl BusyLoad {
    pub fn start(cpu: usize) -> Result<BusyLoad, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("smt-load-{cpu}"))
            .spawn(move || {
                let r = pin_to(cpu);
                let ok = r.is_ok();
                let _ = tx.send(r);
                if ok {
                    arch::busy_until(&s2);
                }
            })
            .map_err(|e| format!("cannot start the load thread: {e}"))?;
        let started = rx
            .recv_timeout(Duration::from_secs(2))
            .map_err(|_| "the load thread did not start".to_string())
            .and_then(|r| r);
        let load = BusyLoad {
            stop,
            handle: Some(handle),
        };
        started?;
        // Let the sibling reach a steady state before measuring.
        std::thread::sleep(Duration::from_millis(5));
        Ok(load)
    }
}

impl Drop for BusyLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// MariaDB's startup measurement repeated `trials` times (x86 only), each PAUSE executed
/// `scale` times (1 = MariaDB's own; the lab passes its `--pause-scale`).
pub fn mariadb_trials(trials: usize, scale: u32) -> Vec<(u64, u64)> {
    (0..trials)
        .filter_map(|_| arch::mariadb_startup_sample(scale))
        .collect()
}

/// Hostname and kernel release from /proc.
pub fn host_strings() -> (Option<String>, Option<String>) {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    (
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/osrelease"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_clock_moves_forward() {
        let a = mono_raw_ns().unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let b = mono_raw_ns().unwrap();
        assert!(b > a + 1_000_000, "{a} {b}");
    }

    #[test]
    fn pinning_to_the_current_cpu_works_and_restores() {
        let orig = get_affinity().unwrap();
        let allowed = cpus_in(&orig);
        assert!(!allowed.is_empty());
        pin_to(allowed[0]).unwrap();
        assert_eq!(current_cpu(), Some(allowed[0]));
        assert!(set_affinity(&orig));
        assert_eq!(cpus_in(&get_affinity().unwrap()), allowed);
    }
}
