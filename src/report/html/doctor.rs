//! `spinscope.doctor/1` (and snapshots, diagnosed offline): the findings with their evidence.

use serde_json::Value;

use super::{cell, fields, typed, Block, Kind, Section, Verdict};
use crate::doc::doctor::{DoctorDoc, Evidence, Finding, RtSide, Severity};

pub struct Doctor;

fn sev_rank(s: Severity) -> u8 {
    match s {
        Severity::Critical => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
    }
}

impl Kind for Doctor {
    fn schema(&self) -> &'static str {
        "spinscope.doctor/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d: DoctorDoc = typed(doc)?;
        section(&d)
    }
}

/// The section of a typed doctor document (also each server of a fleet).
pub fn section(d: &DoctorDoc) -> Result<Section, String> {
    let findings = &d.findings;
    let target = cell(&d.target);
    let mut blocks = vec![fields(vec![
        ("source", Some(cell(&d.source))),
        ("target", Some(cell(&d.target))),
        ("server", Some(cell(&d.server))),
        ("version", Some(cell(&d.version))),
        ("semaphores", Some(cell(&d.semaphores))),
        ("cpu_model", Some(cell(&d.cpu_model))),
        ("max_severity", Some(cell(&d.max_severity))),
    ])];
    let mut summary = Vec::new();
    let rows = findings
        .iter()
        .map(|f| {
            let sev = cell(&f.severity);
            if sev_rank(f.severity) <= 1 {
                summary.push((
                    sev_rank(f.severity),
                    format!("Doctor ({target}), {sev}: {}.", cell(&f.title)),
                ));
            }
            let ev: Vec<String> = f
                .evidence
                .iter()
                .map(|e| format!("{} = {} {}", cell(&e.name), cell(&e.value), cell(&e.unit)))
                .collect();
            vec![sev, cell(&f.id), cell(&f.title), ev.join("; ")]
        })
        .collect();
    if findings.is_empty() {
        summary.push((3, format!("Doctor ({target}): no findings.")));
    }
    blocks.push(Block::Table(
        ["severity", "rule", "finding", "evidence"]
            .map(String::from)
            .to_vec(),
        rows,
    ));
    // Per finding: a heading line, then why, do, and what to run as separate items (a list
    // only when it has lines).
    for f in findings {
        let list = |label: &str, v: &[String]| {
            (!v.is_empty()).then(|| format!("{label}: {}", v.join("  ")))
        };
        let items: Vec<String> = [
            Some(format!("why: {}", f.why)),
            Some(format!("do: {}", f.what_to_do)),
            list("run", &f.statements),
            list("option file [mysqld]", &f.option_file),
        ]
        .into_iter()
        .flatten()
        .collect();
        blocks.push(Block::Para(format!(
            "{} ({}): {}",
            cell(&f.id),
            cell(&f.severity),
            cell(&f.title)
        )));
        blocks.push(Block::List(items));
    }
    if let Some(side) = &d.rt {
        if side.unavailable.is_none() && side.requests > 0 {
            summary.push((
                2,
                format!(
                    "Doctor ({target}): the server answered {} requests in the window, time to last byte p50 {}, p99 {} (from packets).",
                    side.requests,
                    crate::rt::render::dur(side.ttlb_us.p50_us),
                    crate::rt::render::dur(side.ttlb_us.p99_us)
                ),
            ));
        }
        blocks.push(Block::Para(
            "Response time (rt), beside the running threads".into(),
        ));
        blocks.push(Block::List(crate::doctor::rt::headline(side)));
        if side.unavailable.is_none() && !side.rows.is_empty() {
            let (head, rows) = crate::doctor::rt::table(side);
            blocks.push(Block::Table(head, rows));
        }
    }
    if !d.notes.is_empty() {
        blocks.push(Block::List(d.notes.clone()));
    }
    let mut sec = Section::new("doctor", format!("Doctor: {target}"), summary, blocks);
    sec.server = Some(target);
    sec.verdict = verdict(findings);
    sec.finding_ids = findings
        .iter()
        .filter(|f| sev_rank(f.severity) <= 1)
        .map(|f| cell(&f.id))
        .collect();
    sec.identity = d.identity.clone();
    sec.numbers = numbers(d);
    sec.windows = d.rt.as_ref().map(windows).unwrap_or_default();
    sec.picture = d.rt.as_ref().and_then(|rt| window_chart(d, rt));
    if let Some(p) = &sec.picture {
        sec.blocks.insert(1, p.clone());
    }
    Ok(sec)
}

