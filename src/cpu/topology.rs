//! Topology: CPU lists, sockets/cores/threads, SMT siblings, NUMA nodes and caches. The text
//! parsers and the counting are pure; `read_*` functions read /sys and /proc.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::cpuinfo::ProcEntry;

const SYS_CPU: &str = "/sys/devices/system/cpu";

/// Parse a kernel CPU list such as `0-3,8,10-11` (sorted, deduplicated). Empty text is an
/// empty list.
pub fn parse_cpu_list(s: &str) -> std::result::Result<Vec<usize>, String> {
    let mut out = BTreeSet::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |x: &str| -> std::result::Result<usize, String> {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("{x:?} is not a CPU number"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("range {part:?} runs backwards"));
                }
                if b - a > 1 << 16 {
                    return Err(format!("range {part:?} is too long"));
                }
                out.extend(a..=b);
            }
            None => {
                out.insert(num(part)?);
            }
        }
    }
    Ok(out.into_iter().collect())
}

/// Format CPUs as a compact kernel-style list (`0-3,8`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut v: Vec<usize> = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Parse a /sys cache size such as `32K`, `1024K`, `32M` into bytes.
pub fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1024),
        'M' | 'm' => (&s[..s.len() - 1], 1024 * 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// Where one logical CPU sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuTopo {
    pub cpu: usize,
    pub package: u32,
    pub core: u32,
    /// The logical CPUs sharing this one's core, itself included (empty when unknown).
    pub siblings: Vec<usize>,
}

/// Counts over the online CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    pub sockets: usize,
    pub cores: usize,
    pub threads: usize,
    pub smt: bool,
}

/// Count sockets, cores and threads. A core is a distinct sibling set where known, else a
/// distinct (package, core id) pair.
pub fn summarize(entries: &[CpuTopo]) -> Topology {
    let sockets: BTreeSet<u32> = entries.iter().map(|e| e.package).collect();
    let cores: BTreeSet<(u32, u32, Vec<usize>)> = entries
        .iter()
        .map(|e| {
            if e.siblings.is_empty() {
                (e.package, e.core, Vec::new())
            } else {
                (u32::MAX, u32::MAX, e.siblings.clone())
            }
        })
        .collect();
    let threads = entries.len();
    Topology {
        sockets: sockets.len().max(usize::from(threads > 0)),
        cores: cores.len(),
        threads,
        smt: threads > cores.len(),
    }
}

/// Topology from /proc/cpuinfo blocks when /sys is missing; None when the blocks lack
/// `physical id` / `core id` (aarch64, some VMs).
pub fn from_cpuinfo(procs: &[ProcEntry]) -> Option<Vec<CpuTopo>> {
    procs
        .iter()
        .map(|p| {
            Some(CpuTopo {
                cpu: p.processor,
                package: p.physical_id?,
                core: p.core_id?,
                siblings: Vec::new(),
            })
        })
        .collect::<Option<Vec<_>>>()
        .map(|mut v| {
            // Derive sibling sets from shared (package, core).
            let keys: Vec<(u32, u32)> = v.iter().map(|e| (e.package, e.core)).collect();
            for e in v.iter_mut() {
                e.siblings = keys
                    .iter()
                    .zip(procs)
                    .filter(|(k, _)| **k == (e.package, e.core))
                    .map(|(_, p)| p.processor)
                    .collect();
            }
            v
        })
}

/// The first SMT sibling of `cpu` other than itself.
pub fn smt_sibling(entries: &[CpuTopo], cpu: usize) -> Option<usize> {
    entries
        .iter()
        .find(|e| e.cpu == cpu)?
        .siblings
        .iter()
        .copied()
        .find(|&s| s != cpu)
}

/// One cache as /sys describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheInfo {
    /// "L1d", "L1i", "L2", "L3".
    pub name: String,
    pub level: u32,
    /// "Data", "Instruction" or "Unified".
    pub kind: String,
    pub size_bytes: u64,
    pub line_bytes: Option<u32>,
    /// How many logical CPUs share one instance.
    pub shared_by_cpus: usize,
}

