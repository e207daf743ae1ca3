//! The trigger language of `watch` and its evaluation over the sampled series. Pure.
//!
//! ```text
//! trigger  := series OP value [for DURATION] [cooldown DURATION]
//! series   := threads_running | threads_connected | qps | row_lock_waits | rtt_ms | running
//!           | rt_p50_ms | rt_p95_ms | rt_p99_ms       (also rt.p99, p99, ...)
//! OP       := > | >= | < | <=
//! value    := NUMBER [us|ms|s] | NUMBER*cores | cores | NUMBER% of DURATION AGG
//! AGG      := median | mean | min | max      (of the series over the DURATION before)
//! DURATION := NUMBER ms | NUMBER s | NUMBER m
//! ```
//!
//! The `rt_*` series are the server's response times (time to last byte) from packets, over
//! the requests answered in each sample's tick (`crate::rt` on the server's host); a tick in
//! which nothing was answered has no value: it neither holds nor breaks a condition, unless
//! such ticks last over [`NO_VALUE_BREAK_MS`]. A unit after the number (`5ms`) is allowed for
//! them only.
//!
//! `for` is how long the condition must hold without a break (default: one sample);
//! `cooldown` is how long the trigger stays quiet after it fired or after another trigger of the
//! same server started a capture (default: `--cooldown`).
//! After a cooldown the condition must also have been false once before it fires again, so one
//! long pile-up makes one capture.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The grammar, printed with every parse error.
pub const GRAMMAR: &str = "\
trigger  := series OP value [for DURATION] [cooldown DURATION]
series   := threads_running | threads_connected | qps | row_lock_waits | rtt_ms | running
          | rt_p50_ms | rt_p95_ms | rt_p99_ms   (server response time from packets; also rt.p99, p99)
OP       := > | >= | < | <=
value    := NUMBER [us|ms|s] | NUMBER*cores | cores | NUMBER% of DURATION AGG   (units: rt_* only)
AGG      := median | mean | min | max   (of the series over the DURATION before the sample)
DURATION := NUMBER ms | NUMBER s | NUMBER m
examples: 'threads_running > 2*cores for 50ms'  'qps < 50% of 10s median for 1s'
          'row_lock_waits >= 5 cooldown 10m'  'rt_p99_ms > 5 for 200ms'  'p99 > 5ms for 200ms'";

/// A run of ticks without a value (no request answered) longer than this breaks a hold.
pub const NO_VALUE_BREAK_MS: f64 = 1000.0;

/// The default trigger: a Threads_running pile-up above twice the cores for 50 ms, which a
/// once-per-second monitor averages away (SQL; every server).
pub const DEFAULT_TRIGGER: &str = "threads_running > 2*cores for 50ms";

/// The default trigger beside [`DEFAULT_TRIGGER`] on a local server: the server's threads in
/// state R from /proc at `--hz` (free to the server, and never backed off).
pub const DEFAULT_PROC_TRIGGER: &str = "running > 2*cores for 50ms";

/// A burst ends once no trigger's condition has held for this long: one burst, one count,
/// however its series flickers around the threshold.
pub const BURST_END_MS: f64 = 500.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Series {
    ThreadsRunning,
    ThreadsConnected,
    Qps,
    RowLockWaits,
    RttMs,
    /// The server's threads in state R, counted from /proc (local servers).
    Running,
    RtP50Ms,
    RtP95Ms,
    RtP99Ms,
}

