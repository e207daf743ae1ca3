//! The SQL sampler's back-off: never be the load on a struggling server, never go blind
//! during someone else's burst. Pure. (The /proc series of a local server costs the server
//! nothing and never backs off.)
//!
//! After each round the median round trip of the sampling query is compared with the usual one
//! (the lowest seen, allowed to drift up 1% a round). Ten times the usual and over 1 ms means
//! the server is slow; the rate halves (down to 1 Hz) only when watch's own statements are
//! the load ([`Load::Ours`]): on a local server, the server thread serving watch's session
//! used at least [`OWN_SHARE`] of the server process's CPU over the round (both from /proc);
//! where that cannot be read (remote servers), no other session was running at any of the
//! round's reads (Threads_running, own session excluded, at most 1). A slow round during other
//! sessions' work ([`Load::Others`]) keeps the rate: that is the burst watch is there to see.
//! Three rounds in a row under three times the usual double the rate again, up to the target.

/// The share of the server's CPU over a round above which watch's own session is the load.
pub const OWN_SHARE: f64 = 0.5;

/// Who the server was busy with during a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Watch's own statements: back off when the round trip climbs.
    Ours,
    /// Other sessions: keep the rate.
    Others,
}

impl Load {
    /// From the round's CPU of watch's session and of the whole server (ns; local servers;
    /// `tick_ns` is the resolution of the server's figure), else from the highest
    /// Threads_running of the round's reads (own session excluded).
    pub fn judge(
        session_cpu_ns: Option<u64>,
        server_cpu_ns: Option<u64>,
        tick_ns: u64,
        max_others_running: u64,
    ) -> Load {
        match (session_cpu_ns, server_cpu_ns) {
            (Some(own), Some(all)) => {
                // /proc's process CPU comes in clock ticks: never below the session's part,
                // nor below one tick (a session using under half a tick in a round is not a
                // load, whatever slowed its round trip: a host starved by other processes).
                let all = all.max(own).max(tick_ns);
                if own as f64 >= OWN_SHARE * all as f64 {
                    Load::Ours
                } else {
                    Load::Others
                }
            }
            _ if max_others_running <= 1 => Load::Ours,
            _ => Load::Others,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Lowered {
        hz: f64,
        rtt_us: f64,
        usual_us: f64,
    },
    Raised {
        hz: f64,
        rtt_us: f64,
        back_to_target: bool,
    },
}

#[derive(Debug, Clone)]
pub struct RateControl {
    pub target_hz: f64,
    pub hz: f64,
    usual_us: Option<f64>,
    calm_rounds: u32,
}

impl RateControl {
    pub fn new(target_hz: f64) -> RateControl {
        RateControl {
            target_hz,
            hz: target_hz,
            usual_us: None,
            calm_rounds: 0,
        }
    }

    /// A new connection: the usual round trip is learnt again.
    pub fn reset(&mut self) {
        self.usual_us = None;
        self.calm_rounds = 0;
    }

    /// Feed one round's median round trip and who the server was busy with; returns a change
    /// of rate when there is one.
    pub fn observe(&mut self, rtt_us: f64, load: Load) -> Option<Change> {
        if !(rtt_us.is_finite() && rtt_us > 0.0) {
            return None;
        }
        let usual = match self.usual_us {
            None => {
                self.usual_us = Some(rtt_us);
                return None;
            }
            Some(u) => u,
        };
        if rtt_us > 10.0 * usual && rtt_us > 1000.0 {
            self.calm_rounds = 0;
            if load == Load::Others {
                return None;
            }
            if self.hz > 1.0 {
                self.hz = (self.hz / 2.0).max(1.0);
                return Some(Change::Lowered {
                    hz: self.hz,
                    rtt_us,
                    usual_us: usual,
                });
            }
            return None;
        }
        self.usual_us = Some((usual * 1.01).min(rtt_us));
        if rtt_us < 3.0 * usual {
            self.calm_rounds += 1;
            if self.hz < self.target_hz && self.calm_rounds >= 3 {
                self.calm_rounds = 0;
                self.hz = (self.hz * 2.0).min(self.target_hz);
                return Some(Change::Raised {
                    hz: self.hz,
                    rtt_us,
                    back_to_target: self.hz >= self.target_hz,
                });
            }
        } else {
            self.calm_rounds = 0;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backs_off_when_the_round_trip_climbs_and_returns() {
        let mut r = RateControl::new(100.0);
        let o = Load::Ours;
        for _ in 0..5 {
            assert_eq!(r.observe(200.0, o), None);
        }
        assert!(matches!(r.observe(5000.0, o), Some(Change::Lowered { hz, .. }) if hz == 50.0));
        assert!(matches!(r.observe(8000.0, o), Some(Change::Lowered { hz, .. }) if hz == 25.0));
        // A slow round that is not 10x the usual does not lower it further.
        assert_eq!(r.observe(1500.0, o), None);
        let mut changes = vec![];
        for _ in 0..12 {
            if let Some(c) = r.observe(210.0, o) {
                changes.push(c);
            }
        }
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert!(
            matches!(changes[1], Change::Raised { hz, back_to_target: true, .. } if hz == 100.0)
        );
        assert_eq!(r.hz, 100.0);
    }

    #[test]
    fn a_slow_network_alone_is_not_saturation() {
        let mut r = RateControl::new(100.0);
        r.observe(100.0, Load::Ours);
        // 10x but under 1 ms: a LAN hiccup, not a saturated server.
        assert_eq!(r.observe(900.0, Load::Ours), None);
        assert_eq!(r.hz, 100.0);
    }

    #[test]
    fn others_bursts_never_lower_the_rate() {
        let mut r = RateControl::new(10.0);
        for _ in 0..5 {
            r.observe(200.0, Load::Others);
        }
        for _ in 0..20 {
            assert_eq!(r.observe(50_000.0, Load::Others), None);
        }
        assert_eq!(r.hz, 10.0);
        // The usual round trip is not dragged up by the burst's rounds.
        assert!(matches!(
            r.observe(5000.0, Load::Ours),
            Some(Change::Lowered { .. })
        ));
    }

    #[test]
    fn who_the_load_is() {
        let tick = 10_000_000;
        // Local: the session's CPU against the server's.
        let j = |own, all, others| Load::judge(own, all, tick, others);
        assert_eq!(j(Some(2_000_000), Some(150_000_000), 0), Load::Others);
        assert_eq!(j(Some(6_000_000), Some(10_000_000), 30), Load::Ours);
        // /proc's ticks said 0: a session using 8 ms of a round is the load, 1 ms is not (the
        // host starved everything).
        assert_eq!(j(Some(8_000_000), Some(0), 30), Load::Ours);
        assert_eq!(j(Some(1_000_000), Some(0), 0), Load::Others);
        // Remote: other sessions running at a read.
        assert_eq!(j(None, None, 31), Load::Others);
        assert_eq!(j(None, None, 1), Load::Ours);
        assert_eq!(j(Some(5), None, 0), Load::Ours);
    }
}
