//! `spinscope.profile-diff/1`: two profiles as shares of their own totals; per class and per
//! function the share before, after and the change; the differential flame graph (inferno's
//! differential mode, drawn from the document's stacks: red grew, blue shrank, widths are the
//! after profile).

use serde_json::Value;

use super::{cell, command, Block, Kind, Section};

pub struct ProfileDiff;

/// A share as percent; a change as signed share points.
fn pct(v: &Value) -> String {
    v.as_f64()
        .map_or("-".into(), |f| format!("{:.1}%", f * 100.0))
}
fn pts(v: &Value) -> String {
    v.as_f64()
        .map_or("-".into(), |f| format!("{:+.1} pts", f * 100.0))
}

fn rows(list: &Value, name: &str, extra: Option<&str>, max: usize) -> Vec<Vec<String>> {
    list.as_array()
        .into_iter()
        .flatten()
        .take(max)
        .map(|r| {
            let mut v = vec![cell(&r[name])];
            if let Some(k) = extra {
                v.push(cell(&r[k]));
            }
            v.extend([
                pct(&r["before_share"]),
                pct(&r["after_share"]),
                pts(&r["change"]),
            ]);
            v
        })
        .collect()
}

/// The differential flame graph of the document's stacks (shares scaled to integer counts).
pub fn differential_svg(doc: &Value) -> Option<Result<String, String>> {
    let stacks = doc["stacks"].as_array().filter(|s| !s.is_empty())?;
    let n = |v: &Value| (v.as_f64().unwrap_or(0.0).max(0.0) * 1e6).round() as u64;
    let mut lines: Vec<String> = stacks
        .iter()
        .filter_map(|s| {
            let st = s["stack"].as_str()?;
            Some(format!(
                "{st} {} {}",
                n(&s["before_share"]),
                n(&s["after_share"])
            ))
        })
        .collect();
    lines.sort();
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = "differential flame graph: red grew, blue shrank (widths: after)".into();
    opts.deterministic = true;
    opts.image_width = Some(1200);
    opts.count_name = "millionths of the profile".into();
    let mut out = Vec::new();
    Some(
        inferno::flamegraph::from_lines(&mut opts, lines.iter().map(|s| s.as_str()), &mut out)
            .map_err(|e| e.to_string())
            .and_then(|_| String::from_utf8(out).map_err(|e| e.to_string())),
    )
}

impl Kind for ProfileDiff {
    fn schema(&self) -> &'static str {
        "spinscope.profile-diff/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        doc.get("classes")
            .and_then(Value::as_array)
            .ok_or("no \"classes\" list")?;
        let (b, a) = (cell(&doc["before"]["name"]), cell(&doc["after"]["name"]));
        let valid = doc["valid"].as_bool().unwrap_or(false);
        let mut blocks = vec![Block::Para(format!(
            "Before (baseline): {b}, {} {}. After: {a}, {} {}. Each is a share of its own total; a change is after minus before in share points.",
            cell(&doc["before"]["weight"]),
            cell(&doc["before"]["weight_unit"]),
            cell(&doc["after"]["weight"]),
            cell(&doc["after"]["weight_unit"]),
        ))];
        if !valid {
            blocks.push(Block::Para(
                "Not a result: too few samples in one input to compare shares (see the notes)."
                    .into(),
            ));
        }
        let head = |first: &str, extra: bool| {
            let mut h = vec![first.to_string()];
            if extra {
                h.push("class".into());
            }
            h.extend(["before", "after", "change"].map(String::from));
            h
        };
        blocks.push(Block::Table(
            head("class", false),
            rows(&doc["classes"], "label", None, 20),
        ));
        blocks.push(Block::Table(
            head("function", true),
            rows(&doc["functions"], "function", Some("class"), 15),
        ));
        let mut picture = None;
        match differential_svg(doc) {
            Some(Ok(svg)) => {
                let b = Block::Svg { name: "differential flame graph".into(), svg };
                picture = Some(b.clone());
                blocks.push(b);
            }
            Some(Err(e)) => blocks.push(Block::Para(format!("differential flame graph not drawn: {e}"))),
            None => blocks.push(Block::Para("No stacks in the document (profile JSON inputs keep classes only): no differential flame graph.".into())),
        }
        if let Some(n) = doc["notes"].as_array().filter(|n| !n.is_empty()) {
            blocks.push(Block::List(n.iter().map(cell).collect()));
        }
        blocks.extend(command(doc));
        let fall = doc["classes"].as_array().and_then(|c| {
            c.iter()
                .filter(|r| r["change"].as_f64().is_some_and(|x| x < 0.0))
                .min_by(|x, y| {
                    x["change"]
                        .as_f64()
                        .unwrap_or(0.0)
                        .total_cmp(&y["change"].as_f64().unwrap_or(0.0))
                })
        });
        let summary = match (valid, fall) {
            (true, Some(f)) => vec![(
                2,
                format!(
                    "Profile diff ({b} -> {a}): {} fell from {} to {} of the CPU ({}).",
                    cell(&f["label"]),
                    pct(&f["before_share"]),
                    pct(&f["after_share"]),
                    pts(&f["change"])
                ),
            )],
            _ => vec![],
        };
        let mut sec = Section::new(
            "profile-diff",
            format!("Profile diff: {b} and {a}"),
            summary,
            blocks,
        );
        sec.picture = picture;
        Ok(sec)
    }
}
