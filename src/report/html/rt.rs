//! `spinscope.rt/1` (`rt --save`, or `rt --json` lines): the server's response times from
//! packets: the run's percentiles, the p99 per interval on a time axis, the costliest
//! statements.

use serde_json::Value;

use super::{cell, Block, Kind, Section};
use crate::report::timeline::{render, Timeline};

pub struct Rt;

/// Microseconds as a readable duration.
fn us(v: &Value) -> String {
    v.as_f64()
        .map_or("-".into(), |u| crate::report::fmt_ns(u * 1e3))
}

fn groups(list: &Value) -> Vec<Vec<String>> {
    list.as_array()
        .into_iter()
        .flatten()
        .take(10)
        .map(|g| {
            vec![
                cell(&g["key"]),
                cell(&g["requests"]),
                us(&g["ttlb_us"]["p50_us"]),
                us(&g["ttlb_us"]["p99_us"]),
                cell(&g["total_ttlb_ms"]),
            ]
        })
        .collect()
}

impl Kind for Rt {
    fn schema(&self) -> &'static str {
        "spinscope.rt/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        // A saved run has "total"; a lone interval line is its own total.
        let total = if doc["total"].is_object() {
            &doc["total"]
        } else {
            doc
        };
        if !total["ttlb_us"].is_object() {
            return Err("no \"total\" with response times".into());
        }
        let ports = doc["ports"]
            .as_array()
            .map(|p| p.iter().map(cell).collect::<Vec<_>>().join(", "));
        let on = format!(
            "{}{}",
            ports.map_or(String::new(), |p| format!("port {p}")),
            doc["source"]
                .as_str()
                .map_or(String::new(), |s| format!(" on {s}"))
        );
        let valid = total["valid"].as_bool().unwrap_or(false);
        let numbers: Vec<(String, String)> = vec![
            ("requests".into(), cell(&total["requests"])),
            ("requests/s".into(), cell(&total["rate_per_s"])),
            ("errors".into(), cell(&total["errors"])),
            (
                "time to last byte p50".into(),
                us(&total["ttlb_us"]["p50_us"]),
            ),
            (
                "time to last byte p99".into(),
                us(&total["ttlb_us"]["p99_us"]),
            ),
            (
                "time to last byte p99.9".into(),
                us(&total["ttlb_us"]["p999_us"]),
            ),
            (
                "time to last byte max".into(),
                us(&total["ttlb_us"]["max_us"]),
            ),
            (
                "time to first byte p99".into(),
                us(&total["ttfb_us"]["p99_us"]),
            ),
        ];
        let mut blocks = Vec::new();
        if !valid {
            blocks.push(Block::Para(format!(
                "Not a result: {} (the percentiles are over an incomplete capture).",
                total["invalid_reason"]
                    .as_str()
                    .unwrap_or("the kernel dropped packets")
            )));
        }
        blocks.push(Block::Table(
            vec!["over the run".into(), "value".into()],
            numbers
                .iter()
                .map(|(k, v)| vec![k.clone(), v.clone()])
                .collect(),
        ));
        let picture = interval_chart(doc, &on);
        blocks.extend(picture.clone());
        let head = ["statement or command", "requests", "p50", "p99", "total ms"]
            .map(String::from)
            .to_vec();
        let top = groups(&total["top_statements"]);
        if !top.is_empty() {
            blocks.push(Block::Table(head.clone(), top));
        }
        let by = groups(&total["by_command"]);
        if !by.is_empty() {
            blocks.push(Block::Table(head, by));
        }
        let summary = if valid && total["requests"].as_u64().is_some_and(|n| n > 0) {
            vec![(
                2,
                format!(
                    "Response time ({on}): {} requests, time to last byte p50 {}, p99 {}.",
                    cell(&total["requests"]),
                    us(&total["ttlb_us"]["p50_us"]),
                    us(&total["ttlb_us"]["p99_us"])
                ),
            )]
        } else {
            vec![]
        };
        let mut sec = Section::new("rt", format!("Response time (rt): {on}"), summary, blocks);
        sec.time_unix_s = total["start_unix_s"].as_f64();
        sec.numbers = numbers;
        sec.picture = picture;
        sec.windows = windows(doc);
        Ok(sec)
    }
}

/// The p99 per interval on a time axis (rt panel only), when the run kept its intervals.
fn interval_chart(doc: &Value, on: &str) -> Option<Block> {
    let iv = doc["intervals"].as_array().filter(|v| v.len() >= 2)?;
    let t0 = iv[0]["start_unix_s"].as_f64()?;
    let t_ms = iv
        .iter()
        .map(|r| (r["start_unix_s"].as_f64().unwrap_or(f64::NAN) - t0) * 1e3)
        .collect();
    let p99 = iv
        .iter()
        .map(|r| {
            let ok = r["requests"].as_u64().is_some_and(|n| n > 0);
            if ok {
                r["ttlb_us"]["p99_us"].as_f64().unwrap_or(f64::NAN) / 1e3
            } else {
                f64::NAN
            }
        })
        .collect::<Vec<f64>>();
    let nan = vec![f64::NAN; p99.len()];
    let tl = Timeline {
        title: format!("rt: p99 per interval, {on}"),
        t_ms,
        running: nan.clone(),
        threads_running: nan,
        rt_p99_ms: p99,
        trigger_ms: None,
        cores: None,
        step: true,
    };
    Some(Block::Svg {
        name: "rt p99 per interval".into(),
        svg: render(&tl),
    })
}

/// The run's intervals as windows of its p99 and rate (an interval without requests has no
/// p99); none for a lone interval.
fn windows(doc: &Value) -> Vec<super::noise::Windows> {
    let Some(iv) = doc["intervals"].as_array().filter(|v| !v.is_empty()) else {
        return Vec::new();
    };
    let window_s = iv[0]["interval_s"].as_f64().unwrap_or(f64::NAN);
    let served = |r: &Value| r["requests"].as_u64().is_some_and(|n| n > 0);
    let p99 = iv
        .iter()
        .map(|r| {
            if served(r) {
                r["ttlb_us"]["p99_us"].as_f64().unwrap_or(f64::NAN)
            } else {
                f64::NAN
            }
        })
        .collect();
    let rate = iv
        .iter()
        .map(|r| r["rate_per_s"].as_f64().unwrap_or(f64::NAN))
        .collect();
    vec![
        super::noise::Windows {
            name: "time to last byte p99".into(),
            values: p99,
            window_s,
            micros: true,
        },
        super::noise::Windows {
            name: "requests/s".into(),
            values: rate,
            window_s,
            micros: false,
        },
    ]
}