impl Series {
    pub const ALL: [(&'static str, Series); 9] = [
        ("threads_running", Series::ThreadsRunning),
        ("threads_connected", Series::ThreadsConnected),
        ("qps", Series::Qps),
        ("row_lock_waits", Series::RowLockWaits),
        ("rtt_ms", Series::RttMs),
        ("running", Series::Running),
        ("rt_p50_ms", Series::RtP50Ms),
        ("rt_p95_ms", Series::RtP95Ms),
        ("rt_p99_ms", Series::RtP99Ms),
    ];
    /// Other spellings of the rt series (the issue's `p99 > 5ms`).
    const ALIASES: [(&'static str, Series); 6] = [
        ("rt.p50", Series::RtP50Ms),
        ("rt.p95", Series::RtP95Ms),
        ("rt.p99", Series::RtP99Ms),
        ("p50", Series::RtP50Ms),
        ("p95", Series::RtP95Ms),
        ("p99", Series::RtP99Ms),
    ];
    /// A response-time series: needs the rt capture on the server's host.
    pub fn is_rt(self) -> bool {
        matches!(self, Series::RtP50Ms | Series::RtP95Ms | Series::RtP99Ms)
    }
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("?", |(n, _)| n)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Agg {
    Median,
    Mean,
    Min,
    Max,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    Number(f64),
    /// NUMBER times the core count.
    Cores(f64),
    /// Percent of an aggregate of the series over the window before the sample.
    Relative {
        pct: f64,
        window_ms: f64,
        agg: Agg,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trigger {
    /// The text as given (normalised spaces).
    pub text: String,
    pub series: Series,
    pub op: Op,
    pub value: Value,
    pub for_ms: f64,
    pub cooldown_ms: Option<f64>,
}

fn bad(text: &str, why: &str) -> Error {
    Error::bad_input(format!(
        "--trigger {text:?}: {why}; the grammar is:\n{GRAMMAR}"
    ))
}

/// Split "2*cores", "50%", "50ms" into tokens a parser can walk.
fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, out: &mut Vec<String>| {
        if !cur.is_empty() {
            out.push(std::mem::take(cur));
        }
    };
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            flush(&mut cur, &mut out);
        } else if c == '*' || c == '%' {
            flush(&mut cur, &mut out);
            out.push(c.to_string());
        } else if c == '>' || c == '<' {
            flush(&mut cur, &mut out);
            if cs.get(i + 1) == Some(&'=') {
                out.push(format!("{c}="));
                i += 1;
            } else {
                out.push(c.to_string());
            }
        } else {
            // A number followed by letters ("50ms") splits where the letters start.
            if c.is_ascii_alphabetic()
                && !cur.is_empty()
                && cur.chars().all(|d| d.is_ascii_digit() || d == '.')
            {
                flush(&mut cur, &mut out);
            }
            cur.push(c);
        }
        i += 1;
    }
    flush(&mut cur, &mut out);
    out
}

fn number(tok: Option<&String>, text: &str, what: &str) -> Result<f64> {
    let t = tok.ok_or_else(|| bad(text, &format!("{what} is missing")))?;
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(bad(
            text,
            &format!("{what}: {t:?} is not a non-negative number"),
        )),
    }
}

/// `NUMBER UNIT` starting at `toks[*i]`, in milliseconds.
fn duration(toks: &[String], i: &mut usize, text: &str, what: &str) -> Result<f64> {
    let n = number(toks.get(*i), text, what)?;
    let unit = toks
        .get(*i + 1)
        .ok_or_else(|| bad(text, &format!("{what}: the unit (ms, s or m) is missing")))?;
    let ms = match unit.as_str() {
        "ms" => n,
        "s" => n * 1e3,
        "m" | "min" => n * 60e3,
        u => return Err(bad(text, &format!("{what}: unit {u:?} is not ms, s or m"))),
    };
    *i += 2;
    if ms > 24.0 * 3600e3 {
        return Err(bad(text, &format!("{what}: longer than a day")));
    }
    Ok(ms)
}

/// Parse one trigger; errors are bad input carrying the grammar.
pub fn parse(text: &str) -> Result<Trigger> {
    let norm = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let toks = tokens(&norm.to_ascii_lowercase());
    let t = &norm;
    let series = match toks.first() {
        None => return Err(bad(t, "empty trigger")),
        Some(s) => Series::ALL
            .iter()
            .chain(Series::ALIASES.iter())
            .find(|(n, _)| n == s)
            .map(|(_, v)| *v)
            .ok_or_else(|| bad(t, &format!("unknown series {s:?}")))?,
    };
    let op = match toks.get(1).map(String::as_str) {
        Some(">") => Op::Gt,
        Some(">=") => Op::Ge,
        Some("<") => Op::Lt,
        Some("<=") => Op::Le,
        Some(o) => return Err(bad(t, &format!("{o:?} is not one of > >= < <="))),
        None => return Err(bad(t, "the comparison (> >= < <=) is missing")),
    };
    let mut i = 2;
    let value = if toks.get(i).map(String::as_str) == Some("cores") {
        i += 1;
        Value::Cores(1.0)
    } else {
        let n = number(toks.get(i), t, "the value")?;
        i += 1;
        match toks.get(i).map(String::as_str) {
            Some("*") => {
                if toks.get(i + 1).map(String::as_str) != Some("cores") {
                    return Err(bad(t, "only NUMBER*cores multiplies"));
                }
                i += 2;
                Value::Cores(n)
            }
            Some("%") => {
                if toks.get(i + 1).map(String::as_str) != Some("of") {
                    return Err(bad(t, "a percentage reads NUMBER% of DURATION AGG"));
                }
                i += 2;
                let window_ms = duration(&toks, &mut i, t, "the window after 'of'")?;
                if window_ms <= 0.0 {
                    return Err(bad(t, "the window after 'of' must be longer than 0"));
                }
                let agg = match toks.get(i).map(String::as_str) {
                    Some("median") => Agg::Median,
                    Some("mean") | Some("avg") => Agg::Mean,
                    Some("min") => Agg::Min,
                    Some("max") => Agg::Max,
                    Some(a) => {
                        return Err(bad(t, &format!("{a:?} is not median, mean, min or max")))
                    }
                    None => {
                        return Err(bad(t, "the aggregate (median, mean, min, max) is missing"))
                    }
                };
                i += 1;
                Value::Relative {
                    pct: n,
                    window_ms,
                    agg,
                }
            }
            Some(u @ ("us" | "ms" | "s")) => {
                if !series.is_rt() {
                    return Err(bad(
                        t,
                        &format!(
                            "a unit ({u}) is for the rt_* series only; {} takes a plain number",
                            series.name()
                        ),
                    ));
                }
                i += 1;
                Value::Number(match u {
                    "us" => n / 1e3,
                    "s" => n * 1e3,
                    _ => n,
                })
            }
            _ => Value::Number(n),
        }
    };
    let mut for_ms = 0.0;
    let mut cooldown_ms = None;
    while let Some(k) = toks.get(i) {
        i += 1;
        match k.as_str() {
            "for" => for_ms = duration(&toks, &mut i, t, "'for'")?,
            "cooldown" => cooldown_ms = Some(duration(&toks, &mut i, t, "'cooldown'")?),
            other => return Err(bad(t, &format!("unexpected {other:?}"))),
        }
    }
    Ok(Trigger {
        text: norm,
        series,
        op,
        value,
        for_ms,
        cooldown_ms,
    })
}

/// One point of the series the triggers read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub t_ms: f64,
    pub value: f64,
}

