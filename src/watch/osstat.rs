//! What pt-stalk keeps beside the server's own counters, where it costs the server nothing: this
//! host's statistics once a second (CPU split and context switches from `/proc/stat`, load from
//! `/proc/loadavg`, memory from `/proc/meminfo`, paging from `/proc/vmstat`, each block device
//! from `/proc/diskstats`), read by spinscope itself on its own thread into a ring as long as a
//! capture's window; and the server's process list once a second from a trigger to the end of
//! its after window (statements through the secret filter).
//!
//! The parsers and [`delta`] are pure; [`OsStats`] owns the 1 Hz thread (off the 100 Hz
//! sampling path) and [`processlists`] the per-second reads of one capture.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::server::snapshot::CpuTicks;

/// Devices kept per second (the busiest first).
const MAX_DISKS: usize = 16;
/// Sessions kept per process-list read.
const MAX_SESSIONS: usize = 1000;
/// A statement's text kept per session (characters).
const MAX_INFO: usize = 1024;

/// One reading of the /proc files (cumulative counters as read).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OsRaw {
    pub cpu: CpuTicks,
    pub ctxt: u64,
    pub intr: u64,
    pub procs_running: u64,
    pub procs_blocked: u64,
    pub load: [f64; 3],
    pub mem_kb: MemKb,
    pub vm: Vm,
    pub disks: Vec<DiskRaw>,
}

/// `/proc/meminfo` fields, kB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MemKb {
    pub total: u64,
    pub free: u64,
    pub available: u64,
    pub buffers: u64,
    pub cached: u64,
    pub dirty: u64,
    pub swap_total: u64,
    pub swap_free: u64,
}

/// `/proc/vmstat` paging counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Vm {
    pub pgpgin: u64,
    pub pgpgout: u64,
    pub pswpin: u64,
    pub pswpout: u64,
    pub pgfault: u64,
    pub pgmajfault: u64,
}

/// One `/proc/diskstats` line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskRaw {
    pub name: String,
    pub reads: u64,
    pub read_sectors: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub write_sectors: u64,
    pub write_ms: u64,
    pub io_ms: u64,
}

fn num(s: Option<&str>) -> u64 {
    s.and_then(|x| x.parse().ok()).unwrap_or(0)
}

/// `/proc/stat`: the `cpu` line, `ctxt`, `intr` (its total), `procs_running`, `procs_blocked`.
pub fn parse_stat(text: &str, raw: &mut OsRaw) {
    if let Some(c) = crate::server::host::parse_proc_stat(text) {
        raw.cpu = c;
    }
    for l in text.lines() {
        let mut f = l.split_whitespace();
        match f.next() {
            Some("ctxt") => raw.ctxt = num(f.next()),
            Some("intr") => raw.intr = num(f.next()),
            Some("procs_running") => raw.procs_running = num(f.next()),
            Some("procs_blocked") => raw.procs_blocked = num(f.next()),
            _ => {}
        }
    }
}

/// `/proc/loadavg`: the three averages.
pub fn parse_loadavg(text: &str) -> [f64; 3] {
    let mut v = text
        .split_whitespace()
        .map(|x| x.parse::<f64>().unwrap_or(f64::NAN));
    let mut g = || v.next().unwrap_or(f64::NAN);
    [g(), g(), g()]
}

/// `/proc/meminfo`.
pub fn parse_meminfo(text: &str) -> MemKb {
    let mut m = MemKb::default();
    for l in text.lines() {
        let mut f = l.split_whitespace();
        let (Some(k), v) = (f.next(), num(f.next())) else {
            continue;
        };
        match k {
            "MemTotal:" => m.total = v,
            "MemFree:" => m.free = v,
            "MemAvailable:" => m.available = v,
            "Buffers:" => m.buffers = v,
            "Cached:" => m.cached = v,
            "Dirty:" => m.dirty = v,
            "SwapTotal:" => m.swap_total = v,
            "SwapFree:" => m.swap_free = v,
            _ => {}
        }
    }
    m
}

/// `/proc/vmstat`.
pub fn parse_vmstat(text: &str) -> Vm {
    let mut m = Vm::default();
    for l in text.lines() {
        let mut f = l.split_whitespace();
        let (Some(k), v) = (f.next(), num(f.next())) else {
            continue;
        };
        match k {
            "pgpgin" => m.pgpgin = v,
            "pgpgout" => m.pgpgout = v,
            "pswpin" => m.pswpin = v,
            "pswpout" => m.pswpout = v,
            "pgfault" => m.pgfault = v,
            "pgmajfault" => m.pgmajfault = v,
            _ => {}
        }
    }
    m
}

