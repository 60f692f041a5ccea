//! Human units for figures in text output: latencies in µs, ms or s with three
//! significant digits, durations as `5s` or `1m05s`, rates, percentages. Every
//! formatter prints `-` for a value that is not a finite, non-negative number, so a
//! broken figure shows as missing rather than as a plausible number.

use std::time::Duration;

const MISSING: &str = "-";

/// Formats a latency given in milliseconds: µs below 1 ms, ms below 1 s, s above, with
/// three significant digits (`450µs`, `1.50ms`, `12.3ms`, `2.05s`).
pub fn latency(ms: f64) -> String {
    if !(ms.is_finite() && ms >= 0.0) {
        return MISSING.to_string();
    }
    if ms == 0.0 {
        return "0µs".to_string();
    }
    // Round before choosing the unit so that 999.96µs reads `1.00ms`, not `1000µs`.
    let (us, us_text) = significant(ms * 1000.0);
    if us < 1000.0 {
        return format!("{us_text}µs");
    }
    let (ms, ms_text) = significant(ms);
    if ms < 1000.0 {
        return format!("{ms_text}ms");
    }
    format!("{}s", significant(ms / 1000.0).1)
}

/// Rounds to three significant digits (no fewer than 0 and no more than 2 decimals);
/// returns the rounded value and its text.
fn significant(v: f64) -> (f64, String) {
    let decimals = if v < 10.0 {
        2
    } else if v < 100.0 {
        1
    } else {
        0
    };
    let text = format!("{v:.decimals$}");
    (text.parse().unwrap_or(v), text)
}

/// Formats a whole-second duration: `5s`, `1m05s`, `1h02m03s` (sub-second parts are
/// dropped).
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

/// Formats a measured duration in seconds: one decimal under a minute (`9.9s`), whole
/// seconds above (`1m05s`).
pub fn seconds(s: f64) -> String {
    if !(s.is_finite() && s >= 0.0) {
        MISSING.to_string()
    } else if s < 60.0 {
        format!("{s:.1}s")
    } else {
        clock(Duration::from_secs_f64(s))
    }
}

/// Formats a rate in requests per second with one decimal: `1999.6/s`.
pub fn per_second(rate: f64) -> String {
    if !(rate.is_finite() && rate >= 0.0) {
        return MISSING.to_string();
    }
    format!("{rate:.1}/s")
}

/// Formats a value that is already a percentage with two decimals: `0.06%`.
pub fn percent(p: f64) -> String {
    if !(p.is_finite() && p >= 0.0) {
        return MISSING.to_string();
    }
    format!("{p:.2}%")
}

/// `part` as a percentage of `whole`, 0 when `whole` is 0.
pub fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_picks_the_unit_and_three_significant_digits() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0µs"),
            (0.0005, "0.50µs"),
            (0.0123, "12.3µs"),
            (0.45, "450µs"),
            (0.99996, "1.00ms"),
            (1.5, "1.50ms"),
            (12.34, "12.3ms"),
            (123.4, "123ms"),
            (999.7, "1.00s"),
            (2049.0, "2.05s"),
            (75_000.0, "75.0s"),
            (f64::NAN, "-"),
            (-1.0, "-"),
            (f64::INFINITY, "-"),
        ];
        for &(ms, want) in cases {
            assert_eq!(latency(ms), want, "{ms}");
        }
    }

    #[test]
    fn durations_rates_and_percentages() {
        assert_eq!(clock(Duration::from_millis(5_900)), "5s");
        assert_eq!(clock(Duration::from_secs(65)), "1m05s");
        assert_eq!(clock(Duration::from_secs(3723)), "1h02m03s");
        assert_eq!(seconds(9.94), "9.9s");
        assert_eq!(seconds(125.0), "2m05s");
        assert_eq!(seconds(f64::NAN), "-");
        assert_eq!(per_second(1999.64), "1999.6/s");
        assert_eq!(per_second(f64::NAN), "-");
        assert_eq!(percent(0.5), "0.50%");
        assert_eq!(share(1, 3), 100.0 / 3.0);
        assert_eq!(share(5, 0), 0.0);
    }
}