fn aggregate(v: &mut [f64], agg: Agg) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    Some(match agg {
        Agg::Mean => v.iter().sum::<f64>() / v.len() as f64,
        Agg::Min => v.iter().copied().fold(f64::INFINITY, f64::min),
        Agg::Max => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Agg::Median => {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        }
    })
}

/// A trigger that fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fired {
    pub trigger: String,
    /// When the condition started to hold (ms on the watch clock).
    pub since_ms: f64,
    /// When it fired.
    pub t_ms: f64,
    pub value: f64,
    pub threshold: f64,
}

/// The running state of one trigger on one server.
#[derive(Debug, Clone)]
pub struct Evaluator {
    pub trigger: Trigger,
    cooldown_ms: f64,
    since: Option<f64>,
    last_fired: Option<f64>,
    /// False until the condition was seen false after a firing.
    rearmed: bool,
    baseline: Option<(f64, f64)>,
    /// Start of the current run of points without a value (NaN: nothing answered).
    no_value_since: Option<f64>,
    /// The condition held for its `for` time at the last point (cooldown aside).
    held_long: bool,
}

impl Evaluator {
    /// Start this trigger's cooldown at `t_ms` (a capture began, whichever trigger fired it); it
    /// fires again only after the cooldown and once its condition has been false.
    pub fn quiet_from(&mut self, t_ms: f64) {
        if self.last_fired.is_none_or(|f| f < t_ms) {
            self.last_fired = Some(t_ms);
        }
        self.rearmed = false;
    }

