//! `spinscope.rt/1` (`rt --save`, or `rt --json` lines): the server's response times from
//! packets: the run's percentiles, the p99 per interval on a time axis, the costliest
//! statements.

use serde_json::Value;

use super::{cell, Block, Kind, Section};
use crate::doc::rt::{Group, IntervalReport, Percentiles, RtDoc};
use crate::report::timeline::{render, Timeline};

pub struct Rt;

/// Microseconds as a readable duration.
fn us(v: f64) -> String {
    crate::report::fmt_ns(v * 1e3)
}

/// A percentile of a time, "-" when no request was timed (the document's null).
fn pick(p: &Percentiles, f: impl Fn(&Percentiles) -> f64) -> String {
    if p.is_empty() {
        "-".into()
    } else {
        us(f(p))
    }
}

fn groups(list: &[Group]) -> Vec<Vec<String>> {
    list.iter()
        .take(10)
        .map(|g| {
            vec![
                cell(&g.key),
                cell(&g.requests),
                pick(&g.ttlb_us, |p| p.p50_us),
                pick(&g.ttlb_us, |p| p.p99_us),
                cell(&g.total_ttlb_ms),
            ]
        })
        .collect()
}

/// What the section needs of any rt shape: where it was read, its intervals and its total.
struct View<'a> {
    ports: Option<&'a [u16]>,
    source: Option<&'a str>,
    intervals: &'a [IntervalReport],
    total: &'a IntervalReport,
}

fn view(d: &RtDoc) -> View<'_> {
    match d {
        RtDoc::Run(r) => View {
            ports: Some(r.ports.as_slice()),
            source: Some(r.source.as_str()),
            intervals: &r.intervals,
            total: &r.total,
        },
        RtDoc::Lines(l) => View {
            ports: None,
            source: None,
            intervals: &l.intervals,
            total: &l.total,
        },
        RtDoc::Interval(i) => View {
            ports: None,
            source: None,
            intervals: &[],
            total: i,
        },
    }
}