/// `/proc/diskstats`: block devices, without loop and RAM disks.
pub fn parse_diskstats(text: &str) -> Vec<DiskRaw> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let name = *f.get(2)?;
            if f.len() < 13 || ["loop", "ram", "zram"].iter().any(|p| name.starts_with(p)) {
                return None;
            }
            let g = |i: usize| num(f.get(i).copied());
            Some(DiskRaw {
                name: name.chars().take(64).collect(),
                reads: g(3),
                read_sectors: g(5),
                read_ms: g(6),
                writes: g(7),
                write_sectors: g(9),
                write_ms: g(10),
                io_ms: g(12),
            })
        })
        .collect()
}

/// Read this host's files now (a file that cannot be read leaves its fields at 0).
pub fn read_raw() -> OsRaw {
    let rd = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mut raw = OsRaw::default();
    parse_stat(&rd("/proc/stat"), &mut raw);
    raw.load = parse_loadavg(&rd("/proc/loadavg"));
    raw.mem_kb = parse_meminfo(&rd("/proc/meminfo"));
    raw.vm = parse_vmstat(&rd("/proc/vmstat"));
    raw.disks = parse_diskstats(&rd("/proc/diskstats"));
    raw
}

/// The CPU split of one second, percent of all CPUs' time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPct {
    pub user: f32,
    pub nice: f32,
    pub system: f32,
    pub idle: f32,
    pub iowait: f32,
    pub irq: f32,
    pub softirq: f32,
    pub steal: f32,
}

/// One device over one second (iostat -x's columns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskSecond {
    pub name: String,
    pub reads_per_s: f32,
    pub writes_per_s: f32,
    pub read_kb_per_s: f32,
    pub write_kb_per_s: f32,
    /// Mean time per read / write completed in the second (queue and service), ms.
    pub r_await_ms: f32,
    pub w_await_ms: f32,
    /// Share of the second with I/O in flight.
    pub util_pct: f32,
}

/// This host over one second: vmstat, mpstat's total and iostat -x in one record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OsSecond {
    /// The end of the second: watch clock in the ring, ms from the trigger in a capture.
    pub t_ms: f64,
    pub seconds: f32,
    pub cpu_pct: CpuPct,
    pub ctxt_per_s: f32,
    pub intr_per_s: f32,
    pub procs_running: u32,
    pub procs_blocked: u32,
    pub load1: f32,
    pub load5: f32,
    pub load15: f32,
    pub mem_kb: MemKb,
    pub pgpgin_per_s: f32,
    pub pgpgout_per_s: f32,
    pub pswpin_per_s: f32,
    pub pswpout_per_s: f32,
    pub pgfault_per_s: f32,
    pub pgmajfault_per_s: f32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disks: Vec<DiskSecond>,
}

/// The second between two readings `dt_s` apart (counters that went back count 0).
pub fn delta(a: &OsRaw, b: &OsRaw, dt_s: f64, t_ms: f64) -> OsSecond {
    let dt = dt_s.max(1e-3);
    let rate = |x: u64, y: u64| (y.saturating_sub(x) as f64 / dt) as f32;
    let c = |f: fn(&CpuTicks) -> u64| b.cpu_field(f).saturating_sub(a.cpu_field(f)) as f64;
    let parts = [
        c(|t| t.user),
        c(|t| t.nice),
        c(|t| t.system),
        c(|t| t.idle),
        c(|t| t.iowait),
        c(|t| t.irq),
        c(|t| t.softirq),
        c(|t| t.steal),
    ];
    let total: f64 = parts.iter().sum();
    let pct = |i: usize| {
        if total > 0.0 {
            (parts[i] / total * 100.0) as f32
        } else {
            0.0
        }
    };
    let mut disks: Vec<DiskSecond> = b
        .disks
        .iter()
        .filter_map(|d| {
            let p = a.disks.iter().find(|p| p.name == d.name)?;
            let (r, w) = (
                d.reads.saturating_sub(p.reads),
                d.writes.saturating_sub(p.writes),
            );
            let per = |ms: u64, n: u64| if n > 0 { ms as f32 / n as f32 } else { 0.0 };
            Some(DiskSecond {
                name: d.name.clone(),
                reads_per_s: rate(p.reads, d.reads),
                writes_per_s: rate(p.writes, d.writes),
                read_kb_per_s: rate(p.read_sectors, d.read_sectors) / 2.0,
                write_kb_per_s: rate(p.write_sectors, d.write_sectors) / 2.0,
                r_await_ms: per(d.read_ms.saturating_sub(p.read_ms), r),
                w_await_ms: per(d.write_ms.saturating_sub(p.write_ms), w),
                util_pct: (rate(p.io_ms, d.io_ms) / 10.0).min(100.0),
            })
        })
        .collect();
    // The busiest devices first; idle ones only while few.
    disks.sort_by(|x, y| y.util_pct.total_cmp(&x.util_pct));
    disks.truncate(MAX_DISKS);
    OsSecond {
        t_ms,
        seconds: dt_s as f32,
        cpu_pct: CpuPct {
            user: pct(0),
            nice: pct(1),
            system: pct(2),
            idle: pct(3),
            iowait: pct(4),
            irq: pct(5),
            softirq: pct(6),
            steal: pct(7),
        },
        ctxt_per_s: rate(a.ctxt, b.ctxt),
        intr_per_s: rate(a.intr, b.intr),
        procs_running: b.procs_running.min(u32::MAX as u64) as u32,
        procs_blocked: b.procs_blocked.min(u32::MAX as u64) as u32,
        load1: b.load[0] as f32,
        load5: b.load[1] as f32,
        load15: b.load[2] as f32,
        mem_kb: b.mem_kb,
        pgpgin_per_s: rate(a.vm.pgpgin, b.vm.pgpgin),
        pgpgout_per_s: rate(a.vm.pgpgout, b.vm.pgpgout),
        pswpin_per_s: rate(a.vm.pswpin, b.vm.pswpin),
        pswpout_per_s: rate(a.vm.pswpout, b.vm.pswpout),
        pgfault_per_s: rate(a.vm.pgfault, b.vm.pgfault),
        pgmajfault_per_s: rate(a.vm.pgmajfault, b.vm.pgmajfault),
        disks,
    }
}

