//! The spin-budget finding with a saved wait document (`doctor --waits FILE`): the design ratio
//! prices the longest spin the settings allow; the wait view measured what the server's
//! threads did (spin CPU beside latch sleeps, per site). Where the two disagree, the
//! measurement decides the direction, so doctor never advises the opposite of the document
//! (nor a change where it measured that neither side dominates); where they agree, the design
//! fix stands with the measured numbers beside it. Pure: called by `spin_budget::check`.

use crate::doctor::facts::WaitsGiven;
use crate::doctor::{ev, Evidence, Facts, Finding, Severity};
use crate::profile::waits::advice::{step, Direction};
use crate::profile::waits::{site_name, WaitDoc};
use crate::spin::design::{fmt_ratio, off_budget};
use crate::spin::doc::vs_design;
use crate::spin::model::{settings_from_vars, FamilyInfo, Settings};

const ID: &str = "spin-budget";
/// Sites named in the finding.
const SITES_SHOWN: usize = 3;

/// The design ratio's direction and its ratio (None when the CPU is unknown).
fn design(f: &Facts, info: &FamilyInfo, current: &Settings) -> Option<(Direction, f64)> {
    let cpu = f.cpu.as_ref()?;
    let vs = vs_design(info, current, cpu);
    let ratio = vs.ratio.unwrap_or(0.0);
    let d = if !off_budget(&vs) {
        Direction::Keep
    } else if ratio >= 1.0 {
        Direction::Less
    } else {
        Direction::More
    };
    Some((d, ratio))
}

/// The wait document's numbers as evidence.
fn evidence(d: &WaitDoc) -> Vec<Evidence> {
    let mut v = vec![
        ev("waits_window", d.source.seconds, "s"),
        ev("waits_spin_cpu", d.spin_cpu_seconds_per_s, "CPU-s/s"),
        ev("waits_latch_sleeps", d.latch_sleeps_per_s, "/s"),
        ev("waits_latch_sleep_time", d.latch_sleep_seconds_per_s, "s/s"),
    ];
    if let Some(r) = d.advice.spin_to_wake_ratio {
        v.push(ev("waits_spin_to_wake_ratio", r, "x"));
    }
    v
}

