//! `spinscope.profile-diff/1`: two profiles as shares of their own totals; per class and per
//! function the share before, after and the change; the differential flame graph (the one
//! `profile --diff --svg` draws, `profile::svg::differential`, from the document's stacks: red
//! grew, blue shrank, widths are the after profile).

use serde_json::Value;

use super::{cell, typed, Block, Kind, Section};
use crate::doc::profile::ProfileDiff as DiffDoc;

pub struct ProfileDiff;

/// A share as percent; a change as signed share points.
fn pct(f: f64) -> String {
    format!("{:.1}%", f * 100.0)
}
fn pts(f: f64) -> String {
    format!("{:+.1} pts", f * 100.0)
}

/// One table row: its name cells, then before, after and the change.
fn row(names: Vec<String>, before: f64, after: f64, change: f64) -> Vec<String> {
    let mut v = names;
    v.extend([pct(before), pct(after), pts(change)]);
    v
}

impl Kind for ProfileDiff {
    fn schema(&self) -> &'static str {
        "spinscope.profile-diff/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d: DiffDoc = typed(doc)?;
        let (b, a) = (cell(&d.before.name), cell(&d.after.name));
        let valid = d.valid;
        let mut blocks = vec![Block::Para(format!(
            "Before (baseline): {b}, {} {}. After: {a}, {} {}. Each is a share of its own total; a change is after minus before in share points.",
            cell(&d.before.weight),
            cell(&d.before.weight_unit),
            cell(&d.after.weight),
            cell(&d.after.weight_unit),
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
            d.classes
                .iter()
                .take(20)
                .map(|r| {
                    row(
                        vec![cell(&r.label)],
                        r.before_share,
                        r.after_share,
                        r.change,
                    )
                })
                .collect(),
        ));
        blocks.push(Block::Table(
            head("function", true),
            d.functions
                .iter()
                .take(15)
                .map(|r| {
                    row(
                        vec![cell(&r.function), cell(&r.class)],
                        r.before_share,
                        r.after_share,
                        r.change,
                    )
                })
                .collect(),
        ));
        let mut picture = None;
        if d.stacks.is_empty() {
            blocks.push(Block::Para("No stacks in the document (profile JSON inputs keep classes only): no differential flame graph.".into()));
        } else {
            let title = "differential flame graph: red grew, blue shrank (widths: after)";
            match crate::profile::svg::differential(&d.stacks, title) {
                Ok(svg) => {
                    let b = Block::Svg {
                        name: "differential flame graph".into(),
                        svg,
                    };
                    picture = Some(b.clone());
                    blocks.push(b);
                }
                Err(e) => blocks.push(Block::Para(format!(
                    "differential flame graph not drawn: {e}"
                ))),
            }
        }
        if !d.notes.is_empty() {
            blocks.push(Block::List(d.notes.clone()));
        }
        let fall = d
            .classes
            .iter()
            .filter(|r| r.change < 0.0)
            .min_by(|x, y| x.change.total_cmp(&y.change));
        let summary = match (valid, fall) {
            (true, Some(f)) => vec![(
                2,
                format!(
                    "Profile diff ({b} -> {a}): {} fell from {} to {} of the CPU ({}).",
                    cell(&f.label),
                    pct(f.before_share),
                    pct(f.after_share),
                    pts(f.change)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The report draws the differential flame graph `profile --diff --svg` draws: one
    /// implementation, red for a stack that grew and blue for one that shrank.
    #[test]
    fn the_report_draws_the_one_differential_flame_graph() {
        let doc = serde_json::json!({
            "schema": "spinscope.profile-diff/1",
            "before": {"name": "a.txt", "format": "perf-script", "samples": 1000, "weight": 1000, "weight_unit": "samples", "event": null, "stacks": 2, "call_chains": true, "too_few_samples": false},
            "after": {"name": "b.txt", "format": "perf-script", "samples": 1000, "weight": 1000, "weight_unit": "samples", "event": null, "stacks": 2, "call_chains": true, "too_few_samples": false},
            "classes": [{"class": "spin", "label": "InnoDB spin", "before_share": 0.6, "after_share": 0.1, "change": -0.5, "noise_95": 0.03}],
            "functions": [],
            "stacks": [
                {"stack": "mysqld;ut_delay", "before_share": 0.6, "after_share": 0.1, "change": -0.5},
                {"stack": "mysqld;do_command", "before_share": 0.4, "after_share": 0.9, "change": 0.5}
            ],
            "totals": {"functions": 0, "functions_shown": 0, "stacks": 2, "stacks_shown": 2, "moved_share": 0.5},
            "largest_fall": "InnoDB spin", "largest_rise": null, "valid": true, "notes": []
        });
        let sec = ProfileDiff.section(&doc, "d.json").unwrap();
        let Some(Block::Svg { svg, .. }) = &sec.picture else {
            panic!("no flame graph: {:?}", sec.blocks);
        };
        let d: DiffDoc = serde_json::from_value(doc).unwrap();
        let cli = crate::profile::svg::differential(
            &d.stacks,
            "differential flame graph: red grew, blue shrank (widths: after)",
        )
        .unwrap();
        assert_eq!(*svg, cli, "the report and the CLI draw the same graph");
        assert!(
            svg.contains("ut_delay") && svg.contains("do_command"),
            "{svg}"
        );
        // inferno's differential colours: a frame that shrank is blue, one that grew red.
        let rgb = |name: &str| -> Vec<u32> {
            let at = svg.find(&format!("<title>{name} (")).expect(name);
            let fill = &svg[at..][svg[at..].find("fill=\"rgb(").expect("a fill") + 10..];
            fill[..fill.find(')').unwrap()]
                .split(',')
                .map(|x| x.trim().parse().unwrap())
                .collect()
        };
        let (shrank, grew) = (rgb("ut_delay"), rgb("do_command"));
        assert!(shrank[2] == 255 && shrank[0] < 255, "ut_delay {shrank:?}");
        assert!(grew[0] == 255 && grew[2] < 255, "do_command {grew:?}");
        assert!(
            sec.summary[0]
                .1
                .contains("InnoDB spin fell from 60.0% to 10.0%"),
            "{:?}",
            sec.summary
        );
    }
}