/// The worst finding at warning or above, as the verdict screen shows it.
fn verdict(findings: &[Finding]) -> Option<Verdict> {
    let f = findings.iter().min_by_key(|f| sev_rank(f.severity))?;
    let rank = sev_rank(f.severity);
    if rank > 1 {
        return None;
    }
    Some(Verdict {
        rank,
        finding_id: cell(&f.id),
        what: cell(&f.title),
        evidence: f.evidence.iter().map(evidence_words).collect(),
        why: f.why.clone(),
        sql: f.statements.clone(),
        option_file: f.option_file.clone(),
    })
}

/// `max_spin_here = 412.3 us` as `max spin here: 412.3 us`.
fn evidence_words(e: &Evidence) -> String {
    let unit = match e.unit.trim() {
        "" | "-" => String::new(),
        u => format!(" {u}"),
    };
    format!("{}: {}{unit}", e.name.replace('_', " "), cell(&e.value))
}

/// The headline numbers compared between two doctor runs.
fn numbers(d: &DoctorDoc) -> Vec<(String, String)> {
    let mut out = vec![
        ("worst finding".to_string(), cell(&d.max_severity)),
        (
            "findings (warning or above)".to_string(),
            d.findings
                .iter()
                .filter(|f| sev_rank(f.severity) <= 1)
                .count()
                .to_string(),
        ),
    ];
    if let Some(b) = &d.burst {
        for (k, v) in [
            ("Threads_running p50", cell(&b.threads_running.p50)),
            ("Threads_running p99", cell(&b.threads_running.p99)),
            ("Threads_running max", cell(&b.threads_running.max)),
            ("bursts above the core count", cell(&b.bursts)),
            ("longest burst, ms", cell(&b.longest_burst_ms)),
            (
                "time above the core count, %",
                cell(&b.time_above_threshold_pct),
            ),
            ("questions/s", cell(&b.questions_per_s)),
        ] {
            out.push((k.to_string(), v));
        }
    }
    if let Some(rt) = d.rt.as_ref().filter(|rt| rt.requests > 0) {
        out.push(("rt requests".into(), cell(&rt.requests)));
        out.push((RT_RATE.into(), cell(&rt.rate_per_s)));
        out.push((RT_P99.into(), cell(&rt.ttlb_us.p99_us)));
    }
    out
}

const RT_P99: &str = "rt p99 (time to last byte), us";
const RT_RATE: &str = "rt requests/s";

/// doctor --rt's intervals as windows of the rt numbers (an interval without requests has no
/// p99).
fn windows(rt: &RtSide) -> Vec<super::noise::Windows> {
    let Some(first) = rt.rows.first() else {
        return Vec::new();
    };
    let window_s = first.interval_s;
    let p99 = rt
        .rows
        .iter()
        .map(|r| {
            (r.requests > 0)
                .then_some(r.ttlb_p99_us)
                .flatten()
                .unwrap_or(f64::NAN)
        })
        .collect();
    let rate = rt
        .rows
        .iter()
        .map(|r| {
            let per = if r.interval_s > 0.0 {
                r.interval_s
            } else {
                f64::NAN
            };
            r.requests as f64 / per
        })
        .collect();
    vec![
        super::noise::Windows {
            name: RT_P99.into(),
            values: p99,
            window_s,
            micros: true,
        },
        super::noise::Windows {
            name: RT_RATE.into(),
            values: rate,
            window_s,
            micros: false,
        },
    ]
}

/// The window's timeline from `doctor --rt`'s interval rows: running threads, Threads_running
/// and the rt p99 per interval on one time axis.
fn window_chart(d: &DoctorDoc, rt: &RtSide) -> Option<Block> {
    let rows = &rt.rows;
    if rows.len() < 2 {
        return None;
    }
    let opt = |v: Option<f64>| v.unwrap_or(f64::NAN);
    let tl = crate::report::timeline::Timeline {
        title: format!("doctor window: {}", cell(&d.target)),
        t_ms: rows.iter().map(|r| r.t_s * 1e3).collect(),
        running: rows
            .iter()
            .map(|r| opt(r.proc_running_max.map(f64::from)))
            .collect(),
        threads_running: rows
            .iter()
            .map(|r| opt(r.threads_running_max.map(|n| n as f64)))
            .collect(),
        rt_p99_ms: rows.iter().map(|r| opt(r.ttlb_p99_us) / 1e3).collect(),
        trigger_ms: None,
        cores: d.burst.as_ref().map(|b| b.burst_threshold),
        step: true,
    };
    Some(Block::Svg {
        name: "doctor window timeline".into(),
        svg: crate::report::timeline::render(&tl),
    })
}