    pub fn new(trigger: Trigger, default_cooldown_ms: f64) -> Evaluator {
        Evaluator {
            cooldown_ms: trigger.cooldown_ms.unwrap_or(default_cooldown_ms),
            trigger,
            since: None,
            last_fired: None,
            rearmed: true,
            baseline: None,
            no_value_since: None,
            held_long: false,
        }
    }

    /// Whether the condition has held for its `for` time at the last point, cooling down or
    /// not: what the burst count reads.
    pub fn holding(&self) -> bool {
        self.held_long
    }

    /// The threshold at `now_ms`; `history` yields the series before the sample (oldest
    /// first) and is read only for relative values, at most every 100 ms.
    fn threshold<'a>(
        &mut self,
        now_ms: f64,
        cores: f64,
        history: impl FnOnce() -> Box<dyn Iterator<Item = Point> + 'a>,
    ) -> Option<f64> {
        match self.trigger.value {
            Value::Number(n) => Some(n),
            Value::Cores(k) => Some(k * cores),
            Value::Relative {
                pct,
                window_ms,
                agg,
            } => {
                if let Some((at, v)) = self.baseline {
                    if now_ms - at < 100.0 && now_ms >= at {
                        return Some(v);
                    }
                }
                let from = now_ms - window_ms;
                let mut v: Vec<f64> = history()
                    .filter(|p| p.t_ms >= from && p.t_ms < now_ms && !p.value.is_nan())
                    .map(|p| p.value)
                    .collect();
                // Not enough history yet (less than half the window): no verdict.
                let span_ok = v.len() >= 2;
                let b = aggregate(&mut v, agg).filter(|_| span_ok)? * pct / 100.0;
                self.baseline = Some((now_ms, b));
                Some(b)
            }
        }
    }

    /// Feed one new point; returns the firing, if any. `history` gives earlier points.
    pub fn step<'a>(
        &mut self,
        p: Point,
        cores: f64,
        history: impl FnOnce() -> Box<dyn Iterator<Item = Point> + 'a>,
    ) -> Option<Fired> {
        if p.value.is_nan() {
            let from = *self.no_value_since.get_or_insert(p.t_ms);
            if p.t_ms - from > NO_VALUE_BREAK_MS {
                self.since = None;
                self.held_long = false;
            }
            return None;
        }
        self.no_value_since = None;
        let th = self.threshold(p.t_ms, cores, history);
        let holds = th.is_some_and(|th| match self.trigger.op {
            Op::Gt => p.value > th,
            Op::Ge => p.value >= th,
            Op::Lt => p.value < th,
            Op::Le => p.value <= th,
        });
        if !holds {
            self.since = None;
            self.rearmed = true;
            self.held_long = false;
            return None;
        }
        let since = *self.since.get_or_insert(p.t_ms);
        self.held_long = p.t_ms - since >= self.trigger.for_ms;
        if !self.held_long || !self.rearmed {
            return None;
        }
        if self
            .last_fired
            .is_some_and(|f| p.t_ms - f < self.cooldown_ms)
        {
            return None;
        }
        self.last_fired = Some(p.t_ms);
        self.rearmed = false;
        Some(Fired {
            trigger: self.trigger.text.clone(),
            since_ms: since,
            t_ms: p.t_ms,
            value: p.value,
            threshold: th.unwrap_or(0.0),
        })
    }
}

