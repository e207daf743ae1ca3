//! Numbers, durations and tables for humans: the formatters every layer prints with (pure; the
//! model, analysis, engines and renderers all use them, so they sit below all of them).

/// Format a float with a sensible number of significant digits for humans; a whole number
/// (a setting, a thread or core count) prints as an integer, never as "4.000".
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if x.fract() == 0.0 || a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Format a count: whole numbers without decimals, others as fmt_num.
pub fn fmt_count(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        fmt_num(x)
    }
}

/// Format a duration given in nanoseconds with a unit a human reads at once.
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        "-".into()
    } else if ns >= 1e9 {
        format!("{} s", fmt_num(ns / 1e9))
    } else if ns >= 1e6 {
        format!("{} ms", fmt_num(ns / 1e6))
    } else if ns >= 1e3 {
        format!("{} us", fmt_num(ns / 1e3))
    } else {
        format!("{} ns", fmt_num(ns))
    }
}

/// "8 min 40 s", "18 s", "1 h 05 min": a rounded length of time for people.
pub fn human(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 if s % 60 == 0 => format!("{} min", s / 60),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// A plain, borderless table for terminals and pipes alike.
pub fn table(header: &[&str]) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::NOTHING);
    t.set_header(header.iter().map(comfy_table::Cell::new));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_print_as_integers() {
        assert_eq!(fmt_num(4.0), "4");
        assert_eq!(fmt_num(30.0), "30");
        assert_eq!(fmt_num(-2.0), "-2");
        assert_eq!(fmt_num(6000.0), "6000");
        assert_eq!(fmt_count(16.0), "16");
    }

    #[test]
    fn fractions_keep_about_four_significant_digits() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(2.5), "2.500");
        assert_eq!(fmt_num(27.27), "27.27");
        assert_eq!(fmt_num(118.008), "118.0");
        assert_eq!(fmt_num(1234.56), "1235");
        assert_eq!(fmt_num(f64::NAN), "-");
        assert_eq!(fmt_ns(27_270.0), "27.27 us");
        assert_eq!(fmt_ns(2_000_000.0), "2 ms");
    }

    #[test]
    fn lengths_of_time_read_like_speech() {
        assert_eq!(human(0.4), "0 s");
        assert_eq!(human(18.2), "18 s");
        assert_eq!(human(120.0), "2 min");
        assert_eq!(human(520.0), "8 min 40 s");
        assert_eq!(human(3900.0), "1 h 05 min");
    }
}
