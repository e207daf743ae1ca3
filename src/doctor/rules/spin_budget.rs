//! Spin budget on this CPU against the budget the defaults were designed for (spin-facts §2).

use crate::doctor::{ev, Facts, Finding, Severity};
use crate::spin::advice::{max_spin_ns, recommend};
use crate::spin::model::{default_settings, family_for, CpuModel, Settings};

/// Values the server reports that are not numbers or lie outside the version's legal range.
fn absurd(f: &Facts, info: &crate::spin::model::FamilyInfo) -> Vec<Finding> {
    let specs = [Some(info.delay), Some(info.loops), info.multiplier];
    specs
        .into_iter()
        .flatten()
        .filter_map(|spec| {
            let raw = f.vars.str(spec.name)?;
            let ok = raw
                .trim()
                .parse::<u64>()
                .is_ok_and(|v| (spec.min..=spec.max).contains(&v));
            (!ok).then(|| Finding {
                option_file: vec![],
                id: "spin-setting-out-of-range".into(),
                severity: Severity::Warning,
                title: format!(
                    "{} = {raw:?} is not a legal value on {} ({}..={})",
                    spec.name, info.server, spec.min, spec.max
                ),
                evidence: vec![],
                why: "The spin model cannot price this value; the default was assumed instead. A snapshot \
                      edited by hand or a build with other limits can show this."
                    .into(),
                what_to_do: format!("Check the value the server really uses: SELECT @@{};", spec.name),
                statements: vec![format!("SELECT @@GLOBAL.{};", spec.name)],
            })
        })
        .collect()
}

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(v) = &f.version else { return vec![] };
    let info = family_for(v);
    let mut out = absurd(f, &info);
    out.extend(budget(f, &info));
    out
}

fn budget(f: &Facts, info: &crate::spin::model::FamilyInfo) -> Vec<Finding> {
    // Out-of-range or non-numeric values are reported by `absurd`; price the default.
    let legal = |spec: crate::spin::model::VarSpec| {
        f.vars
            .u64(spec.name)
            .filter(|x| (spec.min..=spec.max).contains(x))
            .unwrap_or(spec.default)
    };
    let d = legal(info.delay);
    let l = legal(info.loops);
    let m = info.multiplier.map(legal);
    let current = Settings {
        spin_wait_delay: d,
        sync_spin_loops: l,
        pause_multiplier: m,
    };
    let Some(cpu) = &f.cpu else {
        return vec![Finding {
            option_file: vec![],
            id: "spin-budget-unknown-cpu".into(),
            severity: Severity::Info,
            title: "spin budget not evaluated: the server's CPU is unknown".into(),
            evidence: vec![ev("innodb_spin_wait_delay", d as f64, ""), ev("innodb_sync_spin_loops", l as f64, "")],
            why: "How long a spin lasts depends on the CPU's spin-hint latency (10 to 140 cycles per PAUSE).".into(),
            what_to_do: "Run doctor on the server's host, or pass --host-facts with a snapshot taken there.".into(),
            statements: vec![],
        }];
    };
    let baseline = CpuModel::from_reference(crate::spin::cpus::baseline());
    let designed_ns = max_spin_ns(info, &default_settings(info), &baseline);
    let here_ns = max_spin_ns(info, &current, cpu);
    let ratio = if designed_ns > 0.0 {
        here_ns / designed_ns
    } else {
        0.0
    };
    let severity = if ratio >= 10.0 {
        Severity::Critical
    } else if ratio >= 3.0 {
        Severity::Warning
    } else {
        Severity::Info
    };
    let rec = recommend(info, &current, cpu, designed_ns);
    let statements = if severity > Severity::Info {
        rec.set_global.clone()
    } else {
        vec![]
    };
    vec![Finding {
        option_file: vec![],
        id: "spin-budget".into(),
        severity,
        title: format!(
            "{l} rounds here spin up to {} per latch attempt, {:.1}x the {} the defaults were designed for",
            crate::report::fmt_ns(here_ns),
            ratio,
            crate::report::fmt_ns(designed_ns)
        ),
        evidence: vec![
            ev("max_spin_here", here_ns / 1e3, "us"),
            ev("max_spin_designed", designed_ns / 1e3, "us"),
            ev("ratio", ratio, "x"),
            ev("ns_per_hint", cpu.ns_per_hint, "ns"),
            ev("innodb_spin_wait_delay", d as f64, ""),
            ev("innodb_sync_spin_loops", l as f64, ""),
            ev("recommended_max_spin", rec.achieved_max_spin_ns / 1e3, "us"),
        ],
        why: format!(
            "{} ({}) on {}: a thread that cannot get a latch burns this long before sleeping; \
             spinning much longer than designed costs CPU and throughput under contention \
             (spin-facts.md §1, §7: d=6000 cost 3.4x TPS).",
            info.server, info.formula, cpu.label
        ),
        what_to_do: if severity > Severity::Info {
            format!("Bring the spin back to the designed budget: {}", rec.explanation)
        } else {
            "Nothing: the spin is within 3x of the designed budget.".into()
        },
        statements,
    }]
}
