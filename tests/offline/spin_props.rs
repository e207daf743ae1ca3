//! Property tests: no settings in range overflow, panic or produce nonsense.

use proptest::prelude::*;
use spinscope::spin::advice::recommend;
use spinscope::spin::model::{family_for, readings, resolve_settings, Arch, CpuModel};
use spinscope::spin::version::parse_version;

const VERSIONS: &[&str] = &[
    "5.6.51",
    "5.7.44",
    "5.7.26-29-log",
    "8.0.15",
    "8.0.20",
    "8.0.40",
    "8.4.3",
    "9.1.0",
    "10.2.44-MariaDB",
    "10.4.30-MariaDB",
    "10.11.19-MariaDB",
    "11.4.2-MariaDB",
];

proptest! {
    #[test]
    fn any_legal_settings_give_finite_monotone_readings(
        vi in 0..VERSIONS.len(),
        d in any::<u64>(), l in any::<u64>(), m in any::<u64>(),
        ns in 0.01f64..1e6, ticks in proptest::option::of(0.0f64..1e6), arm in any::<bool>(),
        target in 0.0f64..1e12,
    ) {
        let v = parse_version(VERSIONS[vi], None).unwrap();
        let info = family_for(&v);
        // Clamp the random values into the legal ranges, so every legal corner is reachable.
        let d = info.delay.min + d % (info.delay.max - info.delay.min + 1);
        let l = info.loops.min + l % (info.loops.max - info.loops.min + 1);
        let m = info.multiplier.map(|s| s.min + m % (s.max - s.min + 1));
        let s = resolve_settings(&info, Some(d), Some(l), m).unwrap();
        let cpu = CpuModel { label: "p".into(), arch: if arm { Arch::Aarch64 } else { Arch::X86_64 }, ns_per_hint: ns, tsc_ticks_per_hint: ticks, ghz: None, approximate: false, noise_pct: 0.0 };
        let rs = readings(&info, &s, &cpu);
        prop_assert!(!rs.is_empty());
        for r in &rs {
            for x in [r.hints_per_round.min, r.hints_per_round.mean, r.hints_per_round.max, r.max_spin_ns, r.mean_spin_ns, r.max_spin_hints] {
                prop_assert!(x.is_finite() && x >= 0.0, "{r:?}");
            }
            prop_assert!(r.hints_per_round.min <= r.hints_per_round.mean && r.hints_per_round.mean <= r.hints_per_round.max);
            prop_assert!(r.mean_spin_ns <= r.max_spin_ns);
        }
        let rec = recommend(&info, &s, &cpu, target);
        prop_assert!(resolve_settings(&info, Some(rec.settings.spin_wait_delay), Some(rec.settings.sync_spin_loops), rec.settings.pause_multiplier).is_ok());
        prop_assert!(rec.achieved_max_spin_ns.is_finite());
    }

    #[test]
    fn version_parser_never_panics(s in ".{0,40}") {
        let _ = parse_version(&s, None);
    }
}
