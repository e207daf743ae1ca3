//! Whether a measured step can be trusted (docs/REFERENCE.md §9, Method). A step is invalid
//! when its errors exceed 1% of its transactions, when the server restarted during it (its
//! `Uptime` advanced less than the wall clock, or went down), or when a variable the variant set
//! read differently at the end of the step (someone, or a restart, changed it under the load).
//! Invalid steps are kept in the table, JSON, CSV and charts with their reason, and left out of
//! the knee, the USL fit, Little's law and the A/B verdicts.

/// Errors above this share of the step's transactions make it invalid.
pub const MAX_ERROR_SHARE: f64 = 0.01;

/// Seconds of slack when comparing the server's `Uptime` (whole seconds) with the wall clock.
pub const UPTIME_SLACK_S: f64 = 2.0;

/// What the sweep observed around one step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepHealth {
    /// Transactions completed in the measured window.
    pub txns: u64,
    /// Failed transactions in the measured window.
    pub errors: u64,
    pub first_error: Option<String>,
    /// The server's `Uptime` before and after the step, and the wall-clock seconds between the
    /// two reads (None when not read).
    pub uptime: Option<(u64, u64, f64)>,
    /// Ids of fresh connections opened before and after the step (they only grow while the
    /// server runs; smaller after means it restarted).
    pub conn_ids: Option<(u64, u64)>,
    /// The server could not be asked after the step (the reason).
    pub unreadable: Option<String>,
    /// (variable, value the variant set, value read after the step).
    pub settings: Vec<(String, String, String)>,
}

/// Two server values equal as numbers, or as case-insensitive text.
pub fn same_value(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim().trim_matches('\''), b.trim().trim_matches('\''));
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.eq_ignore_ascii_case(b),
    }
}

/// Whether the server restarted between two `Uptime` reads `wall_s` seconds apart.
pub fn restarted(before: u64, after: u64, wall_s: f64) -> bool {
    after < before || (after as f64) + UPTIME_SLACK_S < before as f64 + wall_s
}

/// The reasons a step is invalid, joined by "; " (None: the step is valid).
pub fn invalid_reason(h: &StepHealth) -> Option<String> {
    let mut why = Vec::new();
    if h.txns == 0 && h.errors > 0 {
        why.push(format!(
            "every transaction failed ({} errors{})",
            h.errors,
            h.first_error
                .as_deref()
                .map(|e| format!("; first: {e}"))
                .unwrap_or_default()
        ));
    } else if h.txns == 0 {
        why.push("no transaction completed".to_string());
    } else if h.errors as f64 > MAX_ERROR_SHARE * h.txns as f64 {
        why.push(format!(
            "errors {} are {:.1}% of {} transactions (over {}%)",
            h.errors,
            h.errors as f64 / h.txns as f64 * 100.0,
            h.txns,
            MAX_ERROR_SHARE * 100.0
        ));
    }
    let ids_back = h.conn_ids.is_some_and(|(b, a)| a < b);
    if let Some((b, a, wall)) = h.uptime {
        if restarted(b, a, wall) || ids_back {
            why.push(format!(
                "the server restarted during the step (Uptime {b} s before, {a} s after, {wall:.0} s apart{})",
                if ids_back { "; connection ids started again" } else { "" }
            ));
        }
    } else if ids_back {
        why.push("the server restarted during the step (connection ids started again)".into());
    }
    if let Some(u) = &h.unreadable {
        why.push(format!(
            "the server could not be checked after the step ({u})"
        ));
    }
    for (var, set, now) in &h.settings {
        if !same_value(set, now) {
            why.push(format!(
                "{var} read {now} at the end of the step, not {set} as the variant set it"
            ));
        }
    }
    if why.is_empty() {
        None
    } else {
        Some(why.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> StepHealth {
        StepHealth {
            txns: 1000,
            errors: 10,
            uptime: Some((100, 112, 11.5)),
            settings: vec![("innodb_spin_wait_delay".into(), "4".into(), "4".into())],
            ..Default::default()
        }
    }

    #[test]
    fn a_clean_step_is_valid() {
        assert_eq!(invalid_reason(&ok()), None);
    }

    #[test]
    fn each_reason_is_named() {
        let mut h = ok();
        h.errors = 11;
        assert!(invalid_reason(&h).unwrap().contains("1.1% of 1000"));
        let mut h = ok();
        h.txns = 0;
        h.errors = 15037;
        h.first_error = Some("ERROR 1243: Unknown prepared statement handler".into());
        let r = invalid_reason(&h).unwrap();
        assert!(
            r.starts_with("every transaction failed") && r.contains("1243"),
            "{r}"
        );
        let mut h = ok();
        h.uptime = Some((5000, 3, 10.0));
        assert!(invalid_reason(&h).unwrap().contains("restarted"));
        // A restart soon after a young server started: Uptime still grew, but less than time.
        let mut h = ok();
        h.uptime = Some((5, 9, 10.0));
        assert!(invalid_reason(&h).unwrap().contains("restarted"));
        // A young server restarted within a second: Uptime cannot tell, connection ids can.
        let mut h = ok();
        h.uptime = Some((0, 5, 6.0));
        assert_eq!(invalid_reason(&h), None);
        h.conn_ids = Some((14, 5));
        assert!(invalid_reason(&h)
            .unwrap()
            .contains("connection ids started again"));
        h.conn_ids = Some((14, 25));
        assert_eq!(invalid_reason(&h), None);
        let mut h = ok();
        h.settings[0].2 = "6000".into();
        let r = invalid_reason(&h).unwrap();
        assert!(r.contains("innodb_spin_wait_delay read 6000"), "{r}");
        let mut h = ok();
        h.txns = 0;
        h.errors = 0;
        assert_eq!(invalid_reason(&h).unwrap(), "no transaction completed");
    }

    #[test]
    fn values_compare_as_the_server_prints_them() {
        assert!(same_value("4", "4.0"));
        assert!(same_value("ON", "'on'"));
        assert!(!same_value("4", "6000"));
    }
}
