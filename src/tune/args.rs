//! Parsers of `tune`'s own values (pure): the budget (`10m`, `90s`, `1h`, `600`) and the p99
//! limit (`10%`, `10`).

use std::time::Duration;

/// `--budget`: seconds, or a number with `s`, `m` or `h`; from 10 s to 24 h.
pub fn parse_budget(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("--budget {s}: not a duration; use e.g. 90s, 10m or 1h"))?;
    let secs = v * mult;
    if !(secs.is_finite() && (10.0..=86_400.0).contains(&secs)) {
        return Err(format!("--budget {s}: use 10s to 24h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `--max-p99-increase`: percent, with or without `%`; 0 to 1000.
pub fn parse_pct(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "--max-p99-increase {s}: use a percentage from 0% to 1000%, e.g. 10%"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn budgets_and_percentages() {
        assert_eq!(parse_budget("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_budget("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_budget("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_budget("600").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_budget("1.5m").unwrap(), Duration::from_secs(90));
        for bad in ["", "5s", "ten", "-1m", "25h", "m", "NaNs"] {
            assert!(parse_budget(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_pct("10%").unwrap(), 10.0);
        assert_eq!(parse_pct(" 2.5 ").unwrap(), 2.5);
        for bad in ["", "%", "-1%", "x", "2000%"] {
            assert!(parse_pct(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in "\\PC{0,12}") {
            let _ = parse_budget(&s);
            let _ = parse_pct(&s);
        }
    }
}
