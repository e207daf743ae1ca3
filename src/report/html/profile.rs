//! `spinscope.profile/2`: where the server's CPU went, by frame class, and a flame graph of the
//! classes' top stacks (inferno's interactive SVG: the document keeps those, not every stack).

use serde_json::Value;

use super::{cell, fields, typed, Block, Kind, Section};
use crate::doc::profile::ProfileDoc;
use crate::profile::fold::Tally;

pub struct Profile;

impl Kind for Profile {
    fn schema(&self) -> &'static str {
        "spinscope.profile/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d: ProfileDoc = typed(doc)?;
        let pct = |f: f64| format!("{:.1}%", f * 100.0);
        let rows = d
            .classes
            .iter()
            .map(|c| {
                vec![
                    cell(&c.label),
                    cell(&c.self_samples),
                    pct(c.self_share),
                    pct(c.inclusive_share),
                ]
            })
            .collect();
        let mut folded: Vec<(String, Tally)> = Vec::new();
        for c in &d.classes {
            for s in &c.top_stacks {
                if !folded.iter().any(|(k, _)| *k == s.stack) {
                    folded.push((
                        s.stack.clone(),
                        Tally {
                            samples: s.samples,
                            weight: s.weight,
                        },
                    ));
                }
            }
        }
        folded.sort_by(|a, b| a.0.cmp(&b.0));
        let mut blocks = vec![
            Block::Para(d.headline.clone().unwrap_or_else(|| {
                "No InnoDB spin waiting worth a headline in this profile.".to_string()
            })),
            fields(vec![
                ("samples", Some(cell(&d.samples))),
                ("weight", Some(cell(&d.weight))),
                ("weight_unit", Some(cell(&d.weight_unit))),
                ("call_chains", Some(cell(&d.call_chains))),
                ("spin_share", Some(cell(&d.spin_share))),
            ]),
            Block::Table(
                ["class", "self samples", "self share", "inclusive share"]
                    .map(String::from)
                    .to_vec(),
                rows,
            ),
        ];
        if !folded.is_empty() {
            match crate::profile::svg::flame_graph(&folded, "top stacks per class", &d.weight_unit)
            {
                Ok(svg) => blocks.push(Block::Svg {
                    name: "flame graph".into(),
                    svg,
                }),
                Err(e) => blocks.push(Block::Para(format!("flame graph not drawn: {e}"))),
            }
        }
        blocks.push(Block::List(d.notes.clone()));
        let share = d.spin_share;
        let src = &d.source;
        // A recording is named by its file, else by the process it sampled.
        let what = match (src.file.as_deref(), src.comm.as_deref(), src.pid) {
            (Some(f), _, _) => f.to_string(),
            (None, Some(c), Some(p)) => format!("{c} (pid {p}), recorded live"),
            (None, _, Some(p)) => format!("pid {p}, recorded live"),
            _ => "recorded live".to_string(),
        };
        let spin = format!(
            "Profile ({what}): InnoDB spin waiting is {:.1}% of the sampled CPU.",
            share * 100.0
        );
        let line = d
            .headline
            .as_ref()
            .map_or(spin, |h| format!("Profile ({what}): {h}."));
        let mut sec = Section::new(
            "profile",
            format!("Profile: {what}"),
            vec![(if share >= 0.2 { 1 } else { 3 }, line)],
            blocks,
        );
        sec.numbers = vec![
            ("samples".into(), cell(&d.samples)),
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