/// What [`Bursts::step`] saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BurstEvent {
    Started,
    /// The burst ended; it lasted this long (first to last point with a condition held).
    Ended {
        duration_ms: f64,
    },
}

/// Counts bursts: a burst starts when any trigger's condition has held for its `for` time and
/// ends when none has for [`BURST_END_MS`] (hysteresis on the end), so one pile-up whose series
/// dips below the threshold and back counts once. Independent of cooldowns and capture limits.
#[derive(Debug, Clone, Default)]
pub struct Bursts {
    from: Option<f64>,
    last_active_ms: f64,
    pub count: u64,
}

impl Bursts {
    pub fn step(&mut self, t_ms: f64, active: bool) -> Option<BurstEvent> {
        match (self.from, active) {
            (None, true) => {
                self.from = Some(t_ms);
                self.last_active_ms = t_ms;
                self.count += 1;
                Some(BurstEvent::Started)
            }
            (Some(_), true) => {
                self.last_active_ms = t_ms;
                None
            }
            (Some(f), false) if t_ms - self.last_active_ms > BURST_END_MS => {
                self.from = None;
                Some(BurstEvent::Ended {
                    duration_ms: self.last_active_ms - f,
                })
            }
            _ => None,
        }
    }

    /// End a burst in progress now (the connection ended): its duration.
    pub fn end(&mut self) -> Option<f64> {
        self.from.take().map(|f| self.last_active_ms - f)
    }

