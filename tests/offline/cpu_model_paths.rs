//! One CPU model per probe: `spin --probe FILE` (`cpu::source::from_probe_file`) and
//! `doctor --host-facts FILE` (`server::host::load` -> `server::host::cpu_model`) must price the
//! same CPU from the same file, including MariaDB's multiplier, also where a probe sits near
//! MariaDB's 30-tick threshold and the two figures in a probe (the serialized summary and
//! MariaDB's own unserialized measurement) fall on different sides of it.
//!
//! The probe is tests/fixtures/report/probe.json (a real probe of a KVM guest, median 29.6
//! ticks per PAUSE), edited here: the two tick figures are moved to either side of 30.

use std::path::{Path, PathBuf};

use spinscope::cpu::source::from_probe_file;
use spinscope::server::host;
use spinscope::spin::model::{first_mariadb_multiplier, CpuModel};

fn edited_probe(dir: &Path, summary_ticks: f64, mariadb_median: f64) -> PathBuf {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/report/probe.json"
    ))
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["summary"]["ticks_per_hint"] = summary_ticks.into();
    let slow = mariadb_median > 30.0;
    let r = &mut v["mariadb_rule"];
    r["applies"] = true.into();
    r["median_ticks_per_pause"] = mariadb_median.into();
    r["chose_100"] = if slow { 60 } else { 41 }.into();
    r["chose_200"] = if slow { 41 } else { 60 }.into();
    r["multiplier"] = if slow { 100 } else { 200 }.into();
    let p = dir.join(format!(
        "probe_edited_{summary_ticks}_{mariadb_median}.json"
    ));
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    p
}

fn same_cpu(a: &CpuModel, b: &CpuModel) {
    assert_eq!(a.arch, b.arch);
    assert_eq!(a.ns_per_hint, b.ns_per_hint);
    assert_eq!(a.tsc_ticks_per_hint, b.tsc_ticks_per_hint);
    assert_eq!(a.ghz, b.ghz);
    assert_eq!(a.noise_pct, b.noise_pct);
}

#[test]
fn spin_probe_and_doctor_host_facts_agree_near_the_30_tick_threshold() {
    let dir = tempfile::tempdir().unwrap();
    // (serialized summary, MariaDB's own measurement, the M a server would pick)
    for (summary, own, want_m) in [(29.4, 30.6, 100), (30.8, 29.5, 200), (28.3, 29.6, 200)] {
        let p = edited_probe(dir.path(), summary, own);
        let spin = from_probe_file(&p).unwrap();
        let facts = host::load(&p).unwrap();
        let doctor = host::cpu_model(&facts).expect("a CPU from the probe's facts");
        same_cpu(&spin, &doctor);
        // MariaDB's M follows its own measurement, not the serialized summary.
        assert_eq!(spin.tsc_ticks_per_hint, Some(own), "{summary} {own}");
        assert_eq!(first_mariadb_multiplier(&spin), want_m, "{summary} {own}");
        assert_eq!(first_mariadb_multiplier(&doctor), want_m, "{summary} {own}");
        // The probe's clock is the model's clock on both paths (not the reference table's).
        assert!(doctor
            .ghz
            .is_some_and(|g| (g - spin.ghz.unwrap()).abs() < 1e-12));
    }
}
