//! Every burst watch sees and what became of it: captured (a capture fired during it), held in
//! a capture's window (its samples are in a capture: that capture's after window, or a later
//! capture's history), or skipped and why (a cooldown whose capture's window ended before it and
//! no later capture's history reaching back to it; `--max-captures`; the disk floor; a capture
//! directory that could not be made). Pure: `watch::server` feeds it one tick at a time with
//! what the triggers did at that tick.
//!
//! Memory is bounded: bursts waiting for a later capture are at most those of the last
//! `--history` seconds; decided ones leave only their counts and the last [`RECENT`].

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::trigger::{BurstEvent, Bursts};

/// Decided bursts kept for the capture documents (those inside a capture's window).
pub const RECENT: usize = 256;

/// Why a burst is in no capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// In the cooldown of a capture, after its window, and no later capture's history holds it.
    Cooldown,
    /// `--max-captures` was reached.
    MaxCaptures,
    /// Less than `--min-free-disk` was free.
    DiskLimit,
    /// The capture directory could not be made.
    CaptureFailed,
    /// No trigger fired: one had fired (its capture refused) and was cooling down, or its
    /// condition had not been false since it last fired.
    NoFiring,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Cooldown => "cooldown",
            Reason::MaxCaptures => "max_captures",
            Reason::DiskLimit => "disk_limit",
            Reason::CaptureFailed => "capture_failed",
            Reason::NoFiring => "no_firing",
        }
    }
}

/// What became of a burst.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// A capture fired during the burst (its directory).
    Captured {
        capture: String,
    },
    /// The burst's samples are in this capture (its after window or its history).
    InCapture {
        capture: String,
    },
    Skipped {
        reason: Reason,
        why: String,
    },
}

/// What the triggers did at a tick.
#[derive(Debug, Clone, PartialEq)]
pub enum Fire {
    /// A capture began: its directory and the window its samples cover (watch clock).
    Captured {
        dir: String,
        from_ms: f64,
        to_ms: f64,
    },
    /// A trigger fired while a capture's after window was running: that capture covers it.
    DuringCapture { dir: String },
    /// A trigger fired and its capture was refused.
    Refused { reason: Reason, why: String },
}

/// One burst.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its first sample with a condition held (watch clock).
    pub start_ms: f64,
    /// First to last sample with a condition held (so far, while open).
    pub duration_ms: f64,
    pub peak_threads_running: u32,
    /// Peak of the /proc count (local servers).
    pub peak_running: Option<u32>,
    /// It was already going on at the first sample of a connection: it began earlier.
    pub at_first_sample: bool,
    pub outcome: Option<Outcome>,
}

/// Bursts by outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub bursts: u64,
    pub captured: u64,
    pub in_capture: u64,
    /// Skipped bursts by [`Reason::name`].
    pub skipped: BTreeMap<String, u64>,
}

impl Counts {
    pub fn add(&mut self, o: &Outcome) {
        self.bursts += 1;
        match o {
            Outcome::Captured { .. } => self.captured += 1,
            Outcome::InCapture { .. } => self.in_capture += 1,
            Outcome::Skipped { reason, .. } => {
                *self.skipped.entry(reason.name().into()).or_default() += 1
            }
        }
    }
    pub fn merge(&mut self, o: &Counts) {
        self.bursts += o.bursts;
        self.captured += o.captured;
        self.in_capture += o.in_capture;
        for (k, v) in &o.skipped {
            *self.skipped.entry(k.clone()).or_default() += v;
        }
    }
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }
    /// `13 bursts: 4 captured, 8 in a capture's window, 1 skipped (1 cooldown)`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{} burst(s): {} captured, {} in a capture's window, {} skipped",
            self.bursts,
            self.captured,
            self.in_capture,
            self.skipped_total()
        );
        if !self.skipped.is_empty() {
            let why: Vec<String> = self
                .skipped
                .iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect();
            s.push_str(&format!(" ({})", why.join(", ")));
        }
        s
    }
}