impl Kind for Rt {
    fn schema(&self) -> &'static str {
        "spinscope.rt/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d = RtDoc::from_value(doc).map_err(|e| format!("not a valid document: {e}"))?;
        let v = view(&d);
        let total = v.total;
        if total.ttlb_us.is_empty() {
            return Err("no \"total\" with response times".into());
        }
        let ports = v
            .ports
            .map(|p| p.iter().map(cell).collect::<Vec<_>>().join(", "));
        let on = format!(
            "{}{}",
            ports.map_or(String::new(), |p| format!("port {p}")),
            v.source.map_or(String::new(), |s| format!(" on {s}"))
        );
        let valid = total.valid;
        let numbers: Vec<(String, String)> = vec![
            ("requests".into(), cell(&total.requests)),
            ("requests/s".into(), cell(&total.rate_per_s)),
            ("errors".into(), cell(&total.errors)),
            (
                "time to last byte p50".into(),
                pick(&total.ttlb_us, |p| p.p50_us),
            ),
            (
                "time to last byte p99".into(),
                pick(&total.ttlb_us, |p| p.p99_us),
            ),
            (
                "time to last byte p99.9".into(),
                pick(&total.ttlb_us, |p| p.p999_us),
            ),
            (
                "time to last byte max".into(),
                pick(&total.ttlb_us, |p| p.max_us),
            ),
            (
                "time to first byte p99".into(),
                pick(&total.ttfb_us, |p| p.p99_us),
            ),
        ];
        let mut blocks = Vec::new();
        if !valid {
            blocks.push(Block::Para(format!(
                "Not a result: {} (the percentiles are over an incomplete capture).",
                total
                    .invalid_reason
                    .as_deref()
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
        blocks.push(Block::Para(noise_words(v.intervals, total)));
        let picture = interval_chart(v.intervals, &on);
        blocks.extend(picture.clone());
        let head = ["statement or command", "requests", "p50", "p99", "total ms"]
            .map(String::from)
            .to_vec();
        let top = groups(&total.top_statements);
        if !top.is_empty() {
            blocks.push(Block::Table(head.clone(), top));
        }
        let by = groups(&total.by_command);
        if !by.is_empty() {
            blocks.push(Block::Table(head, by));
        }
        let summary = if valid && total.requests > 0 {
            vec![(
                2,
                format!(
                    "Response time ({on}): {} requests, time to last byte p50 {}, p99 {}.",
                    cell(&total.requests),
                    pick(&total.ttlb_us, |p| p.p50_us),
                    pick(&total.ttlb_us, |p| p.p99_us)
                ),
            )]
        } else {
            vec![]
        };
        let mut sec = Section::new("rt", format!("Response time (rt): {on}"), summary, blocks);
        sec.time_unix_s = Some(total.start_unix_s);
        sec.numbers = numbers;
        sec.picture = picture;
        sec.windows = windows(v.intervals);
        Ok(sec)
    }
}

/// The p99 per interval on a time axis (rt panel only), when the run kept its intervals.
fn interval_chart(iv: &[IntervalReport], on: &str) -> Option<Block> {
    if iv.len() < 2 {
        return None;
    }
    let t0 = iv[0].start_unix_s;
    let t_ms = iv.iter().map(|r| (r.start_unix_s - t0) * 1e3).collect();
    let p99 = iv.iter().map(p99_of).map(|u| u / 1e3).collect::<Vec<f64>>();
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

/// The noise of the run's numbers: their spread over its windows, or, for one window (a lone
/// `rt --json` line, a run of one interval), that it has none, so no before/after comparison
/// can lean on it.
fn noise_words(iv: &[IntervalReport], total: &IntervalReport) -> String {
    let ws = windows(iv);
    if iv.len() >= 2 {
        let spread: Vec<String> = ws
            .iter()
            .map(|w| format!("{}: {}", w.name, w.spread()))
            .collect();
        return format!("Over the windows: {}.", spread.join("; "));
    }
    let len = iv.first().unwrap_or(total).interval_s;
    format!(
        "One window of {} s: these numbers have no noise estimate (that takes 2 windows or more, an rt --interval shorter than the run), so a difference from another run cannot be told from noise.",
        crate::report::fmt_num(len)
    )
}

/// An interval's p99 (time to last byte), microseconds; NaN when it answered no request.
fn p99_of(r: &IntervalReport) -> f64 {
    if r.requests > 0 && !r.ttlb_us.is_empty() {
        r.ttlb_us.p99_us
    } else {
        f64::NAN
    }
}

/// The run's intervals as windows of its p99 and rate (an interval without requests has no
/// p99); none for a lone interval.
fn windows(iv: &[IntervalReport]) -> Vec<super::noise::Windows> {
    let Some(first) = iv.first() else {
        return Vec::new();
    };
    vec![
        super::noise::Windows {
            name: "time to last byte p99".into(),
            values: iv.iter().map(p99_of).collect(),
            window_s: first.interval_s,
            micros: true,
        },
        super::noise::Windows {
            name: "requests/s".into(),
            values: iv.iter().map(|r| r.rate_per_s).collect(),
            window_s: first.interval_s,
            micros: false,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One interval line; `p99_us` None: no request answered (both times null, as rt writes).
    fn interval(kind: &str, start: f64, requests: u64, p99_us: Option<f64>) -> serde_json::Value {
        let times = |p50: f64| {
            p99_us.map_or(serde_json::Value::Null, |p| {
                serde_json::json!({"p50_us": p50, "p95_us": p, "p99_us": p, "p999_us": p, "max_us": p})
            })
        };
        serde_json::json!({
            "schema": "spinscope.rt/1", "kind": kind, "start_unix_s": start, "interval_s": 1.0,
            "requests": requests, "rate_per_s": requests as f64, "errors": 0, "no_response": 0, "abandoned": 0,
            "ttfb_us": times(100.0), "ttlb_us": times(150.0),
            "by_command": [], "top_statements": [],
            "capture": {"received": 10, "dropped": 0, "if_dropped": 0}, "valid": true
        })
    }

    fn para_with(sec: &Section, needle: &str) -> String {
        sec.blocks
            .iter()
            .find_map(|b| match b {
                Block::Para(t) if t.contains(needle) => Some(t.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no paragraph with {needle:?}: {:?}", sec.blocks))
    }

    #[test]
    fn a_lone_window_says_it_has_no_noise_estimate() {
        let sec = Rt
            .section(&interval("interval", 1.0, 500, Some(2350.0)), "rt.json")
            .unwrap();
        let p = para_with(&sec, "One window");
        assert!(
            p.contains("One window of 1 s") && p.contains("no noise estimate"),
            "{p}"
        );
        assert!(
            sec.windows.is_empty(),
            "a lone interval has no windows to compare"
        );
    }

    #[test]
    fn a_run_of_windows_shows_the_spread_of_its_numbers() {
        let iv: Vec<_> = (0..4)
            .map(|i| interval("interval", i as f64, 100 + i, Some(1000.0 * (i + 1) as f64)))
            .collect();
        let total = interval("total", 0.0, 406, Some(4000.0));
        let doc = serde_json::json!({"schema": "spinscope.rt/1", "kind": "lines", "intervals": iv, "total": total});
        let sec = Rt.section(&doc, "rt.jsonl").unwrap();
        let p = para_with(&sec, "Over the windows");
        assert!(
            p.contains("time to last byte p99: median 2.500 ms") && p.contains("4 windows of 1 s"),
            "{p}"
        );
        assert_eq!(sec.windows.len(), 2);
    }

    #[test]
    fn a_total_without_response_times_is_left_out() {
        let doc = interval("interval", 1.0, 0, None);
        let e = Rt.section(&doc, "rt.json").unwrap_err();
        assert!(e.contains("no \"total\" with response times"), "{e}");
    }
}