    /// Whether a burst is in progress.
    pub fn active(&self) -> bool {
        self.from.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none<'a>() -> Box<dyn Iterator<Item = Point> + 'a> {
        Box::new(std::iter::empty())
    }

    #[test]
    fn parses_the_documented_examples() {
        let t = parse("threads_running > 2*cores for 50ms").unwrap();
        assert_eq!(t.series, Series::ThreadsRunning);
        assert_eq!(t.op, Op::Gt);
        assert_eq!(t.value, Value::Cores(2.0));
        assert_eq!(t.for_ms, 50.0);
        let t = parse("qps < 50% of 10s median for 1s").unwrap();
        assert_eq!(
            t.value,
            Value::Relative {
                pct: 50.0,
                window_ms: 10_000.0,
                agg: Agg::Median
            }
        );
        assert_eq!(t.for_ms, 1000.0);
        let t = parse("  row_lock_waits   >= 5 cooldown 10m").unwrap();
        assert_eq!(t.cooldown_ms, Some(600_000.0));
        assert_eq!(t.text, "row_lock_waits >= 5 cooldown 10m");
        assert_eq!(
            parse("threads_running>=cores").unwrap().value,
            Value::Cores(1.0)
        );
        assert_eq!(parse(DEFAULT_TRIGGER).unwrap().for_ms, 50.0);
    }

    #[test]
    fn rt_series_in_both_spellings_with_units() {
        let t = parse("rt_p99_ms > 5 for 200ms").unwrap();
        assert_eq!(
            (t.series, t.value, t.for_ms),
            (Series::RtP99Ms, Value::Number(5.0), 200.0)
        );
        let t = parse("p99 > 5ms for 200ms").unwrap();
        assert_eq!(
            (t.series, t.value, t.for_ms),
            (Series::RtP99Ms, Value::Number(5.0), 200.0)
        );
        assert_eq!(parse("rt.p50 >= 800us").unwrap().value, Value::Number(0.8));
        assert_eq!(parse("RT.P95 > 1.5s").unwrap().value, Value::Number(1500.0));
        assert_eq!(parse("rt_p50_ms > 2").unwrap().series, Series::RtP50Ms);
        assert!(Series::RtP95Ms.is_rt() && !Series::RttMs.is_rt());
        let e = parse("qps > 5ms").unwrap_err().to_string();
        assert!(e.contains("rt_* series only"), "{e}");
    }

    #[test]
    fn ticks_without_an_answer_neither_hold_nor_break_until_a_second_passes() {
        let mut ev = Evaluator::new(parse("rt_p99_ms > 5 for 200ms").unwrap(), 60_000.0);
        let pt = |t: f64, v: f64| Point { t_ms: t, value: v };
        // Slow answers every third 10 ms tick, nothing in between: fires at 200 ms held.
        let mut fired = None;
        for i in 0..40 {
            let t = i as f64 * 10.0;
            let v = if i % 3 == 0 { 50.0 } else { f64::NAN };
            if let Some(f) = ev.step(pt(t, v), 2.0, none) {
                fired = Some(f);
                break;
            }
        }
        let f = fired.expect("fired");
        assert_eq!((f.since_ms, f.t_ms), (0.0, 210.0));
        // A slow answer after more than a second without any starts a new hold.
        let mut ev = Evaluator::new(parse("rt_p99_ms > 5 for 200ms").unwrap(), 60_000.0);
        assert!(ev.step(pt(0.0, 50.0), 2.0, none).is_none());
        for i in 1..=150 {
            assert!(ev.step(pt(i as f64 * 10.0, f64::NAN), 2.0, none).is_none());
        }
        assert!(
            ev.step(pt(1510.0, 50.0), 2.0, none).is_none(),
            "the old hold survived the gap"
        );
        assert!(ev.step(pt(1720.0, 50.0), 2.0, none).is_some());
        // A fast answer breaks the hold.
        let mut ev = Evaluator::new(parse("p99 > 5ms for 200ms").unwrap(), 60_000.0);
        assert!(ev.step(pt(0.0, 50.0), 2.0, none).is_none());
        assert!(ev.step(pt(100.0, 1.0), 2.0, none).is_none());
        assert!(ev.step(pt(210.0, 50.0), 2.0, none).is_none());
    }

    #[test]
    fn errors_name_the_problem_and_carry_the_grammar() {
        for (text, needle) in [
            ("", "empty"),
            ("threads > 3", "unknown series"),
            ("qps = 3", "is not one of"),
            ("qps >", "the value is missing"),
            ("qps > 3 for 5", "unit"),
            ("qps > 3 for 5 hours", "unit \"hours\""),
            ("qps < 50% 10s median", "NUMBER% of"),
            ("qps < 50% of 10s", "aggregate"),
            ("qps > 2*threads", "NUMBER*cores"),
            ("qps > -1", "non-negative"),
            ("qps > 1 banana", "unexpected"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
            assert!(e.contains("trigger  := series"), "{e}");
        }
    }

    #[test]
    fn fires_after_the_hold_time_then_keeps_quiet_until_rearmed_and_cooled() {
        let mut ev = Evaluator::new(parse("threads_running > 4 for 30ms").unwrap(), 1000.0);
        let mut fired = vec![];
        // 10 ms samples: 0..100 ms low, 100..300 high, 300..400 low, 400..600 high (within
        // the cooldown), 1400..1600 high (after it).
        for i in 0..200 {
            let t = i as f64 * 10.0;
            let high = (100.0..300.0).contains(&t)
                || (400.0..600.0).contains(&t)
                || (1400.0..1600.0).contains(&t);
            let p = Point {
                t_ms: t,
                value: if high { 9.0 } else { 1.0 },
            };
            if let Some(f) = ev.step(p, 2.0, none) {
                fired.push(f);
            }
        }
        assert_eq!(fired.len(), 2, "{fired:?}");
        assert_eq!(fired[0].t_ms, 130.0);
        assert_eq!(fired[0].since_ms, 100.0);
        assert_eq!(fired[1].t_ms, 1430.0);
    }

    #[test]
    fn a_capture_by_another_trigger_starts_this_ones_cooldown() {
        // Quieted at 100 ms (another trigger's capture), cooldown 1000 ms: the high spell at
        // 400..600 is inside it, the one at 1400..1600 fires.
        let mut ev = Evaluator::new(parse("running > 4 for 30ms").unwrap(), 1000.0);
        ev.quiet_from(100.0);
        let mut fired = vec![];
        for i in 0..200 {
            let t = i as f64 * 10.0;
            let high = (400.0..600.0).contains(&t) || (1400.0..1600.0).contains(&t);
            let p = Point {
                t_ms: t,
                value: if high { 9.0 } else { 1.0 },
            };
            if let Some(f) = ev.step(p, 2.0, none) {
                fired.push(f);
            }
        }
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert_eq!(fired[0].t_ms, 1430.0);
    }

    #[test]
    fn relative_threshold_reads_the_window_before() {
        let mut ev = Evaluator::new(parse("qps < 50% of 1s median").unwrap(), 0.0);
        let hist: Vec<Point> = (0..100)
            .map(|i| Point {
                t_ms: i as f64 * 10.0,
                value: 1000.0,
            })
            .collect();
        let h = || -> Box<dyn Iterator<Item = Point>> { Box::new(hist.iter().copied()) };
        assert!(ev
            .step(
                Point {
                    t_ms: 1000.0,
                    value: 600.0
                },
                2.0,
                h
            )
            .is_none());
        let f = ev
            .step(
                Point {
                    t_ms: 1010.0,
                    value: 400.0,
                },
                2.0,
                h,
            )
            .unwrap();
        assert_eq!(f.threshold, 500.0);
        // Without history there is no verdict.
        let mut ev = Evaluator::new(parse("qps < 50% of 1s median").unwrap(), 0.0);
        assert!(ev
            .step(
                Point {
                    t_ms: 5.0,
                    value: 0.0
                },
                2.0,
                none
            )
            .is_none());
    }

    #[test]
    fn bursts_count_once_each_through_flicker_and_cooldown() {
        // Six 300 ms bursts every 5 s sampled at 100 Hz, each dipping under the threshold for
        // 50 ms in its middle; a cooldown longer than the run: one firing, six bursts.
        let mut ev = Evaluator::new(parse("running > 4 for 50ms").unwrap(), 60_000.0);
        let mut b = Bursts::default();
        let (mut fired, mut ended) = (0, vec![]);
        for i in 0..3000 {
            let t = i as f64 * 10.0;
            let into = t % 5000.0;
            let high = into < 300.0 && !(120.0..170.0).contains(&into);
            let p = Point {
                t_ms: t,
                value: if high { 9.0 } else { 1.0 },
            };
            fired += usize::from(ev.step(p, 2.0, none).is_some());
            if let Some(BurstEvent::Ended { duration_ms }) = b.step(t, ev.holding()) {
                ended.push(duration_ms);
            }
        }
        assert_eq!(fired, 1);
        assert_eq!(b.count, 6);
        assert_eq!(ended.len(), 6, "{ended:?}");
        // Held from 50 ms in to the last high sample at 290 ms.
        assert!(
            ended.iter().all(|d| (230.0..=250.0).contains(d)),
            "{ended:?}"
        );
        // Two pile-ups 600 ms apart are two bursts; 400 ms apart, one.
        let mut b = Bursts::default();
        for (t, a) in [(0.0, true), (100.0, false), (700.0, false), (701.0, true)] {
            b.step(t, a);
        }
        assert_eq!(b.count, 2);
        let mut b = Bursts::default();
        for (t, a) in [(0.0, true), (100.0, false), (400.0, false), (401.0, true)] {
            b.step(t, a);
        }
        assert_eq!(b.count, 1);
        assert!(b.active());
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,60}") {
            let _ = parse(&s);
        }

        #[test]
        fn parse_never_panics_on_near_grammar(
            a in proptest::sample::select(vec!["threads_running", "qps", "rtt_ms", "x", ""]),
            o in proptest::sample::select(vec![">", ">=", "<", "<=", "=", ""]),
            v in "[0-9.%*a-z ]{0,20}",
            r in "[0-9a-z ]{0,20}",
        ) {
            let _ = parse(&format!("{a} {o} {v} {r}"));
        }
    }
}