/// A burst as written to `watch.log` and `capture.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurstDoc {
    /// Its first sample with a condition held, UTC on the server's clock.
    pub start: String,
    pub start_unix_ms: f64,
    pub duration_ms: f64,
    pub peak_threads_running: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_running: Option<u32>,
    /// Already going on at a connection's first sample: it began earlier than `start`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_first_sample: bool,
    /// `captured`, `in_capture`, `skipped`, or `open` (not decided yet).
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl Entry {
    /// The document of this burst; `unix_ms` maps the watch clock to the server's.
    pub fn doc(&self, unix_ms: impl Fn(f64) -> f64) -> BurstDoc {
        let at = unix_ms(self.start_ms);
        let (outcome, capture, reason, why) = match &self.outcome {
            None => ("open", None, None, None),
            Some(Outcome::Captured { capture }) => ("captured", Some(capture.clone()), None, None),
            Some(Outcome::InCapture { capture }) => {
                ("in_capture", Some(capture.clone()), None, None)
            }
            Some(Outcome::Skipped { reason, why }) => {
                ("skipped", None, Some(*reason), Some(why.clone()))
            }
        };
        BurstDoc {
            start: super::utc(at),
            start_unix_ms: at.round(),
            duration_ms: self.duration_ms.round(),
            peak_threads_running: self.peak_threads_running,
            peak_running: self.peak_running,
            at_first_sample: self.at_first_sample,
            outcome: outcome.into(),
            capture,
            reason,
            why,
        }
    }
}

/// A capture's window on the watch clock.
#[derive(Debug, Clone)]
struct Window {
    dir: String,
    from_ms: f64,
    to_ms: f64,
}

/// The last firing: when, and its capture or why it was refused.
#[derive(Debug, Clone)]
struct LastFire {
    t_ms: f64,
    capture: Result<String, (Reason, String)>,
}

/// The burst ledger of one server.
#[derive(Debug)]
pub struct Ledger {
    bursts: Bursts,
    history_ms: f64,
    cooldown_ms: f64,
    open: Option<Entry>,
    /// Ended bursts in no capture yet, which a capture within `history_ms` may still hold.
    waiting: VecDeque<Entry>,
    windows: VecDeque<Window>,
    last_fire: Option<LastFire>,
    first_sample: bool,
    pub counts: Counts,
    /// The last decided bursts (at most [`RECENT`]).
    pub recent: VecDeque<Entry>,
}

/// What a tick did to the ledger.
#[derive(Debug, Default)]
pub struct Step {
    pub event: Option<BurstEvent>,
    /// Bursts whose outcome became known at this tick, oldest first.
    pub decided: Vec<Entry>,
}

impl Ledger {
    /// `cooldown_ms`: the longest cooldown of the server's triggers.
    pub fn new(history_ms: f64, cooldown_ms: f64) -> Ledger {
        Ledger {
            bursts: Bursts::default(),
            history_ms,
            cooldown_ms,
            open: None,
            waiting: VecDeque::new(),
            windows: VecDeque::new(),
            last_fire: None,
            first_sample: true,
            counts: Counts::default(),
            recent: VecDeque::new(),
        }
    }

    /// The next tick is the first of a connection.
    pub fn session_started(&mut self) {
        self.first_sample = true;
    }

    /// One tick: whether any trigger's condition held, the sample's values (`threads_running`
    /// None when held from an earlier read), and what the triggers did.
    pub fn step(
        &mut self,
        t_ms: f64,
        active: bool,
        threads_running: Option<u32>,
        running: Option<u32>,
        fire: Option<Fire>,
    ) -> Step {
        let first = std::mem::replace(&mut self.first_sample, false);
        let mut out = Step::default();
        let event = self.bursts.step(t_ms, active);
        if event == Some(BurstEvent::Started) {
            self.open = Some(Entry {
                start_ms: t_ms,
                duration_ms: 0.0,
                peak_threads_running: 0,
                peak_running: None,
                at_first_sample: first,
                outcome: None,
            });
        }
        if let Some(e) = self.open.as_mut().filter(|_| active) {
            e.duration_ms = t_ms - e.start_ms;
            e.peak_threads_running = e.peak_threads_running.max(threads_running.unwrap_or(0));
            if let Some(r) = running {
                e.peak_running = Some(e.peak_running.unwrap_or(0).max(r));
            }
        }
        if let Some(f) = fire {
            self.fired(t_ms, f, &mut out.decided);
        }
        if let Some(BurstEvent::Ended { duration_ms }) = event {
            if let Some(mut e) = self.open.take() {
                e.duration_ms = duration_ms;
                self.ended(e, &mut out.decided);
            }
        }
        self.expire(t_ms, &mut out.decided);
        out.event = event;
        out
    }