/// Build a cache entry from the /sys `index*` file texts; None when level or size is unusable.
pub fn cache_from_fields(
    level: &str,
    kind: &str,
    size: &str,
    line: Option<&str>,
    shared_list: Option<&str>,
) -> Option<CacheInfo> {
    let level: u32 = level.trim().parse().ok()?;
    let kind = kind.trim().to_string();
    let size_bytes = parse_cache_size(size)?;
    let name = match (level, kind.as_str()) {
        (1, "Data") => "L1d".to_string(),
        (1, "Instruction") => "L1i".to_string(),
        (l, _) => format!("L{l}"),
    };
    Some(CacheInfo {
        name,
        level,
        kind,
        size_bytes,
        line_bytes: line.and_then(|l| l.trim().parse().ok()),
        shared_by_cpus: shared_list
            .and_then(|s| parse_cpu_list(s).ok())
            .map(|v| v.len())
            .unwrap_or(0),
    })
}

/// Count NUMA nodes from the text of /sys/devices/system/node/online (e.g. `0-1`).
pub fn numa_nodes_from(online: &str) -> Option<usize> {
    parse_cpu_list(online)
        .ok()
        .map(|v| v.len())
        .filter(|&n| n > 0)
}

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The online logical CPUs (/sys), else the cpuinfo processors, else 0..available_parallelism.
pub fn read_online_cpus(procs: &[ProcEntry]) -> Vec<usize> {
    if let Some(v) = read_trim(format!("{SYS_CPU}/online")).and_then(|s| parse_cpu_list(&s).ok()) {
        if !v.is_empty() {
            return v;
        }
    }
    if !procs.is_empty() {
        return procs.iter().map(|p| p.processor).collect();
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).collect()
}

/// Placement of each online CPU from /sys; falls back to /proc/cpuinfo, then to one core per
/// CPU on one socket (and says so through `exact = false`).
pub fn read_topology(online: &[usize], procs: &[ProcEntry]) -> (Vec<CpuTopo>, bool) {
    let from_sys: Option<Vec<CpuTopo>> = online
        .iter()
        .map(|&cpu| {
            let dir = format!("{SYS_CPU}/cpu{cpu}/topology");
            let package = read_trim(format!("{dir}/physical_package_id"))?
                .parse()
                .ok()?;
            let core = read_trim(format!("{dir}/core_id"))?.parse().ok()?;
            let siblings = read_trim(format!("{dir}/core_cpus_list"))
                .or_else(|| read_trim(format!("{dir}/thread_siblings_list")))
                .and_then(|s| parse_cpu_list(&s).ok())
                .unwrap_or_default();
            Some(CpuTopo {
                cpu,
                package,
                core,
                siblings,
            })
        })
        .collect();
    if let Some(v) = from_sys.filter(|v| !v.is_empty()) {
        return (v, true);
    }
    if let Some(v) = from_cpuinfo(procs).filter(|v| !v.is_empty()) {
        return (v, true);
    }
    let v = online
        .iter()
        .map(|&cpu| CpuTopo {
            cpu,
            package: 0,
            core: cpu as u32,
            siblings: vec![cpu],
        })
        .collect();
    (v, false)
}

/// Caches of `cpu` from /sys/devices/system/cpu/cpuN/cache/index*.
pub fn read_caches(cpu: usize) -> Vec<CacheInfo> {
    let dir = format!("{SYS_CPU}/cpu{cpu}/cache");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<CacheInfo> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let p = e.path();
            cache_from_fields(
                &read_trim(p.join("level"))?,
                &read_trim(p.join("type"))?,
                &read_trim(p.join("size"))?,
                read_trim(p.join("coherency_line_size")).as_deref(),
                read_trim(p.join("shared_cpu_list")).as_deref(),
            )
        })
        .collect();
    out.sort_by(|a, b| (a.level, &a.kind).cmp(&(b.level, &b.kind)));
    out
}

/// NUMA nodes from /sys/devices/system/node/online (None when the kernel has no NUMA).
pub fn read_numa_nodes() -> Option<usize> {
    read_trim("/sys/devices/system/node/online").and_then(|s| numa_nodes_from(&s))
}

