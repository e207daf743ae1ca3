//! The `spinscope.tune/1` document and its rendering (pure).

use serde::{Deserialize, Serialize};

use super::candidates::{changes, Candidate, Origin};
use super::plan::Plan;
use super::race::{mean_interval, Decision, Interval, Race};
use crate::spin::model::{FamilyInfo, Settings};

pub const SCHEMA: &str = "spinscope.tune/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub name: String,
    pub origin: Origin,
    pub settings: Settings,
    pub repeats: usize,
    pub invalid_repeats: usize,
    /// Mean throughput and its 95% interval (None below 2 valid repeats).
    pub tps: Option<Interval>,
    /// Against the current settings, percent: the 95% interval of the paired log-ratios (rounds
    /// in which both ran), never below -100 (None below 3 pairs).
    pub vs_current_pct: Option<Interval>,
    pub p99_ms: Option<f64>,
    /// "leader", "raced", "dropped after round ...", "current".
    pub status: String,
}

/// Throughput over one knob, the others at their defaults (the grid's points, the defaults,
/// and any other candidate that moves only this knob).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    pub variable: String,
    /// (value, mean tps and 95% interval; None without 2 valid repeats).
    pub points: Vec<(u64, Option<Interval>)>,
}

/// A knob: its variable, how to read it from settings and how to set it.
type KnobFns = (
    &'static str,
    fn(&Settings) -> u64,
    fn(Settings, u64) -> Settings,
);