    /// The connection ended (or watch stops) at `t_ms`: an open burst ends with its last held
    /// sample.
    pub fn session_ended(&mut self, t_ms: f64) -> Step {
        let mut out = Step::default();
        if let Some(d) = self.bursts.end() {
            out.event = Some(BurstEvent::Ended { duration_ms: d });
        }
        if let Some(e) = self.open.take() {
            self.ended(e, &mut out.decided);
        }
        self.expire(t_ms, &mut out.decided);
        out
    }

    /// watch stops: every burst decided (those waiting for a later capture are skipped).
    pub fn finish(&mut self, t_ms: f64) -> Vec<Entry> {
        let mut out = self.session_ended(t_ms).decided;
        self.expire(f64::INFINITY, &mut out);
        out
    }

    /// The bursts whose start lies in `[from_ms, to_ms]`: decided ones and the open one.
    pub fn within(&self, from_ms: f64, to_ms: f64) -> Vec<Entry> {
        let inside = |e: &&Entry| e.start_ms >= from_ms && e.start_ms <= to_ms;
        let mut v: Vec<Entry> = self
            .recent
            .iter()
            .chain(self.waiting.iter())
            .chain(self.open.iter())
            .filter(inside)
            .cloned()
            .collect();
        v.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
        v
    }

    fn fired(&mut self, t_ms: f64, f: Fire, decided: &mut Vec<Entry>) {
        match f {
            Fire::Captured {
                dir,
                from_ms,
                to_ms,
            } => {
                if let Some(e) = self.open.as_mut() {
                    e.outcome = Some(Outcome::Captured {
                        capture: dir.clone(),
                    });
                }
                // Bursts waiting in the ring are in this capture's history.
                let (held, rest): (Vec<Entry>, Vec<Entry>) = self
                    .waiting
                    .drain(..)
                    .partition(|e| e.start_ms >= from_ms && e.start_ms <= to_ms);
                self.waiting = rest.into();
                for mut e in held {
                    e.outcome = Some(Outcome::InCapture {
                        capture: dir.clone(),
                    });
                    self.decide(e, decided);
                }
                self.windows.push_back(Window {
                    dir: dir.clone(),
                    from_ms,
                    to_ms,
                });
                while self.windows.len() > 8 {
                    self.windows.pop_front();
                }
                self.last_fire = Some(LastFire {
                    t_ms,
                    capture: Ok(dir),
                });
            }
            Fire::DuringCapture { dir } => {
                if let Some(e) = self.open.as_mut() {
                    if !matches!(e.outcome, Some(Outcome::Captured { .. })) {
                        e.outcome = Some(Outcome::InCapture { capture: dir });
                    }
                }
            }
            Fire::Refused { reason, why } => {
                if let Some(e) = self.open.as_mut().filter(|e| e.outcome.is_none()) {
                    e.outcome = Some(Outcome::Skipped {
                        reason,
                        why: why.clone(),
                    });
                }
                self.last_fire = Some(LastFire {
                    t_ms,
                    capture: Err((reason, why)),
                });
            }
        }
    }

    /// An ended burst: decided if a firing or a capture's window says so, else it waits for a
    /// later capture's history.
    fn ended(&mut self, mut e: Entry, decided: &mut Vec<Entry>) {
        if let Some(Outcome::Skipped { .. }) | None = e.outcome {
            if let Some(w) = self
                .windows
                .iter()
                .rev()
                .find(|w| e.start_ms >= w.from_ms && e.start_ms <= w.to_ms)
            {
                e.outcome = Some(Outcome::InCapture {
                    capture: w.dir.clone(),
                });
            }
        }
        if e.outcome.is_some() {
            self.decide(e, decided);
        } else {
            self.waiting.push_back(e);
        }
    }

    /// Waiting bursts that no capture can hold any more (a capture now reaches back
    /// `history_ms`): skipped, with the reason the triggers were quiet.
    fn expire(&mut self, now_ms: f64, decided: &mut Vec<Entry>) {
        while self
            .waiting
            .front()
            .is_some_and(|e| now_ms - e.start_ms > self.history_ms)
        {
            let Some(mut e) = self.waiting.pop_front() else {
                break;
            };
            e.outcome = Some(self.why_skipped(e.start_ms));
            self.decide(e, decided);
        }
    }

