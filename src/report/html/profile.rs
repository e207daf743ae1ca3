//! `spinscope.profile/2`: where the server's CPU went, by frame class, and a flame graph of the
//! classes' top stacks (inferno's interactive SVG: the document keeps those, not every stack).

use serde_json::Value;

use super::{cell, command, fields, Block, Kind, Section};
use crate::profile::fold::Tally;

pub struct Profile;

impl Kind for Profile {
    fn schema(&self) -> &'static str {
        "spinscope.profile/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let classes = doc
            .get("classes")
            .and_then(Value::as_array)
            .ok_or("no \"classes\" list")?;
        let pct = |v: &Value| {
            v.as_f64()
                .map_or("-".into(), |f| format!("{:.1}%", f * 100.0))
        };
        let rows = classes
            .iter()
            .map(|c| {
                vec![
                    cell(&c["label"]),
                    cell(&c["self_samples"]),
                    pct(&c["self_share"]),
                    pct(&c["inclusive_share"]),
                ]
            })
            .collect();
        let mut folded: Vec<(String, Tally)> = Vec::new();
        for c in classes {
            for s in c["top_stacks"].as_array().into_iter().flatten() {
                if let (Some(st), Some(n), Some(w)) = (
                    s["stack"].as_str(),
                    s["samples"].as_u64(),
                    s["weight"].as_u64(),
                ) {
                    if !folded.iter().any(|(k, _)| k == st) {
                        folded.push((
                            st.to_string(),
                            Tally {
                                samples: n,
                                weight: w,
                            },
                        ));
                    }
                }
            }
        }
        folded.sort_by(|a, b| a.0.cmp(&b.0));
        let mut blocks = vec![
            Block::Para(
                doc["headline"]
                    .as_str()
                    .unwrap_or("No InnoDB spin waiting worth a headline in this profile.")
                    .to_string(),
            ),
            fields(
                doc,
                &[
                    "samples",
                    "weight",
                    "weight_unit",
                    "call_chains",
                    "spin_share",
                ],
            ),
            Block::Table(
                ["class", "self samples", "self share", "inclusive share"]
                    .map(String::from)
                    .to_vec(),
                rows,
            ),
        ];
        if !folded.is_empty() {
            let unit = doc["weight_unit"].as_str().unwrap_or("samples");
            match crate::profile::svg::flame_graph(&folded, "top stacks per class", unit) {
                Ok(svg) => blocks.push(Block::Svg {
                    name: "flame graph".into(),
                    svg,
                }),
                Err(e) => blocks.push(Block::Para(format!("flame graph not drawn: {e}"))),
            }
        }
        if let Some(n) = doc.get("notes").and_then(Value::as_array) {
            blocks.push(Block::List(n.iter().map(cell).collect()));
        }
        blocks.extend(command(doc));
        let share = doc["spin_share"].as_f64().unwrap_or(0.0);
        let src = &doc["source"];
        // A recording is named by its file, else by the process it sampled.
        let what = match (
            src["file"].as_str(),
            src["comm"].as_str(),
            src["pid"].as_u64(),
        ) {
            (Some(f), _, _) => f.to_string(),
            (None, Some(c), Some(p)) => format!("{c} (pid {p}), recorded live"),
            (None, _, Some(p)) => format!("pid {p}, recorded live"),
            _ => "recorded live".to_string(),
        };
        let spin = format!(
            "Profile ({what}): InnoDB spin waiting is {:.1}% of the sampled CPU.",
            share * 100.0
        );
        let line = doc["headline"]
            .as_str()
            .map_or(spin, |h| format!("Profile ({what}): {h}."));
        let mut sec = Section::new(
            "profile",
            format!("Profile: {what}"),
            vec![(if share >= 0.2 { 1 } else { 3 }, line)],
            blocks,
        );
        sec.numbers = vec![
            ("samples".into(), cell(&doc["samples"])),
            ("InnoDB spin share".into(), format!("{:.1}%", share * 100.0)),
        ];
        sec.picture = sec
            .blocks
            .iter()
            .find(|b| matches!(b, Block::Svg { .. }))
            .cloned();
        Ok(sec)
    }
}
