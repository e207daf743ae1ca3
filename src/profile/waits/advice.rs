//! Which way the spin settings should move (pure), from one site's spin CPU and sleeps, and
//! for the whole server from its sites.
//!
//! The trade: a spin burns CPU to avoid a sleep; a sleep costs a wake-up (the futex calls and
//! two context switches: [`WAKE_CPU_US`] of CPU, and the scheduler's delay before the thread
//! runs again). Where spinning burns many times the CPU that the sleeps it still fails to
//! avoid would cost, spinning less loses little (less spinning). Where threads sleep often,
//! briefly, and spin little, a slightly longer spin would have caught most of those sleeps
//! (more spinning). Between the two, keep.

use serde::{Deserialize, Serialize};

/// CPU a sleep costs beyond the spin it replaces (futex wait and wake system calls and two
/// context switches), in microseconds: an estimate, about three times what `perf bench sched
/// pipe` measures for a round trip of two switches on the 2-vCPU guest (3.6 us,
/// docs/PERFORMANCE.md), as a latch wake-up also pays the futex hash and the waker's call.
pub const WAKE_CPU_US: f64 = 10.0;
/// Spinning that burns less than this share of one CPU is not worth cutting.
pub const MIN_SPIN_CPU: f64 = 0.05;
/// Spinning burns more than this many times the wake-ups' CPU: spin less.
pub const LESS_RATIO: f64 = 10.0;
/// Spinning burns less than the wake-ups' CPU ...
pub const MORE_RATIO: f64 = 1.0;
/// ... and there are at least this many sleeps a second ...
pub const MORE_SLEEPS_PER_S: f64 = 100.0;
/// ... whose median is at most this long (a spin of that length is within a few rounds'
/// reach): spin more.
pub const SHORT_SLEEP_US: f64 = 500.0;
/// Fewer spin samples plus sleeps than this at a site: too little to say.
pub const MIN_EVENTS: u64 = 10;

/// Which way to move spinning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Less,
    More,
    Keep,
    Unclear,
}

impl Direction {
    pub fn word(self) -> &'static str {
        match self {
            Direction::Less => "spin less",
            Direction::More => "spin more",
            Direction::Keep => "keep",
            Direction::Unclear => "too little data",
        }
    }
}

/// The figures advice is made from.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    pub spin_samples: u64,
    /// CPU seconds per second spent spinning.
    pub spin_cpu: f64,
    pub sleeps: u64,
    pub sleeps_per_s: f64,
    pub sleep_p50_us: Option<f64>,
}

/// Advice with its reason, numbers included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    pub direction: Direction,
    /// CPU spent spinning over the CPU the sleeps' wake-ups cost (null without sleeps).
    pub spin_to_wake_ratio: Option<f64>,
    pub reason: String,
}

fn wake_cpu(sleeps_per_s: f64) -> f64 {
    sleeps_per_s * WAKE_CPU_US * 1e-6
}

/// The advice for one site (or for the whole server's figures).
pub fn advise(f: &Figures) -> Advice {
    let wake = wake_cpu(f.sleeps_per_s);
    let ratio = (wake > 0.0).then(|| f.spin_cpu / wake);
    let p50 = f.sleep_p50_us.map_or("no sleeps".to_string(), |p| {
        format!("median sleep {p:.0} us")
    });
    let nums = format!(
        "spinning burns {:.3} CPU-s/s; {:.0} sleeps/s ({p50}) cost about {:.4} CPU-s/s in \
         wake-ups at {WAKE_CPU_US:.0} us each",
        f.spin_cpu, f.sleeps_per_s, wake
    );
    let (direction, why) = if f.spin_samples + f.sleeps < MIN_EVENTS {
        (
            Direction::Unclear,
            format!(
                "only {} spin samples and {} sleeps: record longer",
                f.spin_samples, f.sleeps
            ),
        )
    } else if f.spin_cpu >= MIN_SPIN_CPU && ratio.is_none_or(|r| r > LESS_RATIO) {
        (
            Direction::Less,
            format!(
                "{nums}: the spin costs {} the sleeps it fails to avoid, so shorter spins \
                 lose little",
                ratio.map_or("CPU while no thread sleeps at all, more than".into(), |r| {
                    format!("{r:.0}x")
                })
            ),
        )
    } else if ratio.is_some_and(|r| r < MORE_RATIO)
        && f.sleeps_per_s >= MORE_SLEEPS_PER_S
        && f.sleep_p50_us.is_some_and(|p| p <= SHORT_SLEEP_US)
    {
        (
            Direction::More,
            format!(
                "{nums}: many short sleeps, each a wake-up, where spinning costs less than \
                 they do; a slightly longer spin would catch most of them"
            ),
        )
    } else {
        (Direction::Keep, format!("{nums}: neither side dominates"))
    };
    Advice {
        direction,
        spin_to_wake_ratio: ratio,
        reason: why,
    }
}