    fn why_skipped(&self, start_ms: f64) -> Outcome {
        let cooling = self
            .last_fire
            .as_ref()
            .filter(|f| start_ms >= f.t_ms && start_ms - f.t_ms < self.cooldown_ms);
        match cooling {
            Some(LastFire {
                t_ms,
                capture: Ok(dir),
            }) => Outcome::Skipped {
                reason: Reason::Cooldown,
                why: format!(
                    "{:.1} s after capture {dir} began (cooldown {:.0} s), after its window; no later capture's history reaches it",
                    (start_ms - t_ms) / 1e3,
                    self.cooldown_ms / 1e3
                ),
            },
            Some(LastFire {
                capture: Err((reason, why)),
                ..
            }) => Outcome::Skipped {
                reason: *reason,
                why: format!("in the cooldown of a firing whose capture was refused: {why}"),
            },
            None => Outcome::Skipped {
                reason: Reason::NoFiring,
                why: "no trigger fired: none had been re-armed (its condition false) since it last fired".into(),
            },
        }
    }

    fn decide(&mut self, e: Entry, decided: &mut Vec<Entry>) {
        if let Some(o) = &e.outcome {
            self.counts.add(o);
        }
        if self.recent.len() >= RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(e.clone());
        decided.push(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic stream at 100 Hz: `active` from the spans (ms), threads_running 10 inside.
    fn run(
        l: &mut Ledger,
        from_ms: f64,
        to_ms: f64,
        spans: &[(f64, f64)],
        fires: &[(f64, Fire)],
    ) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut t = from_ms;
        while t <= to_ms {
            let active = spans.iter().any(|(a, b)| t >= *a && t <= *b);
            let fire = fires
                .iter()
                .find(|(ft, _)| (ft - t).abs() < 1e-6)
                .map(|(_, f)| f.clone());
            out.extend(
                l.step(t, active, Some(if active { 10 } else { 1 }), None, fire)
                    .decided,
            );
            t += 10.0;
        }
        out
    }

    fn cap(dir: &str, t: f64) -> Fire {
        Fire::Captured {
            dir: dir.into(),
            from_ms: t - 30_000.0,
            to_ms: t + 5_000.0,
        }
    }

    #[test]
    fn a_fired_burst_is_captured_and_later_ones_in_the_cooldown_wait_then_skip() {
        // History 30 s, cooldown 30 s; bursts at 1 s (fires), 8 s (in the after window? no:
        // after is 5 s, so 8 s is after it) and 40 s (after the cooldown, not fired: no_firing).
        let mut l = Ledger::new(30_000.0, 30_000.0);
        let spans = [
            (1000.0, 1300.0),
            (3000.0, 3200.0),
            (8000.0, 8300.0),
            (40_000.0, 40_200.0),
        ];
        let mut d = run(&mut l, 0.0, 75_000.0, &spans, &[(1000.0, cap("A", 1000.0))]);
        d.extend(l.finish(75_000.0));
        assert_eq!(d.len(), 4, "{d:?}");
        assert_eq!(
            d[0].outcome,
            Some(Outcome::Captured {
                capture: "A".into()
            })
        );
        assert_eq!(
            d[1].outcome,
            Some(Outcome::InCapture {
                capture: "A".into()
            })
        );
        assert!(matches!(
            d[2].outcome,
            Some(Outcome::Skipped {
                reason: Reason::Cooldown,
                ..
            })
        ));
        assert!(matches!(
            d[3].outcome,
            Some(Outcome::Skipped {
                reason: Reason::NoFiring,
                ..
            })
        ));
        assert_eq!(l.counts.bursts, 4);
        assert_eq!(
            (
                l.counts.captured,
                l.counts.in_capture,
                l.counts.skipped_total()
            ),
            (1, 1, 2)
        );
        assert!(
            (d[0].duration_ms - 300.0).abs() < 11.0,
            "{}",
            d[0].duration_ms
        );
        assert_eq!(d[0].peak_threads_running, 10);
    }

    #[test]
    fn bursts_in_the_cooldown_are_held_by_a_later_captures_history() {
        let mut l = Ledger::new(30_000.0, 30_000.0);
        let spans = [
            (1000.0, 1300.0),
            (12_000.0, 12_300.0),
            (20_000.0, 20_300.0),
            (35_000.0, 35_300.0),
        ];
        let fires = [(1000.0, cap("A", 1000.0)), (35_000.0, cap("B", 35_000.0))];
        let mut d = run(&mut l, 0.0, 36_000.0, &spans, &fires);
        d.extend(l.finish(36_000.0));
        let by_start = |s: f64| d.iter().find(|e| e.start_ms == s).unwrap().outcome.clone();
        assert_eq!(
            by_start(12_000.0),
            Some(Outcome::InCapture {
                capture: "B".into()
            })
        );
        assert_eq!(
            by_start(20_000.0),
            Some(Outcome::InCapture {
                capture: "B".into()
            })
        );
        assert_eq!(
            by_start(35_000.0),
            Some(Outcome::Captured {
                capture: "B".into()
            })
        );
        assert_eq!(l.counts.bursts, 4);
        assert_eq!(l.counts.captured, 2);
    }

    #[test]
    fn a_flickering_burst_counts_once_and_overlapping_firings_keep_the_capture() {
        // One pile-up that dips for 100 ms (under the 0.5 s end) and a second trigger firing
        // during the capture: one burst, captured.
        let mut l = Ledger::new(30_000.0, 30_000.0);
        let spans = [(1000.0, 1400.0), (1500.0, 2000.0)];
        let fires = [
            (1000.0, cap("A", 1000.0)),
            (1600.0, Fire::DuringCapture { dir: "A".into() }),
        ];
        let mut d = run(&mut l, 0.0, 5000.0, &spans, &fires);
        d.extend(l.finish(5000.0));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            d[0].outcome,
            Some(Outcome::Captured {
                capture: "A".into()
            })
        );
        assert!((d[0].duration_ms - 1000.0).abs() < 11.0);
    }