impl OsRaw {
    fn cpu_field(&self, f: fn(&CpuTicks) -> u64) -> u64 {
        f(&self.cpu)
    }
}

/// The 1 Hz collector: a ring of seconds as long as a capture's window, and its own cost.
#[derive(Clone)]
pub struct OsStats {
    inner: Arc<Mutex<Ring>>,
}

struct Ring {
    seconds: VecDeque<OsSecond>,
    cap: usize,
    reads: u64,
    cpu_ns: u64,
}

/// This thread's CPU time so far, ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc == 0 {
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    } else {
        0
    }
}

impl OsStats {
    /// Start the thread: one reading a second until `stop`; `now_ms` is the watch clock.
    pub fn start(
        keep_s: f64,
        stop: Arc<AtomicBool>,
        now_ms: impl Fn() -> f64 + Send + 'static,
    ) -> std::io::Result<(OsStats, std::thread::JoinHandle<()>)> {
        let me = OsStats {
            inner: Arc::new(Mutex::new(Ring {
                seconds: VecDeque::new(),
                cap: keep_s.ceil() as usize + 2,
                reads: 0,
                cpu_ns: 0,
            })),
        };
        let inner = Arc::clone(&me.inner);
        let h = std::thread::Builder::new()
            .name("watch-os".into())
            .spawn(move || {
                let mut prev = (Instant::now(), read_raw());
                while crate::interrupt::sleep(Duration::from_secs(1), &stop) {
                    let c0 = thread_cpu_ns();
                    let now = (Instant::now(), read_raw());
                    let s = delta(
                        &prev.1,
                        &now.1,
                        now.0.duration_since(prev.0).as_secs_f64(),
                        now_ms(),
                    );
                    prev = now;
                    let spent = thread_cpu_ns().saturating_sub(c0);
                    if let Ok(mut r) = inner.lock() {
                        if r.seconds.len() >= r.cap {
                            r.seconds.pop_front();
                        }
                        r.seconds.push_back(s);
                        r.reads += 1;
                        r.cpu_ns += spent;
                    }
                }
            })?;
        Ok((me, h))
    }

    /// The seconds ending in `[from_ms, to_ms]`, their times made relative to `zero_ms`.
    pub fn between(&self, from_ms: f64, to_ms: f64, zero_ms: f64) -> Vec<OsSecond> {
        let Ok(r) = self.inner.lock() else {
            return Vec::new();
        };
        r.seconds
            .iter()
            .filter(|s| s.t_ms >= from_ms && s.t_ms <= to_ms + 1000.0)
            .map(|s| OsSecond {
                t_ms: (s.t_ms - zero_ms).round(),
                ..s.clone()
            })
            .collect()
    }

    /// Readings so far and the thread's CPU per reading, µs.
    pub fn cost(&self) -> (u64, f64) {
        self.inner.lock().map_or((0, 0.0), |r| {
            (r.reads, r.cpu_ns as f64 / r.reads.max(1) as f64 / 1e3)
        })
    }
}

