//! The sampler's back-off: never add load to a struggling server. Pure.
//!
//! After each round the median round trip of the sampling query is compared with the usual one
//! (the lowest seen, allowed to drift up 1% a round). Ten times the usual and over 1 ms means
//! the server is saturated: the rate halves (down to 1 Hz). Three rounds in a row under three
//! times the usual double it again, up to the target.

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

    /// Feed one round's median round trip; returns a change of rate when there is one.
    pub fn observe(&mut self, rtt_us: f64) -> Option<Change> {
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
        for _ in 0..5 {
            assert_eq!(r.observe(200.0), None);
        }
        assert!(matches!(r.observe(5000.0), Some(Change::Lowered { hz, .. }) if hz == 50.0));
        assert!(matches!(r.observe(8000.0), Some(Change::Lowered { hz, .. }) if hz == 25.0));
        // A slow round that is not 10x the usual does not lower it further.
        assert_eq!(r.observe(1500.0), None);
        let mut changes = vec![];
        for _ in 0..12 {
            if let Some(c) = r.observe(210.0) {
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
        r.observe(100.0);
        // 10x but under 1 ms: a LAN hiccup, not a saturated server.
        assert_eq!(r.observe(900.0), None);
        assert_eq!(r.hz, 100.0);
    }
}
