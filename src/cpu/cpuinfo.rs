//! Pure parser of `/proc/cpuinfo` text (x86 and aarch64 layouts).

use crate::spin::cpus::CpuIdent;

/// One `processor` block's placement fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcEntry {
    pub processor: usize,
    /// `physical id` (socket); absent on aarch64 and some VMs.
    pub physical_id: Option<u32>,
    /// `core id` within the socket.
    pub core_id: Option<u32>,
}

/// What the probe needs from /proc/cpuinfo. Fields come from the first processor block;
/// `processors` lists every block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuInfo {
    /// `vendor_id` on x86; on aarch64 the implementer's name (e.g. "ARM", "HiSilicon").
    pub vendor: String,
    /// `model name` (x86, some arm kernels); empty when absent.
    pub model_name: String,
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
    /// aarch64 `CPU implementer` (MIDR), 0 elsewhere.
    pub arm_implementer: u32,
    /// aarch64 `CPU part` (MIDR), 0 elsewhere.
    pub arm_part: u32,
    /// `flags` (x86) or `Features` (aarch64).
    pub flags: Vec<String>,
    pub processors: Vec<ProcEntry>,
}

impl CpuInfo {
    pub fn has_flag(&self, f: &str) -> bool {
        self.flags.iter().any(|x| x == f)
    }

    /// The identity the reference CPU table matches on.
    pub fn ident(&self) -> CpuIdent {
        CpuIdent {
            vendor: self.vendor.clone(),
            family: self.family,
            model: self.model,
            stepping: self.stepping,
            arm_implementer: self.arm_implementer,
            arm_part: self.arm_part,
        }
    }

    /// True when the text came from an aarch64 kernel (MIDR fields present).
    pub fn is_arm(&self) -> bool {
        self.arm_implementer != 0
    }
}

/// Parse an unsigned number written in decimal or with a `0x` prefix.
pub fn parse_num(s: &str) -> Option<u32> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Name of an Arm MIDR implementer code.
pub fn arm_implementer_name(code: u32) -> String {
    match code {
        0x41 => "ARM".into(),
        0x42 => "Broadcom".into(),
        0x43 => "Cavium".into(),
        0x46 => "Fujitsu".into(),
        0x48 => "HiSilicon".into(),
        0x4e => "NVIDIA".into(),
        0x50 => "APM".into(),
        0x51 => "Qualcomm".into(),
        0x61 => "Apple".into(),
        0x6d => "Microsoft".into(),
        0xc0 => "Ampere".into(),
        other => format!("Arm implementer {other:#x}"),
    }
}

/// Parse the whole file. Unknown keys are ignored; missing ones stay at their defaults.
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    let mut first_done = false;
    let mut cur: Option<ProcEntry> = None;
    let finish = |cur: &mut Option<ProcEntry>, info: &mut CpuInfo| {
        if let Some(e) = cur.take() {
            info.processors.push(e);
        }
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            if cur.is_some() {
                first_done = true;
            }
            finish(&mut cur, &mut info);
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k == "processor" {
            if let Ok(n) = v.parse::<usize>() {
                if cur.is_some() {
                    first_done = true;
                }
                finish(&mut cur, &mut info);
                cur = Some(ProcEntry {
                    processor: n,
                    physical_id: None,
                    core_id: None,
                });
            }
            continue;
        }
        match k {
            "physical id" => {
                if let Some(e) = cur.as_mut() {
                    e.physical_id = parse_num(v);
                }
            }
            "core id" => {
                if let Some(e) = cur.as_mut() {
                    e.core_id = parse_num(v);
                }
            }
            _ => {}
        }
        if first_done {
            continue;
        }
        match k {
            "vendor_id" => info.vendor = v.to_string(),
            "model name" => info.model_name = v.to_string(),
            "cpu family" => info.family = parse_num(v).unwrap_or(0),
            "model" => info.model = parse_num(v).unwrap_or(0),
            "stepping" => info.stepping = parse_num(v).unwrap_or(0),
            "flags" | "Features" => {
                info.flags = v.split_whitespace().map(str::to_string).collect();
            }
            "CPU implementer" => info.arm_implementer = parse_num(v).unwrap_or(0),
            "CPU part" => info.arm_part = parse_num(v).unwrap_or(0),
            "CPU revision" => {
                if let Some(r) = parse_num(v) {
                    info.stepping = r;
                }
            }
            _ => {}
        }
    }
    finish(&mut cur, &mut info);
    if info.arm_implementer != 0 && info.vendor.is_empty() {
        info.vendor = arm_implementer_name(info.arm_implementer);
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spin::cpus::identify;

    fn fixture(name: &str) -> String {
        let p = format!(
            "{}/tests/fixtures/cpuinfo/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn skylake_sp_is_parsed_and_identified() {
        let c = parse_cpuinfo(&fixture("skylake-sp-2s.txt"));
        assert_eq!(c.vendor, "GenuineIntel");
        assert_eq!((c.family, c.model, c.stepping), (6, 85, 4));
        assert!(c.model_name.contains("Gold 6148"), "{}", c.model_name);
        assert!(c.has_flag("constant_tsc") && c.has_flag("nonstop_tsc"));
        assert!(!c.has_flag("hypervisor"));
        assert_eq!(c.processors.len(), 4);
        assert_eq!(c.processors[2].physical_id, Some(1));
        assert_eq!(c.processors[3].core_id, Some(0));
        assert_eq!(identify(&c.ident()).unwrap().key, "skylake-sp");
        assert!(!c.is_arm());
    }

    #[test]
    fn epyc_is_parsed_and_identified() {
        let c = parse_cpuinfo(&fixture("epyc-genoa-vm.txt"));
        assert_eq!(c.vendor, "AuthenticAMD");
        assert_eq!((c.family, c.model, c.stepping), (0x19, 0x11, 1));
        assert!(c.has_flag("hypervisor"));
        assert_eq!(c.processors.len(), 2);
        assert_eq!(identify(&c.ident()).unwrap().key, "zen4");
    }

    #[test]
    fn aarch64_midr_fields_are_parsed_and_identified() {
        let c = parse_cpuinfo(&fixture("neoverse-n1.txt"));
        assert!(c.is_arm());
        assert_eq!(c.arm_implementer, 0x41);
        assert_eq!(c.arm_part, 0xd0c);
        assert_eq!(c.vendor, "ARM");
        assert_eq!(c.stepping, 1);
        assert!(c.model_name.is_empty());
        assert!(c.has_flag("atomics"));
        assert_eq!(c.processors.len(), 4);
        assert!(c.processors.iter().all(|p| p.physical_id.is_none()));
        assert_eq!(identify(&c.ident()).unwrap().key, "neoverse-n1");
    }

    #[test]
    fn garbage_and_empty_text_give_defaults_not_panics() {
        let c = parse_cpuinfo("");
        assert_eq!(c, CpuInfo::default());
        let c = parse_cpuinfo("no colon here\nmodel : notanumber\n:\n processor : x\n");
        assert_eq!(c.model, 0);
        assert!(c.processors.is_empty());
    }

    #[test]
    fn numbers_in_hex_and_decimal() {
        assert_eq!(parse_num("0x41"), Some(0x41));
        assert_eq!(parse_num(" 85 "), Some(85));
        assert_eq!(parse_num("0xzz"), None);
        assert_eq!(arm_implementer_name(0x48), "HiSilicon");
        assert!(arm_implementer_name(0x99).contains("0x99"));
    }
}