/// One session of a process-list read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: u64,
    pub user: String,
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db: Option<String>,
    pub command: String,
    pub time_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The statement, password literals redacted, at most 1024 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<String>,
}

/// The server's process list at one second of a capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessList {
    /// ms from the trigger.
    pub t_ms: f64,
    /// Sessions the server listed (watch's own left out).
    pub sessions_total: usize,
    pub sessions: Vec<Session>,
}

fn text(v: Option<&mysql::Value>) -> Option<String> {
    match v? {
        mysql::Value::NULL => None,
        mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        mysql::Value::Int(i) => Some(i.to_string()),
        mysql::Value::UInt(u) => Some(u.to_string()),
        mysql::Value::Float(f) => Some(f.to_string()),
        mysql::Value::Double(f) => Some(f.to_string()),
        _ => None,
    }
}

/// One `SHOW FULL PROCESSLIST` (MySQL and MariaDB) as typed sessions, watch's own session left
/// out, statements through the secret filter.
pub fn read_processlist(
    c: &mut mysql::Conn,
    own_id: u32,
    t_ms: f64,
) -> Result<ProcessList, String> {
    use mysql::prelude::Queryable;
    let rows: Vec<mysql::Row> = c
        .query("SHOW FULL PROCESSLIST")
        .map_err(|e| e.to_string())?;
    let mut sessions = Vec::new();
    let mut total = 0;
    for r in &rows {
        let cols = r.columns_ref();
        let get = |name: &str| {
            cols.iter()
                .position(|c| c.name_str().eq_ignore_ascii_case(name))
                .and_then(|i| text(r.as_ref(i)))
        };
        let id: u64 = get("Id").and_then(|v| v.parse().ok()).unwrap_or(0);
        if id == u64::from(own_id) {
            continue;
        }
        total += 1;
        if sessions.len() >= MAX_SESSIONS {
            continue;
        }
        sessions.push(Session {
            id,
            user: get("User").unwrap_or_default(),
            host: get("Host").unwrap_or_default(),
            db: get("db"),
            command: get("Command").unwrap_or_default(),
            time_s: get("Time").and_then(|v| v.parse().ok()).unwrap_or(0.0),
            state: get("State").filter(|s| !s.is_empty()),
            info: get("Info").map(|q| {
                crate::secret::redact_sql(&q)
                    .chars()
                    .take(MAX_INFO)
                    .collect()
            }),
        });
    }
    Ok(ProcessList {
        t_ms,
        sessions_total: total,
        sessions,
    })
}