/// The measured curve over each knob.
pub fn curves(info: &FamilyInfo, rows: &[Row]) -> Vec<Curve> {
    let d = crate::spin::model::default_settings(info);
    let mut out = Vec::new();
    let knobs: Vec<KnobFns> = vec![
        (
            info.delay.name,
            |s| s.spin_wait_delay,
            |s, v| Settings {
                spin_wait_delay: v,
                ..s
            },
        ),
        (
            info.loops.name,
            |s| s.sync_spin_loops,
            |s, v| Settings {
                sync_spin_loops: v,
                ..s
            },
        ),
    ];
    let mut all = knobs;
    if let Some(m) = info.multiplier {
        all.insert(
            0,
            (
                m.name,
                |s| s.pause_multiplier.unwrap_or(0),
                |s, v| Settings {
                    pause_multiplier: Some(v),
                    ..s
                },
            ),
        );
    }
    for (name, get, set) in all {
        let mut pts: Vec<(u64, Option<Interval>)> = rows
            .iter()
            .filter(|r| set(d, get(&r.settings)) == r.settings)
            .map(|r| (get(&r.settings), r.tps))
            .collect();
        pts.sort_by_key(|p| p.0);
        pts.dedup_by_key(|p| p.0);
        if pts.len() >= 2 {
            out.push(Curve {
                variable: name.to_string(),
                points: pts,
            });
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelView {
    /// The settings the spin model advised for this CPU (None: no CPU figure).
    pub settings: Option<Settings>,
    pub cpu: Option<String>,
    pub target: String,
    /// Where the model's candidate ended in the ranking (1 = best), and against the measured
    /// best, percent.
    pub rank: Option<usize>,
    pub vs_best_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneDoc {
    pub schema: String,
    pub tool_version: String,
    pub server: String,
    pub workload: String,
    pub threads: u32,
    /// "--threads" or how the default was found.
    pub threads_source: String,
    pub budget_s: f64,
    pub spent_s: f64,
    pub step_s: f64,
    pub max_p99_increase_pct: f64,
    pub rounds: usize,
    pub measurements: usize,
    pub method: String,
    /// Ranked: best mean throughput first among valid rows, then the rest.
    pub candidates: Vec<Row>,
    #[serde(default)]
    pub curves: Vec<Curve>,
    pub model: ModelView,
    pub decision: Decision,
    /// The winner's statements (empty when keeping).
    pub set_global: Vec<String>,
    pub my_cnf: Vec<String>,
    pub applied: bool,
    pub interrupted: bool,
    /// What happened to the settings at the end (restored / left set).
    pub settings_after: Vec<String>,
    /// The failure that ended the race early (a server that stopped answering or restarted);
    /// the rows hold what was measured until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_because: Option<String>,
    /// The load client of the measurements (its last one: `events`, or `threads` where the
    /// events client could not connect) and whether it spoke TLS; None before any.
    #[serde(default)]
    pub client: Option<crate::load::ClientUsed>,
    /// What the budget allowed, planned before the race (candidates, rounds, measurement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// The wait document the candidates followed (`--waits FILE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits: Option<WaitsUsed>,
}

/// A saved wait document's direction, as tune used it: only candidates that move the spin that
/// way (and the current settings) race, so tune never changes the settings against it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitsUsed {
    pub file: String,
    pub direction: crate::profile::waits::advice::Direction,
    /// The document's reason, with its numbers.
    pub reason: String,
    /// Candidates left out because they move the spin the other way.
    pub left_out: Vec<String>,
    /// Said when the document could not be matched to the server (no identity in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl WaitsUsed {
    /// One line for the report.
    pub fn line(&self) -> String {
        let mut s = format!(
            "waits ({}): {} ({})",
            self.file,
            self.direction.word(),
            self.reason
        );
        if !self.left_out.is_empty() {
            s.push_str(&format!(
                "; left out as moving the other way: {}",
                self.left_out.join(", ")
            ));
        }
        if let Some(n) = &self.note {
            s.push_str(&format!("; note: {n}"));
        }
        s
    }
}

pub const METHOD: &str = "racing: the budget planned first (the candidates that get 8 rounds each race, the current settings, the model's advice and the defaults first; the measurement shortened to 0.5 s + 2 s when not even those fit and the flags do not fix it); every remaining candidate measured once per round in rotated order, the measurements of one round paired; after 3 paired rounds a candidate significantly slower than the leader (paired log-ratio t interval, 1-0.05/m) leaves; change only when the leader beats the current settings by the paired log-ratio interval at 1-0.05/m (Bonferroni over the m candidates raced) and its mean p99 over 3 or more repeats stays within the limit, or earlier, at one of L early looks planned (rounds 3 .. the planned last but one), by that interval at 1-0.05/(2 m L), so a wrong change stays within 0.05 over all looks; keep only when the current settings lead; otherwise no decision, with the budget a proof would take";

/// Statements for `settings` from `current` (the winner's), SET GLOBAL and my.cnf.
pub fn statements(
    info: &FamilyInfo,
    current: &Settings,
    to: &Settings,
) -> (Vec<String>, Vec<String>) {
    let ch = changes(info, current, to);
    (
        ch.iter()
            .map(|(v, x)| format!("SET GLOBAL {v} = {x};"))
            .collect(),
        ch.iter().map(|(v, x)| format!("{v} = {x}")).collect(),
    )
}

/// Rows ranked by mean throughput (rows without a mean last, in race order).
pub fn rows(race: &Race, cands: &[Candidate], leader: Option<usize>) -> Vec<Row> {
    let mut out: Vec<Row> = race
        .arms
        .iter()
        .zip(cands)
        .enumerate()
        .map(|(i, (a, c))| {
            let v = a.valid_tps();
            Row {
                name: c.name.clone(),
                origin: c.origin,
                settings: c.settings,
                repeats: a.samples.len(),
                invalid_repeats: a.samples.len() - v.len(),
                tps: mean_interval(&v),
                vs_current_pct: if i == 0 {
                    None
                } else {
                    race.paired_vs_current(i, 0.95)
                },
                p99_ms: a.mean_p99_us().map(|x| x / 1000.0),
                status: match (&a.dropped, leader == Some(i)) {
                    (Some(d), _) => d.clone(),
                    (None, true) => "leader".into(),
                    (None, false) if i == 0 => "current".into(),
                    (None, false) if a.samples.is_empty() => "not measured".into(),
                    (None, false) if race.p99_within(i) == Some(false) => {
                        "p99 above the limit".into()
                    }
                    (None, false) if v.len() < super::race::MIN_REPEATS => {
                        format!("{} of {} repeats", v.len(), super::race::MIN_REPEATS)
                    }
                    _ => "raced".into(),
                },
            }
        })
        .collect();
    out.sort_by(|a, b| match (&a.tps, &b.tps) {
        (Some(x), Some(y)) => y.mean.total_cmp(&x.mean),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    out
}

/// Where the model's settings ended in the ranking (1 = best; they may be the current
/// settings or the defaults), and their mean against the measured best, percent.
pub fn model_rank(rows: &[Row], model: Option<Settings>) -> (Option<usize>, Option<f64>) {
    let best = rows.first().and_then(|r| r.tps).map(|t| t.mean);
    let Some(i) = model.and_then(|m| rows.iter().position(|r| r.settings == m)) else {
        return (None, None);
    };
    let d = rows[i].tps.zip(best).map(|(t, b)| (t.mean - b) / b * 100.0);
    (Some(i + 1), d)
}

fn settings_text(s: &Settings) -> String {
    let mut t = format!("delay {} loops {}", s.spin_wait_delay, s.sync_spin_loops);
    if let Some(m) = s.pause_multiplier {
        t.push_str(&format!(" multiplier {m}"));
    }
    t
}

/// The human report.
pub fn render(d: &TuneDoc) -> String {
    let mut out = format!(
        "spinscope tune: {} workload {} at {} threads ({}); {} of {} s budget, {} measurements of {} s in {} rounds{}\n\n",
        d.server,
        d.workload,
        d.threads,
        d.threads_source,
        d.spent_s.round(),
        d.budget_s.round(),
        d.measurements,
        d.step_s,
        d.rounds,
        if d.interrupted { " (interrupted)" } else { "" }
    );
    if let Some(p) = &d.plan {
        out.push_str(&format!("plan: {}\n\n", p.describe()));
    }
    if let Some(w) = &d.waits {
        out.push_str(&format!("{}\n\n", w.line()));
    }
    let mut t = crate::units::table(&[
        "#",
        "candidate",
        "settings",
        "reps",
        "tps (95% CI)",
        "vs current (95% CI)",
        "p99 ms",
        "status",
    ]);
    for (i, r) in d.candidates.iter().enumerate() {
        let fmt = crate::units::fmt_num;
        t.add_row(vec![
            (i + 1).to_string(),
            r.name.clone(),
            settings_text(&r.settings),
            if r.invalid_repeats > 0 {
                format!("{} ({} invalid)", r.repeats, r.invalid_repeats)
            } else {
                r.repeats.to_string()
            },
            r.tps
                .map(|x| format!("{} ({} .. {})", fmt(x.mean), fmt(x.low), fmt(x.high)))
                .unwrap_or_else(|| "-".into()),
            r.vs_current_pct
                .map(|x| format!("{:+.1}% ({:+.1} .. {:+.1})", x.mean, x.low, x.high))
                .unwrap_or_else(|| "-".into()),
            r.p99_ms.map(fmt).unwrap_or_else(|| "-".into()),
            r.status.clone(),
        ]);
    }
    out.push_str(&format!("{t}\n\n"));
    for c in &d.curves {
        let pts: Vec<String> = c
            .points
            .iter()
            .map(|(v, t)| match t {
                Some(t) => format!("{v}: {}", crate::units::fmt_num(t.mean)),
                None => format!("{v}: -"),
            })
            .collect();
        out.push_str(&format!(
            "curve {} (tps; others at defaults): {}\n",
            c.variable,
            pts.join(", ")
        ));
    }
    match &d.model.settings {
        Some(s) => out.push_str(&format!(
            "model ({}; {}): {}; measured rank {}{}\n",
            d.model.cpu.as_deref().unwrap_or("?"),
            d.model.target,
            settings_text(s),
            d.model
                .rank
                .map(|r| r.to_string())
                .unwrap_or_else(|| "- (not raced)".into()),
            d.model
                .vs_best_pct
                .map(|p| format!(", {p:+.1}% against the measured best"))
                .unwrap_or_default()
        )),
        None => out.push_str(&format!("model: {}\n", d.model.target)),
    }
    // "Best" only among candidates with a measured mean (the rows are ranked by it).
    if let Some(best) = d.candidates.first().filter(|r| r.tps.is_some()) {
        out.push_str(&format!(
            "measured best: {} ({}){}\n",
            best.name,
            settings_text(&best.settings),
            if d.decision.proven {
                ""
            } else {
                " -- not proven"
            }
        ));
    }
    out.push_str(&format!("\ndecision: {}\n", d.decision.sentence));
    if !d.decision.proven {
        if let Some(s) = &d.model.settings {
            out.push_str(&format!(
                "  unproven advice from the spin model ({}): {}; the settings were left as they were\n",
                d.model.target,
                settings_text(s)
            ));
        }
    }
    if !d.set_global.is_empty() {
        out.push_str("\n  -- now:\n");
        for s in &d.set_global {
            out.push_str(&format!("  {s}\n"));
        }
        out.push_str("  # my.cnf [mysqld], to keep it across restarts:\n");
        for s in &d.my_cnf {
            out.push_str(&format!("  {s}\n"));
        }
    }
    for s in &d.settings_after {
        out.push_str(&format!("{s}\n"));
    }
    out.push_str(&format!("\nmethod: {}\n", d.method));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spin::model::{default_settings, family_for};
    use crate::spin::version::parse_version;
    use crate::tune::race::{RaceConfig, Sample};

    #[test]
    fn rows_rank_by_throughput_and_render_the_decision() {
        let info = family_for(&parse_version("10.11.6-MariaDB", None).unwrap());
        let cur = Settings {
            spin_wait_delay: 6000,
            ..default_settings(&info)
        };
        let cands = crate::tune::candidates::generate(&info, cur, None, 3);
        let mut race = Race::new(
            cands.iter().map(|c| c.name.clone()).collect(),
            RaceConfig {
                cost_s: 1.0,
                budget_s: 100.0,
                max_repeats: 5,
                alpha: 0.05,
                max_p99_increase_pct: 10.0,
                early_looks: 0,
                replan: false,
            },
        );
        for r in 0..5 {
            // One round per repeat: the rounds pair the measurements.
            race.rounds = r;
            for (i, base) in [1000.0, 2000.0, 1500.0].iter().enumerate() {
                let w = vec![base + r as f64 * 10.0; 4];
                race.record(
                    i,
                    Sample {
                        windows_tps: w,
                        p99_us: 1000.0,
                        invalid: None,
                    },
                    1.0,
                );
            }
        }
        race.rounds = 5;
        let dec = race.decide();
        assert!(dec.change && dec.winner == 1, "{}", dec.sentence);
        let rows = rows(&race, &cands, dec.leader);
        assert_eq!(rows[0].name, "defaults");
        assert_eq!(rows[0].status, "leader");
        assert_eq!(rows[2].name, "current");
        let v = rows[0].vs_current_pct.unwrap();
        assert!((v.mean - 99.0).abs() < 1.0, "{v:?}");
        let (sg, cnf) = statements(&info, &cur, &cands[dec.winner].settings);
        assert_eq!(sg, vec!["SET GLOBAL innodb_spin_wait_delay = 4;"]);
        assert_eq!(cnf, vec!["innodb_spin_wait_delay = 4"]);
        let doc = TuneDoc {
            schema: SCHEMA.into(),
            tool_version: "0".into(),
            server: "10.11.6-MariaDB".into(),
            workload: "write-only".into(),
            threads: 16,
            threads_source: "--threads".into(),
            budget_s: 100.0,
            spent_s: 15.0,
            step_s: 1.0,
            max_p99_increase_pct: 10.0,
            rounds: 5,
            measurements: 15,
            method: METHOD.into(),
            curves: curves(&info, &rows),
            candidates: rows,
            model: ModelView {
                settings: None,
                cpu: None,
                target: "no CPU figure".into(),
                rank: None,
                vs_best_pct: None,
            },
            decision: dec,
            set_global: sg,
            my_cnf: cnf,
            applied: false,
            interrupted: false,
            settings_after: vec![],
            stopped_because: None,
            client: None,
            plan: None,
            waits: None,
        };
        let text = render(&doc);
        assert!(text.contains("decision: change to defaults"), "{text}");
        // current (6000), defaults (4) and the grid's d=1 lie on the delay curve.
        assert_eq!(doc.curves.len(), 1, "{:?}", doc.curves);
        let vals: Vec<u64> = doc.curves[0].points.iter().map(|p| p.0).collect();
        assert_eq!(vals, vec![1, 4, 6000]);
        assert!(
            text.contains("curve innodb_spin_wait_delay (tps; others at defaults): 1: 1520"),
            "{text}"
        );
        assert!(
            text.contains("SET GLOBAL innodb_spin_wait_delay = 4;"),
            "{text}"
        );
        let back: TuneDoc = serde_json::from_str(&serde_json::to_string(&doc).unwrap()).unwrap();
        assert_eq!(back.schema, SCHEMA);
        assert_eq!(back.candidates.len(), 3);
        assert_eq!(back.decision.winner, doc.decision.winner);
        assert_eq!(back.set_global, doc.set_global);
    }
}