    #[test]
    fn refused_firings_and_their_cooldown_say_why() {
        let mut l = Ledger::new(30_000.0, 30_000.0);
        let spans = [(1000.0, 1300.0), (5000.0, 5300.0)];
        let fires = [(
            1000.0,
            Fire::Refused {
                reason: Reason::MaxCaptures,
                why: "--max-captures 0 is reached".into(),
            },
        )];
        let mut d = run(&mut l, 0.0, 6000.0, &spans, &fires);
        d.extend(l.finish(6000.0));
        assert_eq!(d.len(), 2);
        for e in &d {
            assert!(
                matches!(
                    e.outcome,
                    Some(Outcome::Skipped {
                        reason: Reason::MaxCaptures,
                        ..
                    })
                ),
                "{e:?}"
            );
        }
        assert_eq!(l.counts.skipped.get("max_captures"), Some(&2));
        assert!(
            l.counts.line().contains("2 skipped (2 max_captures)"),
            "{}",
            l.counts.line()
        );
    }

    #[test]
    fn a_burst_going_on_at_the_first_sample_is_marked_and_a_lost_connection_ends_it() {
        let mut l = Ledger::new(30_000.0, 30_000.0);
        let mut d = run(&mut l, 0.0, 500.0, &[(0.0, 500.0)], &[(0.0, cap("A", 0.0))]);
        d.extend(l.session_ended(500.0).decided);
        assert_eq!(d.len(), 1);
        assert!(d[0].at_first_sample);
        // Next connection: a burst that is not at its first sample.
        l.session_started();
        // After capture A's window, in its cooldown: waits for a later capture, then skipped.
        let d2 = run(&mut l, 10_000.0, 12_000.0, &[(10_500.0, 10_700.0)], &[]);
        assert!(d2.is_empty(), "{d2:?}");
        let d3 = l.finish(12_000.0);
        assert_eq!(d3.len(), 1);
        assert!(!d3[0].at_first_sample);
        assert!(matches!(
            d3[0].outcome,
            Some(Outcome::Skipped {
                reason: Reason::Cooldown,
                ..
            })
        ));
        assert_eq!(l.counts.bursts, 2);
    }

    #[test]
    fn memory_stays_bounded_over_many_bursts() {
        let mut l = Ledger::new(1_000.0, 0.0);
        let spans: Vec<(f64, f64)> = (0..600)
            .map(|k| (k as f64 * 1000.0, k as f64 * 1000.0 + 100.0))
            .collect();
        let d = run(&mut l, 0.0, 600_000.0, &spans, &[]);
        assert!(d.len() >= 598);
        assert!(l.recent.len() <= RECENT && l.waiting.len() <= 2);
        assert_eq!(l.counts.bursts as usize, d.len());
    }
}