/// The process list once a second on one connection from now until `until` (or `stop`), times
/// relative to `zero`; what went wrong, if anything, beside.
pub fn processlists(
    t: &crate::server::conn::Target,
    zero: Instant,
    until: Instant,
    stop: &AtomicBool,
) -> (Vec<ProcessList>, Option<String>) {
    let mut c = match crate::server::conn::connect_target(t) {
        Ok(c) => c,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let own = c.connection_id();
    let mut out = Vec::new();
    let mut next = Instant::now();
    loop {
        let t_ms = (Instant::now().saturating_duration_since(zero)).as_secs_f64() * 1e3;
        match read_processlist(&mut c, own, t_ms.round()) {
            Ok(p) => out.push(p),
            Err(e) => return (out, Some(e)),
        }
        next += Duration::from_secs(1);
        if next > until || stop.load(Ordering::Relaxed) {
            return (out, None);
        }
        if let Some(d) = next.checked_duration_since(Instant::now()) {
            if !crate::interrupt::sleep(d, stop) {
                return (out, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // In the layout of this machine's files (2-vCPU KVM, kernel 6.x; `cat /proc/stat` etc.,
    // 2026-11-28), shortened, the second reading's numbers set so each rate is known.
    const STAT_A: &str = "cpu  51227 12 20144 1030442 1611 0 1310 3210 0 0\ncpu0 25613 6 10072 515221 805 0 655 1605 0 0\nintr 5518292 0 9 0 0\nctxt 10830921\nbtime 1795846003\nprocesses 41880\nprocs_running 3\nprocs_blocked 1\n";
    const STAT_B: &str = "cpu  51327 12 20194 1030492 1621 0 1320 3220 0 0\ncpu0 25663 6 10097 515246 810 0 660 1610 0 0\nintr 5520292 0 9 0 0\nctxt 10834921\nbtime 1795846003\nprocesses 41890\nprocs_running 5\nprocs_blocked 0\n";
    const MEMINFO: &str = "MemTotal:        8132104 kB\nMemFree:          512344 kB\nMemAvailable:    4021880 kB\nBuffers:          102400 kB\nCached:          3012345 kB\nSwapCached:            0 kB\nDirty:              1234 kB\nSwapTotal:       1048572 kB\nSwapFree:        1048000 kB\n";
    const VMSTAT_A: &str = "nr_free_pages 128086\npgpgin 1000\npgpgout 2000\npswpin 0\npswpout 0\npgfault 50000\npgmajfault 10\n";
    const VMSTAT_B: &str = "nr_free_pages 128000\npgpgin 1400\npgpgout 2800\npswpin 0\npswpout 2\npgfault 52000\npgmajfault 13\n";
    const DISK_A: &str = "   7       0 loop0 54 0 2148 15 0 0 0 0 0 28 15 0 0 0 0 0 0\n 254       0 vda 20101 7410 1310312 9212 81234 70211 3001200 61234 0 70100 73912 0 0 0 0 1200 3456\n 254       1 vda1 19901 7410 1300000 9100 81000 70211 3000000 61000 0 70000 73800 0 0 0 0 0 0\n";
    const DISK_B: &str = "   7       0 loop0 54 0 2148 15 0 0 0 0 0 28 15 0 0 0 0 0 0\n 254       0 vda 20111 7410 1310472 9232 81334 70211 3003200 61734 1 70600 74432 0 0 0 0 1200 3456\n 254       1 vda1 19911 7410 1300160 9120 81100 70211 3002000 61500 0 70500 74320 0 0 0 0 0 0\n";

    fn raw(stat: &str, vm: &str, disk: &str, load: &str) -> OsRaw {
        let mut r = OsRaw::default();
        parse_stat(stat, &mut r);
        r.load = parse_loadavg(load);
        r.mem_kb = parse_meminfo(MEMINFO);
        r.vm = parse_vmstat(vm);
        r.disks = parse_diskstats(disk);
        r
    }

    #[test]
    fn one_second_from_real_proc_files() {
        let a = raw(STAT_A, VMSTAT_A, DISK_A, "0.52 0.61 0.70 2/301 41880\n");
        let b = raw(STAT_B, VMSTAT_B, DISK_B, "0.60 0.62 0.70 5/302 41890\n");
        assert_eq!(a.disks.len(), 2, "loop0 left out: {:?}", a.disks);
        let s = delta(&a, &b, 1.0, 5000.0);
        // 100 user + 50 system + 50 idle + 10 iowait + 10 softirq + 10 steal = 230 ticks.
        assert!(
            (s.cpu_pct.user - 100.0 / 230.0 * 100.0).abs() < 0.01,
            "{:?}",
            s.cpu_pct
        );
        assert!((s.cpu_pct.idle - 50.0 / 230.0 * 100.0).abs() < 0.01);
        assert_eq!(s.ctxt_per_s, 4000.0);
        assert_eq!(s.intr_per_s, 2000.0);
        assert_eq!((s.procs_running, s.procs_blocked), (5, 0));
        assert_eq!(s.load1, 0.6);
        assert_eq!(s.mem_kb.available, 4_021_880);
        assert_eq!(
            (s.pgpgin_per_s, s.pgpgout_per_s, s.pswpout_per_s),
            (400.0, 800.0, 2.0)
        );
        assert_eq!(s.pgmajfault_per_s, 3.0);
        let vda = s.disks.iter().find(|d| d.name == "vda").unwrap();
        assert_eq!((vda.reads_per_s, vda.writes_per_s), (10.0, 100.0));
        assert_eq!((vda.read_kb_per_s, vda.write_kb_per_s), (80.0, 1000.0));
        assert_eq!((vda.r_await_ms, vda.w_await_ms), (2.0, 5.0));
        assert_eq!(vda.util_pct, 50.0);
    }

    #[test]
    fn the_live_files_read_and_a_second_passes() {
        let a = read_raw();
        let b = read_raw();
        assert!(a.mem_kb.total > 0 && a.cpu.user + a.cpu.idle > 0, "{a:?}");
        let s = delta(&a, &b, 0.01, 0.0);
        assert!(s.cpu_pct.idle >= 0.0 && s.cpu_pct.idle <= 100.0);
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(s in ".{0,400}") {
            let mut r = OsRaw::default();
            parse_stat(&s, &mut r);
            let _ = parse_loadavg(&s);
            let _ = parse_meminfo(&s);
            let _ = parse_vmstat(&s);
            r.disks = parse_diskstats(&s);
            let _ = delta(&OsRaw::default(), &r, 0.0, 0.0);
            let _ = delta(&r, &OsRaw::default(), 1.0, 0.0);
        }
    }
}
