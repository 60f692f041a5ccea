//! Durations as scenarios write them: `500us`, `100ms`, `1.5s`, `2m`, `1h`, and
//! combinations such as `1m30s`. A bare number is refused: `60` could mean seconds or
//! milliseconds, so the author must say which.
//!
//! Hand-written because `humantime` refuses fractions (`1.5s`), which load tests use.

use std::time::Duration;

use super::field_errors::DurationError;
use headroom_plan::Think;

/// The longest duration anything takes (a run, a stage, a timeout, a think time): a
/// year. Longer is a typo, and past it the clock arithmetic of a run (start + length)
/// would leave the range of the system clock.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// Parses a duration. The error says what was expected and what was found.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    if s.parse::<f64>().is_ok() {
        return Err(DurationError::BareNumber {
            number: s.to_string(),
        });
    }
    let mut total = 0.0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let unit_len = rest[num_len..]
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len() - num_len);
        let (number, unit) = (&rest[..num_len], rest[num_len..num_len + unit_len].trim());
        let value: f64 = number.parse().map_err(|_| DurationError::Malformed {
            text: text.to_string(),
        })?;
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => {
                return Err(DurationError::UnknownUnit {
                    text: text.to_string(),
                })
            }
        };
        total += value * scale;
        rest = rest[num_len + unit_len..].trim_start();
    }
    match Duration::try_from_secs_f64(total) {
        Ok(d) if d <= MAX_DURATION => Ok(d),
        Ok(_) => Err(too_long(text)),
        // Too large for a Duration, or infinite (a number with hundreds of digits): the
        // parts are never negative, so a sum above zero can only fail by being too long.
        Err(_) if total > 0.0 => Err(too_long(text)),
        Err(_) => Err(DurationError::Malformed {
            text: text.to_string(),
        }),
    }
}

fn too_long(text: &str) -> DurationError {
    DurationError::TooLong {
        text: text.trim().to_string(),
    }
}

/// Parses a think time: a duration (`2s`) or an inclusive range (`1.5s..2.5s`).
pub(crate) fn parse_think(text: &str) -> Result<Think, DurationError> {
    match text.split_once("..") {
        None => Ok(Think::Fixed(parse_duration(text)?)),
        Some((lo, hi)) => {
            let (lo, hi) = (parse_duration(lo)?, parse_duration(hi)?);
            if lo > hi {
                return Err(DurationError::Reversed {
                    text: text.to_string(),
                    low: lo,
                    high: hi,
                });
            }
            Ok(Think::Uniform(lo, hi))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_combinations() {
        let cases = [
            ("500us", Duration::from_micros(500)),
            ("250ns", Duration::from_nanos(250)),
            ("100ms", Duration::from_millis(100)),
            ("1.5s", Duration::from_millis(1500)),
            ("2m", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("1m30s", Duration::from_secs(90)),
            ("1h 2m 3s", Duration::from_secs(3723)),
            (" 10s ", Duration::from_secs(10)),
            ("0s", Duration::ZERO),
        ];
        for (text, want) in cases {
            let got = parse_duration(text).unwrap();
            assert!(
                (got.as_secs_f64() - want.as_secs_f64()).abs() < 1e-9,
                "{text}: {got:?}"
            );
        }
    }

    #[test]
    fn bare_numbers_and_bad_units_are_refused() {
        let err = parse_duration("60").unwrap_err().to_string();
        assert!(
            err.contains("bare number 60") && err.contains("add a unit"),
            "{err}"
        );
        assert!(parse_duration("1.5")
            .unwrap_err()
            .to_string()
            .contains("bare number"));
        for bad in ["10 sec", "s", "5d", "", "1..2s", "-1s"] {
            let err = parse_duration(bad).unwrap_err().to_string();
            assert!(
                err.starts_with("expected a duration with a unit"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn durations_past_a_year_are_refused_not_overflowed() {
        assert_eq!(parse_duration("8760h"), Ok(MAX_DURATION));
        for long in [
            "8760h1ms",
            "99999999999999h",
            "5000000000000000h",
            &format!("{}h", "9".repeat(400)),
        ] {
            let err = parse_duration(long).unwrap_err().to_string();
            assert!(err.contains("at most 365 days"), "{long}: {err}");
        }
        assert!(parse_think("1s..99999999999999h").is_err());
    }

    #[test]
    fn think_fixed_and_ranges() {
        assert_eq!(
            parse_think("2s").unwrap(),
            Think::Fixed(Duration::from_secs(2))
        );
        assert_eq!(
            parse_think("1.5s..2.5s").unwrap(),
            Think::Uniform(Duration::from_millis(1500), Duration::from_millis(2500))
        );
        assert_eq!(
            parse_think("1s..1s").unwrap(),
            Think::Uniform(Duration::from_secs(1), Duration::from_secs(1))
        );
        let err = parse_think("3s..1s").unwrap_err().to_string();
        assert!(err.contains("low <= high"), "{err}");
        assert!(parse_think("1s..").is_err());
    }
}