/// What to do with each setting, for the overall direction.
pub fn settings_for(direction: Direction) -> Vec<(String, String)> {
    let v: &[(&str, &str)] = match direction {
        Direction::Less => &[
            (
                "innodb_spin_wait_delay",
                "lower: each spin round is shorter (see `spinscope spin` for its time on this \
                 CPU)",
            ),
            (
                "innodb_sync_spin_loops",
                "lower, or keep if the delay alone brings the spin down: fewer rounds before \
                 sleeping",
            ),
        ],
        Direction::More => &[
            (
                "innodb_sync_spin_loops",
                "raise (toward its default 30 if it is below): more rounds before sleeping",
            ),
            (
                "innodb_spin_wait_delay",
                "raise slightly if it is below its default (4): each round is longer",
            ),
        ],
        Direction::Keep | Direction::Unclear => &[],
    };
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// One step of the spin settings in `d`'s direction, within the legal range: (variable, from,
/// to). doctor's spin-budget finding gives it, tune races it.
/// Less halves the delay (then the rounds); more brings the rounds, then the delay, up to
/// their defaults, then doubles the rounds. None at the end of the range.
pub fn step(
    info: &crate::spin::model::FamilyInfo,
    s: &crate::spin::model::Settings,
    d: Direction,
) -> Option<(&'static str, u64, u64)> {
    let (delay, loops) = (s.spin_wait_delay, s.sync_spin_loops);
    match d {
        Direction::Less => {
            let dmin = info.delay.min.max(1);
            let lmin = info.loops.min.max(1);
            if delay > dmin {
                Some((info.delay.name, delay, (delay / 2).max(dmin)))
            } else if loops > lmin {
                Some((info.loops.name, loops, (loops / 2).max(lmin)))
            } else {
                None
            }
        }
        Direction::More => {
            if loops < info.loops.default {
                Some((info.loops.name, loops, info.loops.default))
            } else if delay < info.delay.default {
                Some((info.delay.name, delay, info.delay.default))
            } else {
                let to = loops.saturating_mul(2).max(1).min(info.loops.max);
                (to > loops).then_some((info.loops.name, loops, to))
            }
        }
        Direction::Keep | Direction::Unclear => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(spin_cpu: f64, sleeps_per_s: f64, p50: Option<f64>) -> Figures {
        Figures {
            spin_samples: 100,
            spin_cpu,
            sleeps: (sleeps_per_s * 5.0) as u64,
            sleeps_per_s,
            sleep_p50_us: p50,
        }
    }

    #[test]
    fn burning_spin_with_rare_sleeps_says_less() {
        // Half a CPU spinning, 25 sleeps/s: 0.00025 CPU-s/s of wake-ups, 2000x less.
        let a = advise(&fig(0.5, 25.0, Some(900.0)));
        assert_eq!(a.direction, Direction::Less, "{a:?}");
        assert!(
            a.reason.contains("0.500 CPU-s/s") && a.reason.contains("2000x"),
            "{}",
            a.reason
        );
        assert_eq!(advise(&fig(0.5, 0.0, None)).direction, Direction::Less);
    }

    #[test]
    fn many_short_sleeps_and_little_spin_say_more() {
        let a = advise(&fig(0.01, 5000.0, Some(40.0)));
        assert_eq!(a.direction, Direction::More, "{a:?}");
        assert!(a.reason.contains("5000 sleeps/s"), "{}", a.reason);
    }

    #[test]
    fn long_sleeps_or_balance_say_keep() {
        // Many sleeps, but long: a spin would not reach them.
        assert_eq!(
            advise(&fig(0.01, 5000.0, Some(5000.0))).direction,
            Direction::Keep
        );
        // Spin and wake-ups of the same order.
        assert_eq!(
            advise(&fig(0.06, 1000.0, Some(50.0))).direction,
            Direction::Keep
        );
        // Too little spin to cut, too few sleeps to add.
        assert_eq!(
            advise(&fig(0.01, 10.0, Some(50.0))).direction,
            Direction::Keep
        );
    }

    #[test]
    fn too_few_events_are_unclear() {
        let f = Figures {
            spin_samples: 3,
            spin_cpu: 0.9,
            sleeps: 2,
            sleeps_per_s: 0.4,
            sleep_p50_us: Some(10.0),
        };
        assert_eq!(advise(&f).direction, Direction::Unclear);
    }

    #[test]
    fn opposite_directions_name_the_settings_in_opposite_ways() {
        let less = settings_for(Direction::Less);
        let more = settings_for(Direction::More);
        assert!(less.iter().all(|(_, w)| w.starts_with("lower")));
        assert!(more.iter().all(|(_, w)| w.starts_with("raise")));
        assert!(settings_for(Direction::Keep).is_empty());
    }
}