/// Cache-line size: the L1d coherency line from /sys, else sysconf.
pub fn read_cache_line(caches: &[CacheInfo]) -> Option<u32> {
    if let Some(l) = caches
        .iter()
        .find(|c| c.level == 1 && c.kind != "Instruction")
        .and_then(|c| c.line_bytes)
    {
        return Some(l);
    }
    if let Some(l) = read_trim(format!("{SYS_CPU}/cpu0/cache/index0/coherency_line_size"))
        .and_then(|s| s.parse().ok())
    {
        return Some(l);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: sysconf takes a plain integer and has no memory effects.
        let n = unsafe { libc::sysconf(libc::_SC_LEVEL1_DCACHE_LINESIZE) };
        if n > 0 {
            return u32::try_from(n).ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::cpuinfo::parse_cpuinfo;

    #[test]
    fn cpu_lists_parse_and_format() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("2,0,2").unwrap(), vec![0, 2]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("1-").is_err());
        assert!(parse_cpu_list("0-999999999").is_err());
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[5]), "5");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn cache_sizes_and_fields() {
        assert_eq!(parse_cache_size("32K"), Some(32 * 1024));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("K"), None);
        assert_eq!(parse_cache_size(""), None);
        let c = cache_from_fields("1", "Data", "32K", Some("64"), Some("0,64")).unwrap();
        assert_eq!(
            (
                c.name.as_str(),
                c.size_bytes,
                c.line_bytes,
                c.shared_by_cpus
            ),
            ("L1d", 32768, Some(64), 2)
        );
        let c = cache_from_fields("3", "Unified", "32768K", None, Some("0-15")).unwrap();
        assert_eq!((c.name.as_str(), c.shared_by_cpus), ("L3", 16));
        assert_eq!(
            cache_from_fields("1", "Instruction", "32K", None, None)
                .unwrap()
                .name,
            "L1i"
        );
        assert!(cache_from_fields("x", "Data", "32K", None, None).is_none());
    }

    #[test]
    fn sys_style_topology_counts_smt() {
        // 1 socket, 2 cores x 2 threads: siblings {0,2} and {1,3}.
        let e = |cpu, core, sib: &[usize]| CpuTopo {
            cpu,
            package: 0,
            core,
            siblings: sib.to_vec(),
        };
        let v = vec![
            e(0, 0, &[0, 2]),
            e(1, 1, &[1, 3]),
            e(2, 0, &[0, 2]),
            e(3, 1, &[1, 3]),
        ];
        let t = summarize(&v);
        assert_eq!((t.sockets, t.cores, t.threads, t.smt), (1, 2, 4, true));
        assert_eq!(smt_sibling(&v, 0), Some(2));
        assert_eq!(smt_sibling(&v, 3), Some(1));
        assert_eq!(smt_sibling(&v, 9), None);
        // This VM: two cores, no SMT.
        let v = vec![e(0, 0, &[0]), e(1, 1, &[1])];
        let t = summarize(&v);
        assert_eq!((t.sockets, t.cores, t.threads, t.smt), (1, 2, 2, false));
        assert_eq!(smt_sibling(&v, 0), None);
    }

    #[test]
    fn topology_from_cpuinfo_fixtures() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cpuinfo");
        let sky =
            parse_cpuinfo(&std::fs::read_to_string(format!("{dir}/skylake-sp-2s.txt")).unwrap());
        let v = from_cpuinfo(&sky.processors).unwrap();
        let t = summarize(&v);
        assert_eq!((t.sockets, t.cores, t.threads, t.smt), (2, 2, 4, true));
        assert_eq!(smt_sibling(&v, 2), Some(3));
        let epyc =
            parse_cpuinfo(&std::fs::read_to_string(format!("{dir}/epyc-genoa-vm.txt")).unwrap());
        let t = summarize(&from_cpuinfo(&epyc.processors).unwrap());
        assert_eq!((t.sockets, t.cores, t.threads, t.smt), (1, 2, 2, false));
        let arm =
            parse_cpuinfo(&std::fs::read_to_string(format!("{dir}/neoverse-n1.txt")).unwrap());
        assert!(from_cpuinfo(&arm.processors).is_none());
    }

    #[test]
    fn numa_nodes() {
        assert_eq!(numa_nodes_from("0\n"), Some(1));
        assert_eq!(numa_nodes_from("0-3"), Some(4));
        assert_eq!(numa_nodes_from(""), None);
        assert_eq!(numa_nodes_from("junk"), None);
    }
}