/// The busiest sites in words, and the sites whose own advice differs from the server's.
fn sites(d: &WaitDoc) -> String {
    let mut parts: Vec<String> = d
        .sites
        .iter()
        .take(SITES_SHOWN)
        .map(|s| {
            let p50 = s.sleep_lengths.as_ref().map_or(String::new(), |l| {
                format!(", median sleep {:.0} us", l.p50_us)
            });
            format!(
                "at {}: {} ({:.3} CPU-s/s spinning, {:.0} sleeps/s{p50})",
                site_name(s),
                s.advice.direction.word(),
                s.spin_cpu_seconds_per_s,
                s.sleeps_per_s
            )
        })
        .collect();
    let overall = d.advice.direction;
    let opposite: Vec<String> = d
        .sites
        .iter()
        .filter(|s| {
            matches!(
                (overall, s.advice.direction),
                (Direction::Less, Direction::More) | (Direction::More, Direction::Less)
            )
        })
        .map(site_name)
        .collect();
    if !opposite.is_empty() {
        parts.push(format!(
            "{} {} the other way ({}); the settings are server-wide, so the server's totals \
             decide",
            opposite.len(),
            if opposite.len() == 1 {
                "site points"
            } else {
                "sites point"
            },
            opposite.join("; ")
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(" Sites: {}.", parts.join("; "))
}

/// "The wait view (FILE: 3.0 s of pid 123) measured: REASON. Sites: ..."
fn measured_text(w: &WaitsGiven) -> String {
    let d = &w.doc;
    let note = w
        .note
        .as_ref()
        .map_or(String::new(), |n| format!(" Note: {n}."));
    format!(
        "The wait view ({}: {:.1} s of pid {}) measured: {}.{}{note}",
        w.file,
        d.source.seconds,
        d.source.pid,
        d.advice.reason,
        sites(d)
    )
}

/// The spin-budget findings (`design`: what the design ratio alone gave) with the wait
/// document `w`.
pub fn follow(
    f: &Facts,
    info: &FamilyInfo,
    w: &WaitsGiven,
    design_findings: Vec<Finding>,
) -> Vec<Finding> {
    let (current, _, _) = settings_from_vars(info, |n| f.vars.str(n));
    let measured = w.doc.advice.direction;
    let designed = design(f, info, &current);
    let text = measured_text(w);
    let mut out = Vec::new();
    let mut placed = false;
    for mut x in design_findings {
        if x.id != ID {
            out.push(x);
            continue;
        }
        placed = true;
        let agrees = designed.is_some_and(|(d, _)| d == measured);
        match measured {
            Direction::Unclear => {
                x.why.push_str(&format!(
                    " The wait document has too little data to confirm or contradict this. {text}"
                ));
                x.evidence.extend(evidence(&w.doc));
                out.push(x);
            }
            _ if agrees => {
                x.why
                    .push_str(&format!(" The measured waits point the same way. {text}"));
                x.evidence.extend(evidence(&w.doc));
                out.push(x);
            }
            _ => out.push(measured_finding(info, &current, w, designed, &text)),
        }
    }
    if !placed && measured != Direction::Unclear {
        out.push(measured_finding(info, &current, w, designed, &text));
    }
    out
}

/// The finding when the measured direction decides (the design ratio says otherwise, or was
/// not priced).
fn measured_finding(
    info: &FamilyInfo,
    current: &Settings,
    w: &WaitsGiven,
    designed: Option<(Direction, f64)>,
    text: &str,
) -> Finding {
    let d = &w.doc;
    let dir = d.advice.direction;
    let design_part = match designed {
        None => " The CPU's spin-hint latency is unknown here, so the design ratio was not priced.".to_string(),
        Some((Direction::Keep, r)) => format!(
            " The design ratio ({}) is within 3x and alone would change nothing; the measured waits are the stronger evidence.",
            fmt_ratio(r)
        ),
        Some((other, r)) => format!(
            " The design ratio ({}) alone would say {}, but it prices the longest spin the settings allow, not what the threads did; the measured waits decide.",
            fmt_ratio(r),
            other.word()
        ),
    };
    let busiest = d.sites.first().map_or(String::new(), |s| {
        format!("; busiest site {}", site_name(s))
    });
    let mut evidence = evidence(d);
    evidence.push(ev(info.delay.name, current.spin_wait_delay as f64, ""));
    evidence.push(ev(info.loops.name, current.sync_spin_loops as f64, ""));
    if dir == Direction::Keep {
        return Finding {
            id: ID.into(),
            severity: Severity::Info,
            title: format!(
                "measured waits: neither spinning ({:.2} CPU-s/s) nor latch sleeping ({:.0}/s) dominates{busiest}",
                d.spin_cpu_seconds_per_s, d.latch_sleeps_per_s
            ),
            evidence,
            why: format!("{}{design_part}", text.trim_start()),
            what_to_do: "No change: the measured waits do not favour spinning more or less. Record the waits again under the load that matters if this window was not it.".into(),
            statements: vec![],
            option_file: vec![],
        };
    }
    let step = step(info, current, dir);
    let tune = format!(
        " Or race candidates in this direction on your workload: spinscope tune ... --waits {}.",
        w.file
    );
    let (what, statements, option_file) = match step {
        Some((name, from, to)) => (
            format!(
                "{} one step at a time, and record the waits again after each: {name} from {from} to {to}.{tune}",
                if dir == Direction::Less { "Spin less," } else { "Spin more," }
            ),
            vec![format!("SET GLOBAL {name} = {to};")],
            vec![format!("{name} = {to}")],
        ),
        None => (
            format!(
                "The spin settings are at the end of their legal range in this direction ({} = {}, {} = {}): no setting can {}.",
                info.delay.name,
                current.spin_wait_delay,
                info.loops.name,
                current.sync_spin_loops,
                dir.word()
            ),
            vec![],
            vec![],
        ),
    };
    Finding {
        id: ID.into(),
        severity: Severity::Warning,
        title: format!(
            "measured waits say {}: {:.2} CPU-s/s spinning against {:.0} latch sleeps/s{busiest}",
            dir.word(),
            d.spin_cpu_seconds_per_s,
            d.latch_sleeps_per_s
        ),
        evidence,
        why: format!("{}{design_part}", text.trim_start()),
        what_to_do: what,
        statements,
        option_file,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::snapshot::Snapshot;

    fn root() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
    }

    /// The real snapshot of MariaDB 10.11 at innodb_spin_wait_delay=6000 (design ratio: spin
    /// less), with its host's CPU figure unless `cpu` is false.
    fn facts(cpu: bool) -> Facts {
        let mut s = Snapshot::load(&root().join("snapshots/mariadb1011_delay6000.json")).unwrap();
        if !cpu {
            s.host = None;
        }
        Facts::from_snapshot(s)
    }

    /// The wait document of the d6000 recording, its direction set to `d` (the numbers stay:
    /// the rule's branches are what is tested here).
    fn waits(d: Direction) -> WaitsGiven {
        let file = root().join("waits/waits-d6000-vm.json");
        let mut doc = crate::profile::waits::load(&file, "--waits").unwrap();
        doc.advice.direction = d;
        WaitsGiven {
            file: "waits-d6000-vm.json".into(),
            doc,
            note: None,
        }
    }

    fn spin_budget(f: &mut Facts, d: Direction) -> Vec<Finding> {
        f.waits = Some(waits(d));
        crate::doctor::rules::spin_budget::check(f)
            .into_iter()
            .filter(|x| x.id.starts_with(ID))
            .collect()
    }

    #[test]
    fn the_design_fix_stands_when_the_waits_agree() {
        let mut f = facts(true);
        let plain = crate::doctor::rules::spin_budget::check(&f);
        let v = spin_budget(&mut f, Direction::Less);
        assert_eq!(v.len(), 1, "{v:#?}");
        let design = plain.iter().find(|x| x.id == ID).unwrap();
        assert_eq!(v[0].statements, design.statements);
        assert_eq!(v[0].severity, design.severity);
        assert!(
            v[0].why.contains("The measured waits point the same way"),
            "{}",
            v[0].why
        );
        assert!(v[0].evidence.iter().any(|e| e.name == "waits_spin_cpu"));
    }

    #[test]
    fn the_measured_direction_decides_against_the_design_ratio() {
        let mut f = facts(true);
        let v = spin_budget(&mut f, Direction::More);
        assert_eq!(v.len(), 1, "{v:#?}");
        let x = &v[0];
        assert_eq!(x.severity, Severity::Warning);
        assert!(
            x.title.starts_with("measured waits say spin more"),
            "{}",
            x.title
        );
        // Loops at their default 30 and the delay above its default: double the rounds; no
        // statement lowers the spin.
        assert_eq!(
            x.statements,
            vec!["SET GLOBAL innodb_sync_spin_loops = 60;"]
        );
        assert_eq!(x.option_file, vec!["innodb_sync_spin_loops = 60"]);
        assert!(x.why.contains("alone would say spin less"), "{}", x.why);
        assert!(x.what_to_do.contains("--waits waits-d6000-vm.json"));
    }

    #[test]
    fn keep_means_no_change_and_unclear_leaves_the_design() {
        let mut f = facts(true);
        let keep = spin_budget(&mut f, Direction::Keep);
        assert_eq!(keep.len(), 1);
        assert_eq!(keep[0].severity, Severity::Info);
        assert!(keep[0].statements.is_empty() && keep[0].option_file.is_empty());
        let unclear = spin_budget(&mut f, Direction::Unclear);
        assert!(!unclear[0].statements.is_empty());
        assert!(
            unclear[0].why.contains("too little data"),
            "{}",
            unclear[0].why
        );
    }

    #[test]
    fn without_a_cpu_figure_the_waits_still_advise() {
        let mut f = facts(false);
        let v = spin_budget(&mut f, Direction::Less);
        let ids: Vec<&str> = v.iter().map(|x| x.id.as_str()).collect();
        assert_eq!(ids, ["spin-budget-unknown-cpu", "spin-budget"], "{v:#?}");
        assert_eq!(
            v[1].statements,
            vec!["SET GLOBAL innodb_spin_wait_delay = 3000;"]
        );
        assert!(v[1].why.contains("not priced"), "{}", v[1].why);
    }

    #[test]
    fn one_step_each_way_within_the_range() {
        let info = crate::spin::model::family_for(
            &crate::spin::version::parse_version("10.11.6-MariaDB", None).unwrap(),
        );
        let s = |d, l| Settings {
            spin_wait_delay: d,
            sync_spin_loops: l,
            pause_multiplier: None,
        };
        assert_eq!(
            step(&info, &s(4, 30), Direction::Less),
            Some(("innodb_spin_wait_delay", 4, 2))
        );
        assert_eq!(
            step(&info, &s(1, 30), Direction::Less),
            Some(("innodb_sync_spin_loops", 30, 15))
        );
        assert_eq!(step(&info, &s(1, 1), Direction::Less), None);
        assert_eq!(
            step(&info, &s(4, 1), Direction::More),
            Some(("innodb_sync_spin_loops", 1, 30))
        );
        assert_eq!(
            step(&info, &s(1, 30), Direction::More),
            Some(("innodb_spin_wait_delay", 1, 4))
        );
        assert_eq!(step(&info, &s(4, 30), Direction::Keep), None);
    }

    #[test]
    fn the_snapshot_names_its_server_for_the_identity_check() {
        let a = facts(true).identity_for_waits();
        assert_eq!(a.hostname.as_deref(), Some("vm"));
        assert_eq!(a.port, Some(0));
        assert_eq!(
            a.datadir.as_deref(),
            Some("/tmp/spinscope-recapture.pMp7S9/data/")
        );
        assert!(a.started_unix_s.is_some_and(|s| s > 1_700_000_000));
    }
}
